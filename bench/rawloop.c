/*
 * rawloop.c: the physical limit of a table queue's cycle, for the benchmark.
 *
 *	rawloop -S SOCKET -D DATABASE [-w WORKERS] [-b BATCH] [-x PROGRAM]
 *	    [-T] [-Q] [-C] [-R]
 *
 * Forks WORKERS processes; each opens its own connection and loops
 *
 *	BEGIN
 *	claim:  the queue's select + LIMIT BATCH FOR UPDATE SKIP LOCKED
 *	for each row: [posix_spawn PROGRAM and wait for it]
 *	        UPDATE email SET status = 'sent', ... WHERE id = ?
 *	COMMIT
 *
 * with server-side prepared statements and nothing else: no handler, no
 * JSON, no logging.  A worker exits when its claim finds nothing.  -T sets
 * the client read and write timeouts rowq's db.c sets (60 s), to measure
 * what they cost: libmariadb then waits for every answer in poll().  -Q
 * runs the claim as a text query instead of a prepared statement (the
 * UPDATE stays prepared), to compare what the server spends on each.  The
 * select and the UPDATE are the ones bench/bench.sh gives rowq, so the two
 * do the same work in the database.  -R leaves the session at the server's
 * default isolation, REPEATABLE READ, instead of READ COMMITTED.
 *
 * -C claims in the cursor form (src/cursor.c): the primary key scanned
 * from the last id this worker claimed,
 *
 *	claim:  SELECT ... FROM email FORCE INDEX (PRIMARY)
 *	        WHERE id > ? AND (<the select's WHERE>)
 *	        ORDER BY id LIMIT BATCH FOR UPDATE SKIP LOCKED
 *
 * and, when that finds nothing, every 1,000 claims and at least once a
 * second, the fallback: the first waiting id read without locking, then
 * the same claim with id >= it.  A worker exits when a fallback claim
 * finds nothing.  Exit status 0 when every worker did.
 */
#include <errno.h>
#include <mysql.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static const char *claim_sql =
    "SELECT id, recipient, subject, attempts FROM email\n"
    "WHERE status = 'waiting'\n"
    "  AND (retry_at IS NULL OR retry_at <= UNIX_TIMESTAMP())\n"
    "ORDER BY id\n"
    "LIMIT %d FOR UPDATE SKIP LOCKED";
/* The cursor form: the same select, from a key, and the fallback's start. */
static const char *cursor_sql =
    "SELECT id, recipient, subject, attempts FROM email FORCE INDEX (PRIMARY)\n"
    "WHERE id %s ? AND (status = 'waiting'\n"
    "  AND (retry_at IS NULL OR retry_at <= UNIX_TIMESTAMP()))\n"
    "ORDER BY id\n"
    "LIMIT %d FOR UPDATE SKIP LOCKED";
static const char *start_sql =
    "SELECT id FROM email\n"
    "WHERE status = 'waiting'\n"
    "  AND (retry_at IS NULL OR retry_at <= UNIX_TIMESTAMP())\n"
    "ORDER BY id LIMIT 1";
#define FALLBACK_CLAIMS	1000
#define FALLBACK_MS	1000
static const char *done_sql =
    "UPDATE email SET status = 'sent', attempts = attempts + 1, "
    "done_count = done_count + 1 WHERE id = ?";

#define BATCH_MAX	1000

static void
die(MYSQL *m, const char *what)
{
	fprintf(stderr, "rawloop[%d]: %s: %s\n", (int)getpid(), what,
	    m ? mysql_error(m) : strerror(errno));
	exit(1);
}

static void
die_stmt(MYSQL_STMT *s, const char *what)
{
	fprintf(stderr, "rawloop[%d]: %s: %s\n", (int)getpid(), what,
	    mysql_stmt_error(s));
	exit(1);
}

static MYSQL_STMT *
prepare(MYSQL *m, const char *sql)
{
	MYSQL_STMT *s = mysql_stmt_init(m);

	if (s == NULL || mysql_stmt_prepare(s, sql, strlen(sql)) != 0)
		die(m, sql);
	return s;
}

/* Run PROGRAM with no arguments and wait for it; it must exit 0. */
static void
spawn(const char *prog)
{
	char *argv[] = { (char *)prog, NULL };
	pid_t pid;
	int status, e;

	if ((e = posix_spawn(&pid, prog, NULL, NULL, argv, environ)) != 0) {
		errno = e;
		die(NULL, prog);
	}
	while (waitpid(pid, &status, 0) == -1)
		if (errno != EINTR)
			die(NULL, "waitpid");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "rawloop: %s failed\n", prog);
		exit(1);
	}
}

static int timeouts, text_claim, cursor, repeatable;

static long long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Run a prepared claim whose one parameter is bound; its ids into ids. */
static int
fetch_ids(MYSQL_STMT *s, long long *id, long long *ids)
{
	int n = 0, rc;

	if (mysql_stmt_execute(s) != 0 || mysql_stmt_store_result(s) != 0)
		die_stmt(s, "claim");
	while ((rc = mysql_stmt_fetch(s)) == 0 || rc == MYSQL_DATA_TRUNCATED)
		ids[n++] = *id;
	mysql_stmt_free_result(s);
	return n;
}

/*
 * The cursor form's claim: from *last when it can, else the fallback.
 * Returns the rows claimed; 0 only after a fallback found nothing.
 */
static int
cursor_claim(MYSQL_STMT *after, MYSQL_STMT *from, MYSQL_STMT *start,
    long long *id, long long *key, long long *last, int *claims,
    long long *fallback_ms, long long *ids)
{
	int n = 0;

	if (*last >= 0 && *claims < FALLBACK_CLAIMS &&
	    now_ms() - *fallback_ms < FALLBACK_MS) {
		*key = *last;
		n = fetch_ids(after, id, ids);
		++*claims;
	}
	if (n == 0) {
		*claims = 0;
		*fallback_ms = now_ms();
		if (fetch_ids(start, id, ids) == 0)
			return 0;
		*key = ids[0];
		n = fetch_ids(from, id, ids);
	}
	*last = n > 0 ? ids[n - 1] : -1;
	return n;
}

static int
worker(const char *sock, const char *db, int batch, const char *prog)
{
	MYSQL *m = mysql_init(NULL);
	unsigned int t = 60;
	MYSQL_STMT *claim, *done, *after = NULL, *from = NULL, *start = NULL;
	MYSQL_BIND out[4], in[1], keyb[1], startb[1];
	long long id, ids[BATCH_MAX], param, key = 0, last = -1, fallback_ms = 0;
	int claims = 0;
	char rcpt[256], subj[256];
	long long attempts;
	unsigned long len[4];
	char sql[512];
	long rows = 0;

	if (m != NULL && timeouts) {
		mysql_optionsv(m, MYSQL_OPT_READ_TIMEOUT, &t);
		mysql_optionsv(m, MYSQL_OPT_WRITE_TIMEOUT, &t);
	}
	if (m == NULL || mysql_real_connect(m, NULL, "root", NULL, db, 0, sock,
	    0) == NULL)
		die(m, "connect");
	if (!repeatable && mysql_query(m, "SET SESSION TRANSACTION ISOLATION "
	    "LEVEL READ COMMITTED") != 0)
		die(m, "isolation");
	snprintf(sql, sizeof(sql), claim_sql, batch);
	claim = prepare(m, sql);
	done = prepare(m, done_sql);
	if (cursor) {
		snprintf(sql, sizeof(sql), cursor_sql, ">", batch);
		after = prepare(m, sql);
		snprintf(sql, sizeof(sql), cursor_sql, ">=", batch);
		from = prepare(m, sql);
		start = prepare(m, start_sql);
	}

	memset(out, 0, sizeof(out));
	out[0].buffer_type = MYSQL_TYPE_LONGLONG;
	out[0].buffer = &id;
	out[1].buffer_type = MYSQL_TYPE_STRING;
	out[1].buffer = rcpt;
	out[1].buffer_length = sizeof(rcpt);
	out[1].length = &len[1];
	out[2].buffer_type = MYSQL_TYPE_STRING;
	out[2].buffer = subj;
	out[2].buffer_length = sizeof(subj);
	out[2].length = &len[2];
	out[3].buffer_type = MYSQL_TYPE_LONGLONG;
	out[3].buffer = &attempts;
	if (mysql_stmt_bind_result(claim, out) != 0)
		die_stmt(claim, "bind result");
	memset(in, 0, sizeof(in));
	in[0].buffer_type = MYSQL_TYPE_LONGLONG;
	in[0].buffer = &param;
	if (mysql_stmt_bind_param(done, in) != 0)
		die_stmt(done, "bind param");
	if (cursor) {
		memset(keyb, 0, sizeof(keyb));
		keyb[0].buffer_type = MYSQL_TYPE_LONGLONG;
		keyb[0].buffer = &key;
		memset(startb, 0, sizeof(startb));
		startb[0].buffer_type = MYSQL_TYPE_LONGLONG;
		startb[0].buffer = &id;
		if (mysql_stmt_bind_param(after, keyb) != 0 ||
		    mysql_stmt_bind_param(from, keyb) != 0 ||
		    mysql_stmt_bind_result(after, out) != 0 ||
		    mysql_stmt_bind_result(from, out) != 0 ||
		    mysql_stmt_bind_result(start, startb) != 0)
			die_stmt(after, "bind cursor");
	}

	for (;;) {
		int n = 0, rc;

		if (mysql_query(m, "BEGIN") != 0)
			die(m, "BEGIN");
		if (cursor) {
			n = cursor_claim(after, from, start, &id, &key, &last,
			    &claims, &fallback_ms, ids);
		} else if (text_claim) {
			MYSQL_RES *res;
			MYSQL_ROW row;
			if (mysql_query(m, sql) != 0 ||
			    (res = mysql_store_result(m)) == NULL)
				die(m, "claim");
			while ((row = mysql_fetch_row(res)) != NULL)
				ids[n++] = atoll(row[0]);
			mysql_free_result(res);
		} else {
			if (mysql_stmt_execute(claim) != 0 ||
			    mysql_stmt_store_result(claim) != 0)
				die_stmt(claim, "claim");
			while ((rc = mysql_stmt_fetch(claim)) == 0 ||
			    rc == MYSQL_DATA_TRUNCATED)
				ids[n++] = id;
			mysql_stmt_free_result(claim);
		}
		for (int i = 0; i < n; i++) {
			if (prog != NULL)
				spawn(prog);
			param = ids[i];
			if (mysql_stmt_execute(done) != 0)
				die_stmt(done, "UPDATE");
			if (mysql_stmt_affected_rows(done) != 1) {
				fprintf(stderr, "rawloop: row %lld not updated\n",
				    ids[i]);
				exit(1);
			}
		}
		if (mysql_query(m, "COMMIT") != 0)
			die(m, "COMMIT");
		if (n == 0)
			break;
		rows += n;
	}
	mysql_stmt_close(claim);
	mysql_stmt_close(done);
	if (cursor) {
		mysql_stmt_close(after);
		mysql_stmt_close(from);
		mysql_stmt_close(start);
	}
	mysql_close(m);
	return 0;
}

int
main(int argc, char **argv)
{
	const char *sock = NULL, *db = NULL, *prog = NULL;
	int workers = 1, batch = 1, c, failed = 0;

	while ((c = getopt(argc, argv, "S:D:w:b:x:TQCR")) != -1) {
		switch (c) {
		case 'S': sock = optarg; break;
		case 'D': db = optarg; break;
		case 'w': workers = atoi(optarg); break;
		case 'b': batch = atoi(optarg); break;
		case 'x': prog = optarg; break;
		case 'T': timeouts = 1; break;
		case 'Q': text_claim = 1; break;
		case 'C': cursor = 1; break;
		case 'R': repeatable = 1; break;
		default:
			goto usage;
		}
	}
	if (sock == NULL || db == NULL || workers < 1 || batch < 1 ||
	    batch > BATCH_MAX || (cursor && text_claim))
		goto usage;
	if (mysql_library_init(0, NULL, NULL) != 0)
		die(NULL, "mysql_library_init");
	for (int i = 0; i < workers; i++) {
		pid_t pid = fork();
		if (pid == -1)
			die(NULL, "fork");
		if (pid == 0)
			_exit(worker(sock, db, batch, prog));
	}
	for (int i = 0; i < workers; i++) {
		int status;
		if (wait(&status) == -1)
			die(NULL, "wait");
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			failed++;
	}
	return failed ? 1 : 0;
usage:
	fprintf(stderr, "usage: rawloop -S SOCKET -D DATABASE [-w WORKERS] "
	    "[-b BATCH] [-x PROGRAM] [-T] [-Q | -C] [-R]\n");
	return 2;
}
