/*
 * db_private.h: the connection and statement as libmariadb sees them,
 * for the database layer's own files (db*.c), which include <mysql.h>,
 * and wake_binlog.c, which follows the binary log on a connection of
 * db.c's.
 */
#ifndef ROWQ_DB_PRIVATE_H
#define ROWQ_DB_PRIVATE_H

#include <mysql.h>

struct db {
	MYSQL		*mysql;
	char		 error[512];
	unsigned	 errnum;
	const struct dialect *dialect;	/* the server's family, once connected */
	bool		 bulk;		/* the server takes array binding */
	bool		 status_known;	/* see db_refresh_status */
	char		 where[300];	/* "HOST:PORT" or the socket */
	int64_t		 writable_ms;	/* when last seen writable */
	bool		 can_move;	/* host: lists another host */
};

struct db_stmt {
	struct db	*db;
	MYSQL_STMT	*stmt;
	size_t		 nparams;
	MYSQL_BIND	*params;
	size_t		 ncols;
	struct column	*cols;
	MYSQL_BIND	*results;
	char		*fetchbuf;	/* ncols * DB_FETCH_CHUNK */
	unsigned long	*lengths;
	my_bool		*nulls;
	my_bool		*errors;
	bool		*is_bit;
	bool		 no_bulk;	/* the server refused it in bulk */
};

/* db.c: an error, kept and classified */
enum db_status	 db_fail_stmt(struct db_stmt *);
enum db_status	 db_fail(struct db *, unsigned err, const char *msg);
enum db_status	 db_fail_mysql(struct db *);
enum db_status	 db_note_error(struct db *, unsigned err, const char *msg);
/* db.c: results as rows of text, for db_stmt.c too */
struct column	*db_columns(MYSQL_FIELD *, size_t n);
struct row	*rowset_add(struct rowset *, size_t ncols);
void		 db_bit_value(struct row *, size_t i, const unsigned char *raw,
		    unsigned long len);

#endif /* ROWQ_DB_PRIVATE_H */
