-- WordPress's Action Scheduler (WooCommerce), its tables as it creates
-- them with the prefix wp_: classes/schema/ActionScheduler_StoreSchema.php
-- (schema 7: actions, claims, groups) and
-- classes/schema/ActionScheduler_LoggerSchema.php (logs), in
-- woocommerce/action-scheduler.  The default date is the schema's own.
SET SESSION sql_mode = '';
CREATE TABLE wp_actionscheduler_actions (
        action_id bigint(20) unsigned NOT NULL auto_increment,
        hook varchar(191) NOT NULL,
        status varchar(20) NOT NULL,
        scheduled_date_gmt datetime NULL default '0000-00-00 00:00:00',
        scheduled_date_local datetime NULL default '0000-00-00 00:00:00',
        priority tinyint unsigned NOT NULL default '10',
        args varchar(191),
        schedule longtext,
        group_id bigint(20) unsigned NOT NULL default '0',
        attempts int(11) NOT NULL default '0',
        last_attempt_gmt datetime NULL default '0000-00-00 00:00:00',
        last_attempt_local datetime NULL default '0000-00-00 00:00:00',
        claim_id bigint(20) unsigned NOT NULL default '0',
        extended_args varchar(8000) DEFAULT NULL,
        PRIMARY KEY  (action_id),
        KEY hook_status_scheduled_date_gmt (hook(163), status, scheduled_date_gmt),
        KEY status_scheduled_date_gmt (status, scheduled_date_gmt),
        KEY scheduled_date_gmt (scheduled_date_gmt),
        KEY args (args(191)),
        KEY group_id (group_id),
        KEY last_attempt_gmt (last_attempt_gmt),
        KEY `claim_id_status_scheduled_date_gmt` (`claim_id`, `status`, `scheduled_date_gmt`)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_520_ci;
CREATE TABLE wp_actionscheduler_claims (
        claim_id bigint(20) unsigned NOT NULL auto_increment,
        date_created_gmt datetime NULL default '0000-00-00 00:00:00',
        PRIMARY KEY  (claim_id),
        KEY date_created_gmt (date_created_gmt)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_520_ci;
CREATE TABLE wp_actionscheduler_groups (
        group_id bigint(20) unsigned NOT NULL auto_increment,
        slug varchar(255) NOT NULL,
        PRIMARY KEY  (group_id),
        KEY slug (slug(191))
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_520_ci;
CREATE TABLE wp_actionscheduler_logs (
        log_id bigint(20) unsigned NOT NULL auto_increment,
        action_id bigint(20) unsigned NOT NULL,
        message text NOT NULL,
        log_date_gmt datetime NULL default '0000-00-00 00:00:00',
        log_date_local datetime NULL default '0000-00-00 00:00:00',
        PRIMARY KEY  (log_id),
        KEY action_id (action_id),
        KEY log_date_gmt (log_date_gmt)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_520_ci;
