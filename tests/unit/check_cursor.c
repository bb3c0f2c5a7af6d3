/*
 * Unit tests for cursor.c: which selects get the claim that scans the
 * primary key from a cursor, the statements derived from them, the reasons
 * for the others, and a worker's cursor.  What needs the database (is the
 * ORDER BY column the primary key?) is tested in 16_check_cursor.
 */
#include "rowq.h"

#include <check.h>
#include "unit.h"
#include "claim.h"
#include <stdlib.h>
#include <string.h>

static const char readme_select[] =
    "SELECT id, recipient, subject, attempts FROM email\n"
    "WHERE status = 'waiting'\n"
    "  AND (retry_at IS NULL OR retry_at <= UNIX_TIMESTAMP())\n"
    "ORDER BY id";

static struct cursor_claim c;

static void
derive_ok(const char *select)
{
	ck_assert_msg(cursor_derive(&c, select) == 0, "%s: refused: %s",
	    select, c.reason ? c.reason : "(no reason)");
	ck_assert_ptr_null(c.reason);
}

static void
refused(const char *select, const char *why)
{
	ck_assert_msg(cursor_derive(&c, select) == -1, "%s: accepted", select);
	ck_assert_ptr_nonnull(c.reason);
	ck_assert_msg(strstr(c.reason, why) != NULL, "%s: reason '%s', "
	    "expected '%s'", select, c.reason, why);
	cursor_free(&c);
}

/* The fast claim from key 41, batch 1, as text. */
static char *
fast(void)
{
	struct buf b = { 0 };

	cursor_claim_sql(&b, &c, CURSOR_AFTER, "41", 1, NULL);
	return buf_steal(&b);
}

static char *
start(void)
{
	struct buf b = { 0 };

	cursor_start_sql(&b, &c);
	return buf_steal(&b);
}

START_TEST(test_readme_select)
{
	struct buf b = { 0 };
	char *s;

	derive_ok(readme_select);
	ck_assert_str_eq(c.table, "email");
	ck_assert_ptr_null(c.schema);
	ck_assert_str_eq(c.key_column, "id");
	s = fast();
	ck_assert_str_eq(s, "SELECT id, recipient, subject, attempts FROM "
	    "email FORCE INDEX (PRIMARY)\n"
	    "WHERE id > 41 AND (status = 'waiting' AND (retry_at IS NULL OR "
	    "retry_at <= UNIX_TIMESTAMP()))\n"
	    "ORDER BY id\n"
	    "LIMIT 1 FOR UPDATE SKIP LOCKED");
	free(s);
	/* The fallback: from the start's key, included; batch 10. */
	cursor_claim_sql(&b, &c, CURSOR_AT, "7", 10, NULL);
	ck_assert_ptr_nonnull(strstr(b.data, "\nWHERE id >= 7 AND (status"));
	ck_assert_ptr_nonnull(strstr(b.data, "\nLIMIT 10 FOR UPDATE SKIP "
	    "LOCKED"));
	buf_free(&b);
	/* For messages: a ? where the key goes. */
	cursor_claim_sql(&b, &c, CURSOR_AFTER, NULL, 1, NULL);
	ck_assert_ptr_nonnull(strstr(b.data, "WHERE id > ? AND"));
	buf_free(&b);
	/* Columns of the claim's own after the select's (a lease's key). */
	cursor_claim_sql(&b, &c, CURSOR_AFTER, "41", 1,
	    ", @rowq_claim := 3, @rowq_c0 := `id`");
	ck_assert_ptr_nonnull(strstr(b.data, "SELECT id, recipient, subject, "
	    "attempts, @rowq_claim := 3, @rowq_c0 := `id` FROM email FORCE "
	    "INDEX (PRIMARY)\nWHERE id > 41 AND"));
	buf_free(&b);
	s = start();
	ck_assert_str_eq(s, "SELECT id FROM email\n"
	    "WHERE status = 'waiting' AND (retry_at IS NULL OR "
	    "retry_at <= UNIX_TIMESTAMP())\n"
	    "ORDER BY id\n"
	    "LIMIT 1");
	free(s);
	cursor_free(&c);
}
END_TEST

START_TEST(test_comments_are_dropped)
{
	char *s;

	/* A -- comment at the end of the WHERE would swallow " AND ...". */
	derive_ok("SELECT id /* FROM other JOIN x */, body FROM jobs # note\n"
	    "WHERE state = 0 -- ORDER BY prio DESC\n"
	    "ORDER BY id -- oldest first");
	s = fast();
	ck_assert_str_eq(s, "SELECT id , body FROM jobs FORCE INDEX (PRIMARY)\n"
	    "WHERE id > 41 AND (state = 0)\nORDER BY id\n"
	    "LIMIT 1 FOR UPDATE SKIP LOCKED");
	free(s);
	cursor_free(&c);
}
END_TEST

START_TEST(test_literals_with_keywords)
{
	char *s;

	derive_ok("SELECT id, 'a JOIN b' AS j FROM jobs "
	    "WHERE note <> 'ORDER BY x DESC, y UNION SELECT 1 FROM t' "
	    "AND tag = \"GROUP BY\" AND s = 'it''s -- not a comment' "
	    "ORDER BY id");
	s = fast();
	ck_assert_ptr_nonnull(strstr(s, "AND (note <> 'ORDER BY x DESC, y "
	    "UNION SELECT 1 FROM t' AND tag = \"GROUP BY\" AND s = 'it''s -- "
	    "not a comment')\nORDER BY id\n"));
	free(s);
	cursor_free(&c);
}
END_TEST

START_TEST(test_backquoted_names)
{
	char *s;

	derive_ok("SELECT `id`, `from`, `order` FROM `job queue` "
	    "WHERE `order` = 'w' ORDER BY `id` ASC");
	ck_assert_str_eq(c.table, "job queue");
	ck_assert_str_eq(c.key_column, "id");
	s = fast();
	ck_assert_str_eq(s, "SELECT `id`, `from`, `order` FROM `job queue` "
	    "FORCE INDEX (PRIMARY)\nWHERE `id` > 41 AND (`order` = 'w')\n"
	    "ORDER BY `id`\nLIMIT 1 FOR UPDATE SKIP LOCKED");
	free(s);
	cursor_free(&c);
	derive_ok("SELECT `a``b` FROM t ORDER BY `a``b`");
	ck_assert_str_eq(c.key_column, "a`b");
	cursor_free(&c);
}
END_TEST

START_TEST(test_alias_schema_and_hints)
{
	char *s;

	derive_ok("SELECT e.id, e.subject FROM email AS e "
	    "FORCE INDEX (status_id) WHERE e.status = 'waiting' "
	    "ORDER BY e.id");
	ck_assert_str_eq(c.table, "email");
	s = fast();
	ck_assert_str_eq(s, "SELECT e.id, e.subject FROM email AS e FORCE "
	    "INDEX (PRIMARY)\nWHERE e.id > 41 AND (e.status = 'waiting')\n"
	    "ORDER BY e.id\nLIMIT 1 FOR UPDATE SKIP LOCKED");
	free(s);
	/* The start keeps the select's hint: it reads the secondary index. */
	s = start();
	ck_assert_str_eq(s, "SELECT e.id FROM email AS e FORCE INDEX "
	    "(status_id)\nWHERE e.status = 'waiting'\nORDER BY e.id\nLIMIT 1");
	free(s);
	cursor_free(&c);

	derive_ok("SELECT id FROM app.email e USE INDEX FOR ORDER BY (x) "
	    "IGNORE KEY (y) ORDER BY app.email.id");
	ck_assert_str_eq(c.schema, "app");
	ck_assert_str_eq(c.table, "email");
	ck_assert_str_eq(c.table_ref, "app.email e");
	ck_assert_str_eq(c.hints, "USE INDEX FOR ORDER BY (x) IGNORE KEY (y)");
	ck_assert_ptr_null(c.where);
	s = fast();
	ck_assert_str_eq(s, "SELECT id FROM app.email e FORCE INDEX (PRIMARY)\n"
	    "WHERE app.email.id > 41\nORDER BY app.email.id\n"
	    "LIMIT 1 FOR UPDATE SKIP LOCKED");
	free(s);
	cursor_free(&c);
}
END_TEST

START_TEST(test_subqueries_in_where_and_columns)
{
	char *s;

	derive_ok("SELECT id, (SELECT COUNT(*) FROM log l WHERE l.job = j.id) "
	    "AS n FROM jobs j WHERE NOT EXISTS (SELECT 1 FROM holds h JOIN x "
	    "ON x.a = h.a WHERE h.job = j.id ORDER BY h.t DESC LIMIT 1) "
	    "ORDER BY id");
	ck_assert_str_eq(c.table, "jobs");
	s = fast();
	ck_assert_ptr_nonnull(strstr(s, "FROM jobs j FORCE INDEX (PRIMARY)\n"
	    "WHERE id > 41 AND (NOT EXISTS (SELECT 1 FROM holds h JOIN x ON "
	    "x.a = h.a WHERE h.job = j.id ORDER BY h.t DESC LIMIT 1))\n"));
	free(s);
	cursor_free(&c);
	/* OR at the top of the WHERE stays inside the parentheses. */
	derive_ok("SELECT id FROM t WHERE a = 1 OR b = 2 ORDER BY id");
	s = fast();
	ck_assert_ptr_nonnull(strstr(s, "WHERE id > 41 AND (a = 1 OR b = 2)"));
	free(s);
	cursor_free(&c);
}
END_TEST

START_TEST(test_refusals)
{
	refused("SELECT a.id FROM a JOIN b ON b.id = a.id ORDER BY a.id",
	    "joins tables");
	refused("SELECT a.id FROM a, b WHERE b.id = a.id ORDER BY a.id",
	    "joins tables");
	refused("SELECT a.id FROM a LEFT JOIN b USING (id) ORDER BY a.id",
	    "joins tables");
	refused("SELECT id FROM t ORDER BY id DESC", "orders by id DESC");
	refused("SELECT id FROM t ORDER BY prio, id", "more than one column");
	refused("SELECT id FROM t ORDER BY id + 0", "other than a column");
	refused("SELECT id FROM t ORDER BY FIELD(kind, 'a', 'b')",
	    "other than a column");
	refused("SELECT id FROM t ORDER BY u.id", "another table");
	refused("SELECT id FROM t WHERE s = 1", "no ORDER BY");
	refused("SELECT kind, MIN(id) FROM t GROUP BY kind ORDER BY kind",
	    "GROUP BY");
	refused("SELECT id FROM t WHERE s = 1 GROUP BY id HAVING COUNT(*) > 0 "
	    "ORDER BY id", "GROUP BY");
	refused("SELECT id FROM t WHERE s = 1 UNION SELECT id FROM u "
	    "ORDER BY id", "UNION");
	refused("SELECT id FROM (SELECT id FROM t) AS d ORDER BY id",
	    "subquery");
	refused("WITH w AS (SELECT id FROM t) SELECT id FROM w ORDER BY id",
	    "does not start with SELECT");
	refused("SELECT DISTINCT id FROM t ORDER BY id", "DISTINCT");
	refused("SELECT 1", "no FROM");
	refused("SELECT id FROM t PARTITION (p0) ORDER BY id", "partitions");
	refused("SELECT /*+ NO_RANGE_OPTIMIZATION(t) */ id FROM t ORDER BY id",
	    "optimizer hint");
	refused("SELECT id FROM t /*!50000 WHERE s = 1 */ ORDER BY id",
	    "executable comment");
	refused("SELECT id FROM t /*M!100000 WHERE s = 1 */ ORDER BY id",
	    "executable comment");
	refused("SELECT id FROM t WHERE s = 'open", "unterminated");
	refused("SELECT id FROM t WHERE ORDER BY id", "empty WHERE");
}
END_TEST

/* ORDER BY another column passes here; cursor_confirm asks the table. */
START_TEST(test_other_column_needs_the_database)
{
	derive_ok("SELECT id FROM t WHERE s = 1 ORDER BY created_at");
	ck_assert_str_eq(c.key_column, "created_at");
	cursor_free(&c);
}
END_TEST

START_TEST(test_key_valid)
{
	ck_assert(cursor_key_valid("0", 1));
	ck_assert(cursor_key_valid("18446744073709551615", 20));
	ck_assert(cursor_key_valid("-9223372036854775808", 20));
	ck_assert(!cursor_key_valid("", 0));
	ck_assert(!cursor_key_valid("-", 1));
	ck_assert(!cursor_key_valid("123456789012345678901", 21));
	ck_assert(!cursor_key_valid("1 OR 1", 6));
	ck_assert(!cursor_key_valid("1e3", 3));
	ck_assert(!cursor_key_valid("0x10", 4));
	ck_assert(!cursor_key_valid(NULL, 0));
}
END_TEST

START_TEST(test_cursor_state)
{
	struct cursor_state cs = { 0 };
	int64_t t = 5000;

	/* No key yet: fall back. */
	ck_assert(cursor_fallback_due(&cs, t));
	ck_assert_int_eq(cursor_claimed(&cs, CURSOR_AT, "17", 2, t), 0);
	ck_assert_str_eq(cs.last, "17");
	ck_assert(!cursor_fallback_due(&cs, t + 10));
	/* A batch: the cursor is its last key. */
	ck_assert_int_eq(cursor_claimed(&cs, CURSOR_AFTER, "27", 2, t + 10), 0);
	ck_assert_str_eq(cs.last, "27");
	/* At least once a second... */
	ck_assert(!cursor_fallback_due(&cs, t + CURSOR_FALLBACK_MS - 1));
	ck_assert(cursor_fallback_due(&cs, t + CURSOR_FALLBACK_MS));
	/* ...and every CURSOR_FALLBACK_CLAIMS claims. */
	ck_assert_int_eq(cursor_claimed(&cs, CURSOR_AT, "30", 2, t + 20), 0);
	for (int i = 0; i < CURSOR_FALLBACK_CLAIMS - 1; i++)
		cursor_claimed(&cs, CURSOR_AFTER, "31", 2, t + 20);
	ck_assert(!cursor_fallback_due(&cs, t + 20));
	cursor_claimed(&cs, CURSOR_AFTER, "32", 2, t + 20);
	ck_assert(cursor_fallback_due(&cs, t + 20));
	/* An empty fast claim: fall back at once. */
	cursor_claimed(&cs, CURSOR_AT, "40", 2, t + 30);
	ck_assert_int_eq(cursor_claimed(&cs, CURSOR_AFTER, NULL, 0, t + 30), 0);
	ck_assert(cursor_fallback_due(&cs, t + 30));
	/* An empty fallback: the next is a fallback too. */
	ck_assert_int_eq(cursor_claimed(&cs, CURSOR_AT, NULL, 0, t + 40), 0);
	ck_assert(cursor_fallback_due(&cs, t + 40));
	/* A key that cannot go into the text rewinds. */
	cursor_claimed(&cs, CURSOR_AT, "50", 2, t + 50);
	ck_assert_int_eq(cursor_claimed(&cs, CURSOR_AFTER, "5;x", 3, t + 50),
	    -1);
	ck_assert(cursor_fallback_due(&cs, t + 50));
	/* A rollback: rewind. */
	cursor_claimed(&cs, CURSOR_AT, "60", 2, t + 60);
	cursor_rewind(&cs);
	ck_assert(cursor_fallback_due(&cs, t + 60));
}
END_TEST

START_TEST(test_tokenizer)
{
	struct sql_token *t;
	size_t n;
	char err[64];
	const char *s = "SELECT `a``b`, 'x''y' -- c\n, f(1.5e-3) <=> @v";

	ck_assert_int_eq(sql_tokenize(s, &t, &n, err, sizeof(err)), 0);
	ck_assert_uint_eq(n, 12);
	ck_assert_int_eq(t[1].kind, SQL_TOKEN_NAME);
	ck_assert_uint_eq(t[1].len, 6);
	ck_assert_int_eq(t[3].kind, SQL_TOKEN_STRING);
	ck_assert_int_eq(t[7].kind, SQL_TOKEN_NUMBER);
	ck_assert_uint_eq(t[7].len, 6);
	ck_assert_int_eq(t[7].depth, 1);
	ck_assert(sql_token_is(s, &t[9], "<=>"));
	free(t);
	ck_assert_int_eq(sql_tokenize("SELECT 'x", &t, &n, err, sizeof(err)),
	    -1);
	ck_assert_ptr_nonnull(strstr(err, "unterminated"));
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("cursor");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_readme_select);
	tcase_add_test(tc, test_comments_are_dropped);
	tcase_add_test(tc, test_literals_with_keywords);
	tcase_add_test(tc, test_backquoted_names);
	tcase_add_test(tc, test_alias_schema_and_hints);
	tcase_add_test(tc, test_subqueries_in_where_and_columns);
	tcase_add_test(tc, test_refusals);
	tcase_add_test(tc, test_other_column_needs_the_database);
	tcase_add_test(tc, test_key_valid);
	tcase_add_test(tc, test_cursor_state);
	tcase_add_test(tc, test_tokenizer);
	suite_add_tcase(s, tc);
	return unit_run(s);
}
