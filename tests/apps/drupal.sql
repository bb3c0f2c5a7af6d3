-- Drupal core's database queue, the table DatabaseQueue::schemaDefinition()
-- describes (core/lib/Drupal/Core/Queue/DatabaseQueue.php, drupal/drupal),
-- as Drupal's MySQL driver creates it: a serial is an unsigned
-- AUTO_INCREMENT int, varchar_ascii is ASCII, a big blob is a LONGBLOB.
CREATE TABLE queue (
  item_id int(10) unsigned NOT NULL AUTO_INCREMENT COMMENT 'Primary Key: Unique item ID.',
  name varchar(255) CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL DEFAULT '' COMMENT 'The queue name.',
  data longblob DEFAULT NULL COMMENT 'The arbitrary data for the item.',
  expire int(11) NOT NULL DEFAULT 0 COMMENT 'Timestamp when the claim lease expires on the item.',
  created int(11) NOT NULL DEFAULT 0 COMMENT 'Timestamp when the item was created.',
  PRIMARY KEY (item_id),
  KEY name_created (name, created),
  KEY expire (expire)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci COMMENT='Stores items in queues.';
