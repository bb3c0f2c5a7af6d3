/* Unit tests for sql_update.c: what an UPDATE writes, for check_flow.c. */
#include "rowq.h"
#include "check_flow.h"

#include <check.h>
#include "unit.h"
#include <stdlib.h>
#include <string.h>

/* The column reread and the assignment that rereads it, or "-". */
static char *
reread(const char *text)
{
	struct buf col = { 0 }, as = { 0 }, out = { 0 };

	if (sql_update_reread(text, &col, &as) == 1)
		buf_printf(&out, "%s: %s", col.data, as.data);
	else
		buf_puts(&out, "-");
	buf_free(&col);
	buf_free(&as);
	return buf_steal(&out);
}

static void
reread_is(const char *text, const char *want)
{
	char *got = reread(text);

	ck_assert_msg(strcmp(got, want) == 0, "%s: got \"%s\", want \"%s\"",
	    text, got, want);
	free(got);
}

START_TEST(test_reread_the_trap)
{
	reread_is("UPDATE batch SET pending = pending - 1, status = "
	    "IF(pending = 1, 'ready', status) WHERE id = :batch_id",
	    "pending: status = IF(pending = 1, 'ready', status)");
	/* Quoted, qualified, another case: the same column. */
	reread_is("UPDATE b SET `Pending` = 0, b.status = IF(b.PENDING = 0, "
	    "'x', 'y') WHERE id = 1", "Pending: b.status = IF(b.PENDING = 0, "
	    "'x', 'y')");
	/* A later assignment that reads an earlier one, two apart. */
	reread_is("UPDATE t SET a = 1, b = 2, c = a + b WHERE id = :id",
	    "a: c = a + b");
}
END_TEST

START_TEST(test_reread_not)
{
	/* Reading itself, or a column not assigned before, is fine. */
	reread_is("UPDATE batch SET status = IF(pending = 1, 'ready', status), "
	    "pending = pending - 1 WHERE id = :batch_id", "-");
	reread_is("UPDATE t SET n = n + 1, m = m - 1 WHERE id = :id", "-");
	/* A literal, a comment, a function of the same name, the WHERE. */
	reread_is("UPDATE t SET a = 1, b = 'a', c = /* a */ 2 WHERE a = 1", "-");
	reread_is("UPDATE t SET `left` = 1, b = LEFT('x', 1) WHERE id = 1", "-");
	/* A parameter of the same name, and a JSON key, read no column. */
	reread_is("UPDATE j SET attempt = attempt + 1, errors = "
	    "JSON_ARRAY_APPEND(errors, '$', JSON_OBJECT('attempt', :attempt, "
	    "'error', :error)) WHERE id = :id", "-");
	/* Not an UPDATE: an upsert's list is not read. */
	reread_is("INSERT INTO t (a) VALUES (1) ON DUPLICATE KEY UPDATE "
	    "a = a + 1, b = a", "-");
	reread_is("DELETE FROM t WHERE id = :id", "-");
	/* A subquery's own SET-like words stay inside it. */
	reread_is("UPDATE t SET a = (SELECT MAX(x) FROM u WHERE u.a = 1), "
	    "b = 2 WHERE id = 1", "-");
}
END_TEST

/* The tables, joined by spaces, or "-" when not an UPDATE. */
static void
tables_are(const char *text, const char *want)
{
	char **t;
	size_t n;
	struct buf b = { 0 };

	if (sql_update_tables(text, &t, &n) != 1)
		buf_puts(&b, "-");
	else {
		for (size_t k = 0; k < n; k++)
			buf_printf(&b, "%s%s", k ? " " : "", t[k]);
		sql_update_tables_free(t, n);
	}
	ck_assert_msg(strcmp(b.data ? b.data : "", want) == 0,
	    "%s: got \"%s\", want \"%s\"", text, b.data ? b.data : "", want);
	buf_free(&b);
}

START_TEST(test_tables)
{
	tables_are("UPDATE batch SET pending = pending - 1 WHERE id = 1",
	    "batch");
	tables_are("UPDATE LOW_PRIORITY IGNORE shop.`batch` b SET n = 1",
	    "batch");
	tables_are("UPDATE task_edge JOIN task ON task.id = task_edge.child_id "
	    "SET task.parents_left = task.parents_left - 1 "
	    "WHERE task_edge.parent_id = :id", "task");
	/* Through an alias; a target without one: every table joined. */
	tables_are("UPDATE a, b AS x SET x.n = a.n WHERE a.id = x.id", "b");
	tables_are("UPDATE a, b x SET a.n = 1, x.m = 2", "a b");
	tables_are("UPDATE a JOIN b ON a.id = b.id SET n = 1", "a b");
	tables_are("UPDATE a LEFT JOIN (SELECT id FROM c) d USING (id) "
	    "STRAIGHT_JOIN e ON e.id = a.id SET a.n = 1, `e`.m = 2", "a e");
	tables_are("INSERT INTO item (a) VALUES (1)", "-");
}
END_TEST

START_TEST(test_counts)
{
	ck_assert_int_eq(sql_update_counts("UPDATE batch SET pending = "
	    "pending - 1 WHERE id = 1"), 1);
	ck_assert_int_eq(sql_update_counts("UPDATE batch b SET b.status = "
	    "'x', b.pending = GREATEST(b.`pending` - 1, 0)"), 1);
	/* Set to values that do not read the columns: no counter. */
	ck_assert_int_eq(sql_update_counts("UPDATE solid_queue_jobs SET "
	    "finished_at = UTC_TIMESTAMP(6), updated_at = UTC_TIMESTAMP(6) "
	    "WHERE id = :job_id"), 0);
	ck_assert_int_eq(sql_update_counts("UPDATE batch SET pending = 0, "
	    "status = IF(:pending = 1, 'a', 'b')"), 0);
	ck_assert_int_eq(sql_update_counts("DELETE FROM batch WHERE "
	    "pending = pending - 1"), 0);
}
END_TEST

START_TEST(test_select_table)
{
	char *t = sql_select_table("SELECT id, batch_id FROM item "
	    "WHERE status = 'waiting' ORDER BY id");

	ck_assert_str_eq(t, "item");
	free(t);
	t = sql_select_table("SELECT j.id, (SELECT 1 FROM x) FROM shop.`job` j "
	    "FORCE INDEX (waiting) STRAIGHT_JOIN customer c ON c.id = j.c");
	ck_assert_str_eq(t, "job");
	free(t);
	ck_assert_ptr_null(sql_select_table("SELECT 1"));
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("sql_update");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_reread_the_trap);
	tcase_add_test(tc, test_reread_not);
	tcase_add_test(tc, test_tables);
	tcase_add_test(tc, test_counts);
	tcase_add_test(tc, test_select_table);
	suite_add_tcase(s, tc);
	return unit_run(s);
}
