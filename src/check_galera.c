/*
 * check_galera.c: whether the database is a node of a Galera cluster, and
 * what that means for a queue, for check.c.  Row locks are a node's own:
 * workers claiming through two nodes can each lock the same row with FOR
 * UPDATE SKIP LOCKED and each run its handler; only at COMMIT does
 * certification make the second lose (error 1213), after its handler ran.
 * Lease mode's claim is a short transaction of its own that certifies
 * before any handler starts, so there a lost race costs a retried claim,
 * not a second run; and daemons that all claim through one node meet on
 * its locks as on a single server.
 */
#include "rowq.h"
#include "db.h"
#include "dialect.h"

#include <stdlib.h>
#include <string.h>

/*
 * Whether the server replicates through a Galera provider: wsrep_on, or a
 * provider loaded.  A server built without wsrep has neither variable,
 * and the query fails: no cluster.  On a node, says which in node.
 */
bool
check_galera_node(struct db *db, char *node, size_t len)
{
	struct rowset rs = { 0 };
	struct column *cols = NULL;
	size_t ncols = 0;
	bool galera = false;

	if (!db_dialect(db)->galera)
		return false;
	if (db_query(db, "SELECT @@GLOBAL.wsrep_on, @@GLOBAL.wsrep_provider, "
	    "@@GLOBAL.wsrep_node_name, (SELECT VARIABLE_VALUE FROM "
	    "information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = "
	    "'WSREP_CLUSTER_SIZE')", &rs, &cols, &ncols) == DB_OK &&
	    rs.nrows == 1 && ncols == 4) {
		const struct row *r = &rs.rows[0];
		galera = (r->value[0] != NULL && strcmp(r->value[0], "1") == 0) ||
		    (r->value[1] != NULL && r->value[1][0] != '\0' &&
		    strcmp(r->value[1], "none") != 0);
		snprintf(node, len, "%s of a cluster of %s",
		    r->value[2] ? r->value[2] : "?",
		    r->value[3] ? r->value[3] : "?");
	}
	rowset_free(&rs, ncols);
	columns_free(cols, ncols);
	return galera;
}

/*
 * A queue in transaction mode on a Galera node: a warning, not a refusal,
 * since every daemon may well claim through this one node.
 */
void
check_galera_queue(const struct queue *q, const char *node)
{
	if (q->lease.enabled)
		return;
	log_warnx("%s: queues.%s: the database is Galera node %s: row locks "
	    "are local to a node, so daemons that claim through different "
	    "nodes can each run the same row (the loser's COMMIT fails "
	    "certification, error 1213, after its handler ran); run every "
	    "daemon against one node, or use lease mode (lease:), whose "
	    "short claim transaction certifies before the handler starts",
	    q->where, q->name, node);
}
