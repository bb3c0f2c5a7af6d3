/*
 * check.c: the configuration against the live database, before any worker
 * starts: connect, prepare every statement (the server parses it and knows
 * every column), check parameters against the select's columns, and make
 * sure every handler program can be run.  `rowq check`, `rowq run` and a
 * reload all go through here, so a configuration that passes check is one
 * the workers can run.
 */
#include "rowq.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Prepare a statement just to see the server accept it. */
static int
check_statement(struct db *db, const struct sql *sql)
{
	enum db_status st;
	struct db_stmt *s;

	if (sql->text == NULL)
		return 0;
	s = db_prepare(db, sql->positional, &st);
	if (s == NULL) {
		log_error("%s: %s", sql->where, db_error(db));
		return 1;
	}
	db_stmt_free(s);
	return 0;
}

static int
check_queue(struct db *db, const struct queue *q)
{
	enum db_status st;
	struct db_stmt *claim;
	const struct column *cols;
	size_t ncols;
	char *sql, *path;
	char **names;
	int problems = 0;

	if (handler_resolve(q->argv[0], &path) == -1) {
		log_error("%s: cannot run %s: %s", q->argv_where, q->argv[0],
		    strerror(errno));
		problems++;
	} else
		free(path);
	sql = sql_claim(q->select.positional, q->batch);
	claim = db_prepare(db, sql, &st);
	free(sql);
	if (claim == NULL) {
		log_error("%s: %s", q->select.where, db_error(db));
		return problems + 1;
	}
	cols = db_stmt_columns(claim, &ncols);
	names = xcalloc(ncols + 1, sizeof(*names));
	for (size_t i = 0; i < ncols; i++)
		names[i] = cols[i].name;
	problems += config_check_columns(q, names, ncols);
	free(names);
	db_stmt_free(claim);
	problems += check_statement(db, &q->done);
	problems += check_statement(db, &q->failed);
	problems += check_statement(db, &q->retry.update);
	problems += check_statement(db, &q->lease.claim);
	problems += check_statement(db, &q->lease.renew);
	return problems;
}

/*
 * Returns the number of problems found (each logged with file, line and
 * key), or -1 when the database cannot be reached at all.
 */
int
check_config(const struct config *cfg, bool explain)
{
	enum db_status st;
	struct db *db;
	int problems = 0;

	(void)explain;
	db = db_open(&cfg->db, &st);
	if (st != DB_OK) {
		log_error("%s: database: cannot connect: %s", cfg->path,
		    db_error(db));
		db_close(db);
		return st == DB_CONFIG ? 1 : -1;
	}
	for (size_t i = 0; i < cfg->nqueues; i++)
		problems += check_queue(db, &cfg->queues[i]);
	(void)db_rollback(db);
	db_close(db);
	return problems;
}
