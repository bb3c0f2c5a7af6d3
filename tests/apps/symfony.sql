-- Symfony Messenger's Doctrine transport, the table its Connection adds to
-- the schema (src/Symfony/Component/Messenger/Bridge/Doctrine/Transport/
-- Connection.php, addTableToSchema, symfony/symfony 5.x), as Doctrine's
-- MySQL platform creates it.
CREATE TABLE messenger_messages (
  id bigint(20) NOT NULL AUTO_INCREMENT,
  body longtext NOT NULL,
  headers longtext NOT NULL,
  queue_name varchar(190) NOT NULL,
  created_at datetime NOT NULL,
  available_at datetime NOT NULL,
  delivered_at datetime DEFAULT NULL,
  PRIMARY KEY (id),
  KEY IDX_75EA56E0FB7336F0 (queue_name),
  KEY IDX_75EA56E0E3BD61CE (available_at),
  KEY IDX_75EA56E016BA31DB (delivered_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
