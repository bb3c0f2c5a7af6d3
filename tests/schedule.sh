# shellcheck shell=bash
# For the schedule tests, sourced after lib.sh:
#
#     schedule_table     # rowq_schedule, made as an administrator would
#
# schedule_table: the schedule table in $ROWQ_TEST_DB, with the DDL of
# rowq.yaml(5) SCHEDULES, so that a test can set a schedule's last slot
# before a daemon runs.
schedule_table()
{
	sql "CREATE TABLE rowq_schedule (
	  name VARCHAR(191) NOT NULL PRIMARY KEY,
	  last_slot BIGINT NOT NULL,
	  last_inserted BIGINT NULL,
	  skipped BIGINT UNSIGNED NOT NULL DEFAULT 0
	) ENGINE=InnoDB"
}
