-- Rails' Solid Queue on MySQL, from the schema its installer ships
-- (lib/generators/solid_queue/install/templates/db/queue_schema.rb,
-- rails/solid_queue, last changed by commit eeb0d47471723ec6e093bc9e7e001839258fca4e,
-- read at 29e818d9c1181195736ffc5d7c1d1c03757b7752), as Rails' MySQL adapter
-- creates it: each create_table's bigint id, t.string as varchar(255),
-- t.datetime as datetime(6), its indexes by their names in the CREATE,
-- and each add_foreign_key as fk_rails_ and the first 10 hex digits of
-- SHA-256("TABLE_job_id_fk").  A job is a row of solid_queue_jobs, and its
-- state the one execution row it has: ready, claimed (by a process),
-- failed, scheduled or blocked; a finished job has finished_at and none.
CREATE TABLE IF NOT EXISTS solid_queue_blocked_executions (
  id bigint NOT NULL AUTO_INCREMENT PRIMARY KEY,
  job_id bigint NOT NULL,
  queue_name varchar(255) NOT NULL,
  priority int DEFAULT 0 NOT NULL,
  concurrency_key varchar(255) NOT NULL,
  expires_at datetime(6) NOT NULL,
  created_at datetime(6) NOT NULL,
  INDEX index_solid_queue_blocked_executions_for_release (concurrency_key, priority, job_id),
  INDEX index_solid_queue_blocked_executions_for_maintenance (expires_at, concurrency_key),
  UNIQUE INDEX index_solid_queue_blocked_executions_on_job_id (job_id)
) ENGINE=InnoDB;
CREATE TABLE IF NOT EXISTS solid_queue_claimed_executions (
  id bigint NOT NULL AUTO_INCREMENT PRIMARY KEY,
  job_id bigint NOT NULL,
  process_id bigint,
  created_at datetime(6) NOT NULL,
  UNIQUE INDEX index_solid_queue_claimed_executions_on_job_id (job_id),
  INDEX index_solid_queue_claimed_executions_on_process_id_and_job_id (process_id, job_id)
) ENGINE=InnoDB;
CREATE TABLE IF NOT EXISTS solid_queue_failed_executions (
  id bigint NOT NULL AUTO_INCREMENT PRIMARY KEY,
  job_id bigint NOT NULL,
  error text,
  created_at datetime(6) NOT NULL,
  UNIQUE INDEX index_solid_queue_failed_executions_on_job_id (job_id)
) ENGINE=InnoDB;
CREATE TABLE IF NOT EXISTS solid_queue_jobs (
  id bigint NOT NULL AUTO_INCREMENT PRIMARY KEY,
  queue_name varchar(255) NOT NULL,
  class_name varchar(255) NOT NULL,
  arguments text,
  priority int DEFAULT 0 NOT NULL,
  active_job_id varchar(255),
  scheduled_at datetime(6),
  finished_at datetime(6),
  concurrency_key varchar(255),
  created_at datetime(6) NOT NULL,
  updated_at datetime(6) NOT NULL,
  INDEX index_solid_queue_jobs_on_active_job_id (active_job_id),
  INDEX index_solid_queue_jobs_on_class_name (class_name),
  INDEX index_solid_queue_jobs_on_finished_at (finished_at),
  INDEX index_solid_queue_jobs_for_filtering (queue_name, finished_at),
  INDEX index_solid_queue_jobs_for_alerting (scheduled_at, finished_at)
) ENGINE=InnoDB;
CREATE TABLE IF NOT EXISTS solid_queue_pauses (
  id bigint NOT NULL AUTO_INCREMENT PRIMARY KEY,
  queue_name varchar(255) NOT NULL,
  created_at datetime(6) NOT NULL,
  UNIQUE INDEX index_solid_queue_pauses_on_queue_name (queue_name)
) ENGINE=InnoDB;
CREATE TABLE IF NOT EXISTS solid_queue_processes (
  id bigint NOT NULL AUTO_INCREMENT PRIMARY KEY,
  kind varchar(255) NOT NULL,
  last_heartbeat_at datetime(6) NOT NULL,
  supervisor_id bigint,
  pid int NOT NULL,
  hostname varchar(255),
  metadata text,
  created_at datetime(6) NOT NULL,
  name varchar(255) NOT NULL,
  INDEX index_solid_queue_processes_on_last_heartbeat_at (last_heartbeat_at),
  UNIQUE INDEX index_solid_queue_processes_on_name_and_supervisor_id (name, supervisor_id),
  INDEX index_solid_queue_processes_on_supervisor_id (supervisor_id)
) ENGINE=InnoDB;
CREATE TABLE IF NOT EXISTS solid_queue_ready_executions (
  id bigint NOT NULL AUTO_INCREMENT PRIMARY KEY,
  job_id bigint NOT NULL,
  queue_name varchar(255) NOT NULL,
  priority int DEFAULT 0 NOT NULL,
  created_at datetime(6) NOT NULL,
  UNIQUE INDEX index_solid_queue_ready_executions_on_job_id (job_id),
  INDEX index_solid_queue_poll_all (priority, job_id),
  INDEX index_solid_queue_poll_by_queue (queue_name, priority, job_id)
) ENGINE=InnoDB;
CREATE TABLE IF NOT EXISTS solid_queue_recurring_executions (
  id bigint NOT NULL AUTO_INCREMENT PRIMARY KEY,
  job_id bigint NOT NULL,
  task_key varchar(255) NOT NULL,
  run_at datetime(6) NOT NULL,
  created_at datetime(6) NOT NULL,
  UNIQUE INDEX index_solid_queue_recurring_executions_on_job_id (job_id),
  UNIQUE INDEX index_solid_queue_recurring_executions_on_task_key_and_run_at (task_key, run_at)
) ENGINE=InnoDB;
CREATE TABLE IF NOT EXISTS solid_queue_recurring_tasks (
  id bigint NOT NULL AUTO_INCREMENT PRIMARY KEY,
  `key` varchar(255) NOT NULL,
  schedule varchar(255) NOT NULL,
  command varchar(2048),
  class_name varchar(255),
  arguments text,
  queue_name varchar(255),
  priority int DEFAULT 0,
  static tinyint(1) DEFAULT 1 NOT NULL,
  description text,
  created_at datetime(6) NOT NULL,
  updated_at datetime(6) NOT NULL,
  UNIQUE INDEX index_solid_queue_recurring_tasks_on_key (`key`),
  INDEX index_solid_queue_recurring_tasks_on_static (static)
) ENGINE=InnoDB;
CREATE TABLE IF NOT EXISTS solid_queue_scheduled_executions (
  id bigint NOT NULL AUTO_INCREMENT PRIMARY KEY,
  job_id bigint NOT NULL,
  queue_name varchar(255) NOT NULL,
  priority int DEFAULT 0 NOT NULL,
  scheduled_at datetime(6) NOT NULL,
  created_at datetime(6) NOT NULL,
  UNIQUE INDEX index_solid_queue_scheduled_executions_on_job_id (job_id),
  INDEX index_solid_queue_dispatch_all (scheduled_at, priority, job_id)
) ENGINE=InnoDB;
CREATE TABLE IF NOT EXISTS solid_queue_semaphores (
  id bigint NOT NULL AUTO_INCREMENT PRIMARY KEY,
  `key` varchar(255) NOT NULL,
  value int DEFAULT 1 NOT NULL,
  expires_at datetime(6) NOT NULL,
  created_at datetime(6) NOT NULL,
  updated_at datetime(6) NOT NULL,
  INDEX index_solid_queue_semaphores_on_expires_at (expires_at),
  INDEX index_solid_queue_semaphores_on_key_and_value (`key`, value),
  UNIQUE INDEX index_solid_queue_semaphores_on_key (`key`)
) ENGINE=InnoDB;
ALTER TABLE solid_queue_blocked_executions ADD CONSTRAINT fk_rails_4cd34e2228
  FOREIGN KEY (job_id) REFERENCES solid_queue_jobs (id) ON DELETE CASCADE;
ALTER TABLE solid_queue_claimed_executions ADD CONSTRAINT fk_rails_9cfe4d4944
  FOREIGN KEY (job_id) REFERENCES solid_queue_jobs (id) ON DELETE CASCADE;
ALTER TABLE solid_queue_failed_executions ADD CONSTRAINT fk_rails_39bbc7a631
  FOREIGN KEY (job_id) REFERENCES solid_queue_jobs (id) ON DELETE CASCADE;
ALTER TABLE solid_queue_ready_executions ADD CONSTRAINT fk_rails_81fcbd66af
  FOREIGN KEY (job_id) REFERENCES solid_queue_jobs (id) ON DELETE CASCADE;
ALTER TABLE solid_queue_recurring_executions ADD CONSTRAINT fk_rails_318a5533ed
  FOREIGN KEY (job_id) REFERENCES solid_queue_jobs (id) ON DELETE CASCADE;
ALTER TABLE solid_queue_scheduled_executions ADD CONSTRAINT fk_rails_c4316f352d
  FOREIGN KEY (job_id) REFERENCES solid_queue_jobs (id) ON DELETE CASCADE;
