-- Magento 2's MySQL message queue, as its declarative schema creates it:
-- app/code/Magento/MysqlMq/etc/db_schema.xml (magento/magento2).  The
-- index on message_id is the one InnoDB adds for the foreign key.
CREATE TABLE queue (
  id int(10) unsigned NOT NULL AUTO_INCREMENT COMMENT 'Queue ID',
  name varchar(255) DEFAULT NULL COMMENT 'Queue name',
  PRIMARY KEY (id),
  UNIQUE KEY QUEUE_NAME (name)
) ENGINE=InnoDB COMMENT='Table storing unique queues';
CREATE TABLE queue_message (
  id bigint(20) unsigned NOT NULL AUTO_INCREMENT COMMENT 'Message ID',
  topic_name varchar(255) DEFAULT NULL COMMENT 'Message topic',
  body longtext DEFAULT NULL COMMENT 'Message body',
  PRIMARY KEY (id)
) ENGINE=InnoDB COMMENT='Queue messages';
CREATE TABLE queue_message_status (
  id bigint(20) unsigned NOT NULL AUTO_INCREMENT COMMENT 'Relation ID',
  queue_id int(10) unsigned NOT NULL COMMENT 'Queue ID',
  message_id bigint(20) unsigned NOT NULL COMMENT 'Message ID',
  updated_at timestamp NOT NULL DEFAULT current_timestamp() ON UPDATE current_timestamp() COMMENT 'Updated At',
  status smallint(5) unsigned NOT NULL COMMENT 'Message status in particular queue',
  number_of_trials smallint(5) unsigned NOT NULL DEFAULT 0 COMMENT 'Number of trials to processed failed message processing',
  PRIMARY KEY (id),
  UNIQUE KEY QUEUE_MESSAGE_STATUS_QUEUE_ID_MESSAGE_ID (queue_id, message_id),
  KEY QUEUE_MESSAGE_STATUS_STATUS_UPDATED_AT (status, updated_at),
  KEY QUEUE_MESSAGE_STATUS_MESSAGE_ID_QUEUE_MESSAGE_ID (message_id),
  CONSTRAINT QUEUE_MESSAGE_STATUS_MESSAGE_ID_QUEUE_MESSAGE_ID FOREIGN KEY (message_id) REFERENCES queue_message (id) ON DELETE CASCADE,
  CONSTRAINT QUEUE_MESSAGE_STATUS_QUEUE_ID_QUEUE_ID FOREIGN KEY (queue_id) REFERENCES queue (id) ON DELETE CASCADE
) ENGINE=InnoDB COMMENT='Relation table to keep associations between queues and messages';
