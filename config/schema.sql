-- The tables of the example queues: email (rowq.yaml), webhooks
-- (queues.d/webhooks.yaml), images (queues.d/images.yaml) and video
-- (queues.d/video.yaml).  rowq needs nothing else in the database: no
-- queue table, no extra columns.  Load with
--
--     mariadb shop < schema.sql
--
-- and let rowq's database user read and update them, nothing more (email's
-- prune: deletes old rows; webhooks_due moves a due row from
-- scheduled_webhooks into webhooks):
--
--     GRANT SELECT, UPDATE, DELETE ON shop.email TO 'rowq'@'localhost';
--     GRANT SELECT, INSERT, UPDATE ON shop.webhooks TO 'rowq'@'localhost';
--     GRANT SELECT, DELETE ON shop.scheduled_webhooks TO 'rowq'@'localhost';
--     GRANT SELECT, UPDATE ON shop.images TO 'rowq'@'localhost';
--     GRANT SELECT, UPDATE ON shop.video TO 'rowq'@'localhost';
--
-- and the tables rowq keeps for the examples, which the first worker
-- creates: email's run log (runs:) and webhooks' shared limit (limit:):
--
--     GRANT CREATE, SELECT, INSERT, DELETE ON shop.rowq_runs TO 'rowq'@'localhost';
--     GRANT CREATE, SELECT, INSERT, UPDATE ON shop.rowq_limit TO 'rowq'@'localhost';
--
-- Each table has an index that serves its queue's WHERE and ORDER BY
-- together, so that a claim reads the first waiting rows and nothing else.
-- Without it, the claim either scans and locks every finished row in front
-- of the first waiting one, or locks every waiting row so that one worker
-- gets them all (see rowq.yaml(5), INDEXES).  SKIP LOCKED needs InnoDB and
-- MariaDB 10.6 or MySQL 8.0 (rowq is tested on MariaDB 10.11 and 11.8 and
-- MySQL 9.7).

-- One row per email.  The application inserts a row and carries on; the
-- email queue sends it.  attempts counts the tries made so far, retry_at
-- is the Unix time before which a failed email is not tried again, and
-- last_error is what the handler said the last time it failed.  created_at
-- is the queue's age: column, for `rowq status` and its alert.
CREATE TABLE email (
    id          BIGINT NOT NULL AUTO_INCREMENT,
    recipient   VARCHAR(250) NOT NULL,
    subject     VARCHAR(250) NOT NULL,
    body        TEXT NOT NULL,
    status      ENUM('waiting', 'sent', 'failed') NOT NULL DEFAULT 'waiting',
    attempts    INT NOT NULL DEFAULT 0,
    retry_at    BIGINT NULL,
    last_error  TEXT NULL,
    created_at  DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    PRIMARY KEY (id),
    -- WHERE status = 'waiting' ... ORDER BY id, and
    -- WHERE status = 'sent' ... (the prune: ids grow with created_at,
    -- so it reads the oldest sent rows first, the ones it removes)
    INDEX status_id (status, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- One row per webhook to deliver: POST payload to url.  A delivery that
-- fails is tried again at next_try_at, which also puts it behind the
-- deliveries that are due now.  response keeps the start of what the
-- receiver answered, as bytes: it need not be UTF-8 text.
CREATE TABLE webhooks (
    id            BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    url           VARCHAR(2000) NOT NULL,
    payload       MEDIUMTEXT NOT NULL,
    state         ENUM('pending', 'delivered', 'dead') NOT NULL DEFAULT 'pending',
    next_try_at   DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    tries         INT NOT NULL DEFAULT 0,
    response      BLOB NULL,
    last_error    TEXT NULL,
    delivered_at  DATETIME NULL,
    created_at    DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    PRIMARY KEY (id),
    -- WHERE state = 'pending' AND next_try_at <= NOW()
    -- ORDER BY next_try_at, id (InnoDB ends every index with the key)
    INDEX state_next_try (state, next_try_at, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- Deliveries scheduled for later: the queue webhooks_due (handler: none)
-- moves each into webhooks once send_at has come, in batches, with no
-- process started.
CREATE TABLE scheduled_webhooks (
    id            BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    url           VARCHAR(2000) NOT NULL,
    payload       MEDIUMTEXT NOT NULL,
    send_at       DATETIME NOT NULL,
    PRIMARY KEY (id),
    -- WHERE send_at <= NOW() ORDER BY send_at, id
    INDEX send_at (send_at, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- One row per thumbnail to make, by the pipe handler resize-image: the
-- picture originals/ID.jpg made at most width pixels wide and high.
-- thumbnail is the file it wrote (the handler's answer, :output), retry_at
-- the time before which a failed row is not tried again.
CREATE TABLE images (
    id          BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    width       INT UNSIGNED NOT NULL,
    status      ENUM('waiting', 'done', 'failed') NOT NULL DEFAULT 'waiting',
    attempts    INT NOT NULL DEFAULT 0,
    retry_at    DATETIME NULL,
    thumbnail   VARCHAR(500) NULL,
    last_error  TEXT NULL,
    PRIMARY KEY (id),
    -- WHERE status = 'waiting' ... ORDER BY id
    INDEX status_id (status, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- One row per video to render: minutes or hours of work each, so the
-- queue works in lease mode.  lease is the token of the worker that holds
-- the row and leased_until when its lease runs out; a failed try sets
-- leased_until to the time of the next try.  attempts counts the claims,
-- so a try whose worker died is counted too.
CREATE TABLE video (
    id            BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    source        VARCHAR(1000) NOT NULL,
    status        ENUM('waiting', 'rendered', 'failed') NOT NULL DEFAULT 'waiting',
    lease         CHAR(32) NULL,
    leased_until  DATETIME NULL,
    attempts      INT NOT NULL DEFAULT 0,
    output        VARCHAR(1000) NULL,
    last_error    TEXT NULL,
    created_at    DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    PRIMARY KEY (id),
    -- WHERE status = 'waiting' ... ORDER BY id; leased_until is checked
    -- row by row, and only the rows being worked on have a live lease.
    INDEX status_id (status, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
