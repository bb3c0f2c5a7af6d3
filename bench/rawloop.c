/*
 * rawloop.c: the physical limit of a table queue's cycle, for the benchmark.
 *
 *	rawloop -S SOCKET -D DATABASE [-w WORKERS] [-b BATCH] [-x PROGRAM]
 *	    [-T] [-Q]
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
 * do the same work in the database.  Exit status 0 when every worker did.
 */
#include <errno.h>
#include <mysql.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static const char *claim_sql =
    "SELECT id, recipient, subject, attempts FROM email\n"
    "WHERE status = 'waiting'\n"
    "  AND (retry_at IS NULL OR retry_at <= UNIX_TIMESTAMP())\n"
    "ORDER BY id\n"
    "LIMIT %d FOR UPDATE SKIP LOCKED";
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

static int timeouts, text_claim;

static int
worker(const char *sock, const char *db, int batch, const char *prog)
{
	MYSQL *m = mysql_init(NULL);
	unsigned int t = 60;
	MYSQL_STMT *claim, *done;
	MYSQL_BIND out[4], in[1];
	long long id, ids[BATCH_MAX], param;
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
	if (mysql_query(m, "SET SESSION TRANSACTION ISOLATION LEVEL "
	    "READ COMMITTED") != 0)
		die(m, "isolation");
	snprintf(sql, sizeof(sql), claim_sql, batch);
	claim = prepare(m, sql);
	done = prepare(m, done_sql);

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

	for (;;) {
		int n = 0, rc;

		if (mysql_query(m, "BEGIN") != 0)
			die(m, "BEGIN");
		if (text_claim) {
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
	mysql_close(m);
	return 0;
}

int
main(int argc, char **argv)
{
	const char *sock = NULL, *db = NULL, *prog = NULL;
	int workers = 1, batch = 1, c, failed = 0;

	while ((c = getopt(argc, argv, "S:D:w:b:x:TQ")) != -1) {
		switch (c) {
		case 'S': sock = optarg; break;
		case 'D': db = optarg; break;
		case 'w': workers = atoi(optarg); break;
		case 'b': batch = atoi(optarg); break;
		case 'x': prog = optarg; break;
		case 'T': timeouts = 1; break;
		case 'Q': text_claim = 1; break;
		default:
			goto usage;
		}
	}
	if (sock == NULL || db == NULL || workers < 1 || batch < 1 ||
	    batch > BATCH_MAX)
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
	    "[-b BATCH] [-x PROGRAM] [-T] [-Q]\n");
	return 2;
}
