# shellcheck shell=bash
# The job table of the lease tests (210, 212, 215, 216, 218,
# tests/cluster), for a queue in lease mode: the lease's token and end,
# tries counted by the lease's claim, and done_count, which counts each
# row's `done`, so that a row done twice shows up as 2.
#
#   lease_job_table [NAME]  prints its CREATE TABLE, for the test's own
#                           client; NAME is job unless given
#   lease_server DB         (after servers.sh) starts server r, which a
#                           test can stop and restart, with database DB,
#                           its socket in SOCK; q SQL runs statements in
#                           DB, q1 SQL prints the one value of a query;
#                           then works in ROWQ_TEST_TMP
lease_job_table()
{
	cat <<SQL
CREATE TABLE ${1:-job} (
    id BIGINT NOT NULL PRIMARY KEY,
    status ENUM('waiting', 'done', 'failed') NOT NULL DEFAULT 'waiting',
    lease CHAR(32) NULL,
    leased_until BIGINT NOT NULL DEFAULT 0,
    attempts INT NOT NULL DEFAULT 0,
    done_count INT NOT NULL DEFAULT 0,
    last_error TEXT NULL,
    INDEX (status, id)
) ENGINE=InnoDB
SQL
}

lease_server()
{
	LEASE_DB=$1
	server_start r
	# shellcheck disable=SC2034 # the tests' configurations use it
	SOCK=$(server_sock r)
	server_sql r "CREATE DATABASE $LEASE_DB"
	q() { server_sql r "$1" "$LEASE_DB"; }
	q1() { one_value "$(q "$1")" "$1"; }
	cd "$ROWQ_TEST_TMP" || fail "cannot work in $ROWQ_TEST_TMP"
}
