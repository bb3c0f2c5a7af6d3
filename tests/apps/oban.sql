-- Oban's jobs table on MySQL (its Dolphin engine), from the MyXQL
-- migration as shipped (lib/oban/migrations/myxql.ex, oban-bg/oban),
-- as Ecto's MyXQL adapter creates it: oban_jobs, with each job's own
-- max_attempts and its attempt count, and oban_peers.
CREATE TABLE IF NOT EXISTS oban_jobs (
  id bigint unsigned NOT NULL AUTO_INCREMENT,
  state ENUM('available', 'scheduled', 'executing', 'retryable', 'completed', 'cancelled', 'discarded') NOT NULL DEFAULT 'available',
  queue varchar(255) NOT NULL DEFAULT 'default',
  worker varchar(255) NOT NULL,
  args json NOT NULL DEFAULT ('{}'),
  meta json NOT NULL DEFAULT ('{}'),
  tags json NOT NULL DEFAULT ('[]'),
  attempted_by json NOT NULL DEFAULT ('[]'),
  errors json NOT NULL DEFAULT ('[]'),
  attempt int NOT NULL DEFAULT 0,
  max_attempts int NOT NULL DEFAULT 20,
  priority int NOT NULL DEFAULT 0,
  inserted_at datetime(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
  scheduled_at datetime(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
  attempted_at datetime(6),
  cancelled_at datetime(6),
  completed_at datetime(6),
  discarded_at datetime(6),
  PRIMARY KEY (id)
) ENGINE=InnoDB;
CREATE TABLE IF NOT EXISTS oban_peers (
  name varchar(255) NOT NULL,
  node varchar(255) NOT NULL,
  started_at datetime(6) NOT NULL,
  expires_at datetime(6) NOT NULL,
  PRIMARY KEY (name)
) ENGINE=InnoDB;
CREATE INDEX oban_jobs_state_queue_priority_scheduled_at_id_index
  ON oban_jobs (state, queue, priority, scheduled_at, id);
ALTER TABLE oban_jobs ADD CONSTRAINT attempt_range
  CHECK (attempt between 0 and max_attempts);
ALTER TABLE oban_jobs ADD CONSTRAINT non_negative_priority
  CHECK (priority >= 0);
ALTER TABLE oban_jobs ADD CONSTRAINT positive_max_attempts
  CHECK (max_attempts > 0);
ALTER TABLE oban_jobs ADD CONSTRAINT queue_length
  CHECK (char_length(queue) > 0 AND char_length(queue) < 128);
ALTER TABLE oban_jobs ADD CONSTRAINT worker_length
  CHECK (char_length(worker) > 0 AND char_length(worker) < 128);
