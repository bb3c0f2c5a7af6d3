# shellcheck shell=bash
# The job table of the lease tests (210, 212, 215, 216, tests/cluster),
# for a queue in lease mode: the lease's token and end, tries counted by
# the lease's claim, and done_count, which counts each row's `done`, so
# that a row done twice shows up as 2.
#
#   lease_job_table [NAME]  prints its CREATE TABLE, for the test's own
#                           client; NAME is job unless given
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
