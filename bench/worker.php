<?php
// The worker of the design article ("A queue on any table in PHP and
// MySQL"), as its reader would run it: PDO with its defaults, the article's
// lockNextEmails/processEmail/processNext/runWorker, and a sendEmail that
// does nothing.  Two changes, both for the benchmark: runWorker returns
// when the queue is empty instead of sleeping, and the UPDATE also counts
// done_count, so that bench.sh can check that every row was done once.
//
//     php worker.php SOCKET DATABASE

$db = new PDO("mysql:unix_socket={$argv[1]};dbname={$argv[2]}", 'root', '', [
    PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION,
]);

function sendEmail(object $email): void
{
}

function lockNextEmails(PDO $db, int $limit): array {
    $q = $db->prepare("
        SELECT id FROM email
        WHERE status = 'waiting'
        AND (retry_at IS NULL OR retry_at <= :now)
        ORDER BY id
        LIMIT :limit
        FOR UPDATE SKIP LOCKED
    ");
    $q->bindValue(':now', time(), PDO::PARAM_INT);
    $q->bindValue(':limit', $limit, PDO::PARAM_INT);
    $q->execute();
    return array_map('intval', $q->fetchAll(PDO::FETCH_COLUMN));
}

function processEmail(PDO $db, int $id): void {
    $q = $db->prepare("SELECT * FROM email WHERE id = ?");
    $q->execute([$id]);
    $email = $q->fetch(PDO::FETCH_OBJ);

    sendEmail($email);
    $db->prepare("UPDATE email SET status = 'sent', attempts = attempts + 1,
                  done_count = done_count + 1 WHERE id = ?")
       ->execute([$id]);
}

function processNext(PDO $db, callable $lockNext, callable $process): bool {
    $db->beginTransaction();
    try {
        $ids = $lockNext($db, 1);
        if (!$ids) {
            $db->commit();
            return false;   //  nothing waiting
        }
        $process($db, $ids[0]);
        $db->commit();
        return true;
    } catch (Throwable $e) {
        $db->rollBack();    //  the item goes back into the queue
        throw $e;
    }
}

function runWorker(PDO $db, callable $lockNext, callable $process, int $idle = 5): void {
    while (true) {
        try {
            if (!processNext($db, $lockNext, $process)) {
                return;     //  the benchmark: stop when the queue is empty
            }
        } catch (Throwable $e) {
            error_log($e->getMessage());
            sleep(1);
        }
    }
}

runWorker($db, 'lockNextEmails', 'processEmail');
