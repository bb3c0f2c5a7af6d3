/*
 * dialect.h: what rowq says differently to each family of server.
 *
 * rowq speaks the SQL that MariaDB and MySQL share wherever it can (FOR
 * UPDATE SKIP LOCKED, GET_LOCK, WITH RECURSIVE, CREATE TABLE IF NOT
 * EXISTS, INSERT IGNORE): none of that is here.  What the two families
 * say or mean differently is, and only here: each is one struct dialect,
 * picked once per connection from the server's own greeting (never
 * configured), and every other file asks it (db_dialect) instead of
 * looking at the server's name or version.  A third family is one more
 * struct dialect and its functions in dialect.c.
 *
 *	what				MariaDB			MySQL
 *	EXPLAIN's table of the plan	EXPLAIN			EXPLAIN FORMAT=TRADITIONAL
 *	a statement prepared by SQL	PREPARE n FROM X'..',	kept by rowq, sent as
 *					EXECUTE n USING 1, ..	text with its values
 *	bytes as a value in SQL text	X'..'			CAST(X'..' AS BINARY)
 *	an idle transaction ended by	idle_*transaction_timeout  wait_timeout only
 *	a batch's rows in one execute	COM_STMT_BULK_EXECUTE	one execute a row
 *	the binary log's position	SHOW MASTER STATUS	SHOW BINARY LOG STATUS
 *	executable comments run		!NNNNN and M!		!NNNNN
 *	errors of its own		(the shared ones)	4031 idle, 3024, 3169
 *	a JSON path that is wrong	4041-4046, 4051		3143, 3149
 *	Galera				possible		no
 *	an upsert's new values		VALUES(col)		an alias: rowq_new.col
 *	the rows a CALL changed		all its statements'	its last statement's
 *	an UPDATE's SET list		left to right, or at	left to right
 *					once with sql_mode
 *					SIMULTANEOUS_ASSIGNMENT
 */
#ifndef DIALECT_H
#define DIALECT_H

#include "db.h"

struct dialect {
	const char	*name;		/* "MariaDB", "MySQL": for messages */
	/* EXPLAIN (and a space) that lists the plan as a table with the
	 * columns table, type, key, rows and Extra, whatever the server's
	 * default format (MySQL 9's is a tree). */
	const char	*explain;
	/* The session variables that end a transaction left idle this
	 * long (NULL-terminated; none: wait_timeout is the only bound). */
	const char *const *idle_transaction;
	bool		 prepares_by_sql;	/* EXECUTE USING takes literals */
	bool		 m_comments;		/* runs M! executable comments */
	bool		 bulk_execute;		/* array binding, if offered */
	bool		 galera;		/* may be a Galera node */
	bool		 upsert_alias;		/* INSERT .. AS new ON DUPLICATE */
	bool		 call_counts_last;	/* a CALL's rows: its last statement's */
	/* SELECT's list may set a user variable (@v := expr) with no
	 * warning: deprecated in MySQL 8.0.13, to be removed. */
	bool		 assigns_in_select;
	/* The sql_mode word that makes a SET list read the row's old
	 * values throughout; NULL: it is always left to right. */
	const char	*simultaneous_assignment;
};

/*
 * A statement for the session, prepared once and run many times inside a
 * multi-statement text (the claim's round trip): where the server can
 * prepare it by SQL, EXECUTE with the values; elsewhere the text itself,
 * each '?' replaced by its value.  Either way one statement, one result.
 */
struct dialect_stmt {
	const struct dialect *dialect;
	char		*name;
	char		*text;		/* with '?' for each value */
	size_t		*holes;		/* offsets of the '?'s in text */
	size_t		 nholes;
};

/* ---- dialect.c ---- */

const struct dialect *dialect_of(const char *server_info);
const struct dialect *dialect_mariadb(void);
const struct dialect *dialect_mysql(void);
void	 dialect_bytes(const struct dialect *, struct buf *, const void *,
	    size_t);
int	 dialect_stmt_init(struct dialect_stmt *, const struct dialect *,
	    const char *name, const char *text, struct buf *prepare);
void	 dialect_stmt_free(struct dialect_stmt *);
bool	 dialect_stmt_execute(const struct dialect_stmt *, struct buf *,
	    const struct value *, size_t nvalues);
void	 dialect_session_idle(const struct dialect *, struct buf *,
	    const char *wait_timeout, unsigned transaction_s);
void	 dialect_upsert_alias(const struct dialect *, struct buf *);
void	 dialect_upsert_value(const struct dialect *, struct buf *,
	    const char *column);
const char *dialect_binlog_position(const struct dialect *,
	    unsigned long version);
int	 dialect_error(const struct dialect *, unsigned err);
int	 dialect_statement_error(const struct dialect *, unsigned err);

#endif /* DIALECT_H */
