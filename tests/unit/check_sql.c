/* Unit tests for sql.c: named parameters, the select rules, the claim. */
#include "rowq.h"
#include "dialect.h"
#include "check_shape.h"

#include <check.h>
#include "unit.h"
#include <stdlib.h>
#include <string.h>

static struct sql q;
static char err[256];

static void
compile_ok(const char *text)
{
	memset(&q, 0, sizeof(q));
	err[0] = '\0';
	ck_assert_msg(sql_compile(&q, text, err, sizeof(err)) == 0,
	    "%s: %s", text, err);
}

static void
compile_bad(const char *text, const char *why)
{
	memset(&q, 0, sizeof(q));
	err[0] = '\0';
	ck_assert_int_eq(sql_compile(&q, text, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, why) != NULL, "%s: got %s", text, err);
	sql_free(&q);
}

START_TEST(test_named_to_positional)
{
	compile_ok("UPDATE email SET status = 'sent', n = :attempt WHERE id = :id");
	ck_assert_str_eq(q.positional,
	    "UPDATE email SET status = 'sent', n = ? WHERE id = ?");
	ck_assert_uint_eq(q.nparams, 2);
	ck_assert_str_eq(q.params[0], "attempt");
	ck_assert_str_eq(q.params[1], "id");
	sql_free(&q);
}
END_TEST

START_TEST(test_literals_and_comments_are_not_parameters)
{
	compile_ok("UPDATE t SET a = ':x', b = \"b:y\", `c:z` = 1 -- note: :no\n"
	    "# also :no\n/* and :no */ WHERE id = :id");
	ck_assert_uint_eq(q.nparams, 1);
	ck_assert_str_eq(q.params[0], "id");
	ck_assert_ptr_nonnull(strstr(q.positional, "':x'"));
	ck_assert_ptr_nonnull(strstr(q.positional, "`c:z`"));
	sql_free(&q);
}
END_TEST

START_TEST(test_escapes_in_strings)
{
	compile_ok("UPDATE t SET a = 'it''s :x', b = 'a\\':y' WHERE id = :id");
	ck_assert_uint_eq(q.nparams, 1);
	sql_free(&q);
}
END_TEST

START_TEST(test_assignment_and_double_colon)
{
	compile_ok("UPDATE t SET a = (@v := :val), b = 'x::y' WHERE id=:id");
	ck_assert_uint_eq(q.nparams, 2);
	ck_assert_str_eq(q.params[0], "val");
	ck_assert_ptr_nonnull(strstr(q.positional, "@v := ?"));
	sql_free(&q);
	compile_ok("SELECT a::b FROM t");
	ck_assert_uint_eq(q.nparams, 0);
	sql_free(&q);
}
END_TEST

START_TEST(test_repeated_parameter)
{
	compile_ok("UPDATE t SET a = :id WHERE id = :id");
	ck_assert_uint_eq(q.nparams, 2);
	ck_assert_str_eq(q.positional, "UPDATE t SET a = ? WHERE id = ?");
	sql_free(&q);
}
END_TEST

START_TEST(test_trailing_semicolon_and_space)
{
	compile_ok("UPDATE t SET a = 1 WHERE id = :id ;  \n");
	ck_assert_str_eq(q.positional, "UPDATE t SET a = 1 WHERE id = ?");
	sql_free(&q);
}
END_TEST

START_TEST(test_errors)
{
	compile_bad("UPDATE t SET a = ? WHERE id = :id", "positional");
	compile_bad("UPDATE t SET a = 1; DELETE FROM t", "one statement");
	compile_bad("UPDATE t SET a = 'open", "unterminated");
	compile_bad("UPDATE t /* open", "unterminated comment");
	compile_bad("   ", "empty");
}
END_TEST

START_TEST(test_select_rules)
{
	ck_assert_int_eq(sql_check_select("SELECT id FROM t WHERE s = 'w' "
	    "ORDER BY id", err, sizeof(err)), 0);
	ck_assert_int_eq(sql_check_select("SELECT id FROM t WHERE id IN "
	    "(SELECT id FROM u LIMIT 5)", err, sizeof(err)), 0);
	ck_assert_int_eq(sql_check_select("SELECT 'limit' AS x, `limit` "
	    "FROM t", err, sizeof(err)), 0);
	ck_assert_int_eq(sql_check_select("SELECT id FROM t LIMIT 10", err,
	    sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "LIMIT"));
	ck_assert_int_eq(sql_check_select("SELECT id FROM t for  update",
	    err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "locking"));
	ck_assert_int_eq(sql_check_select("SELECT id FROM t LOCK IN SHARE MODE",
	    err, sizeof(err)), -1);
	ck_assert_int_eq(sql_check_select("SELECT id FROM t SKIP LOCKED",
	    err, sizeof(err)), -1);
	ck_assert_int_eq(sql_check_select("UPDATE t SET a = 1", err,
	    sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "not a SELECT"));
}
END_TEST

START_TEST(test_claim_clause)
{
	char *c = sql_claim("SELECT id FROM t -- trailing comment", 10);

	ck_assert_str_eq(c, "SELECT id FROM t -- trailing comment\n"
	    "LIMIT 10 FOR UPDATE SKIP LOCKED");
	free(c);
}
END_TEST

/* What the plan check reads of a select, in check_plan_describe's words. */
static void
plan_reads(const char *select, unsigned long version, const char *want)
{
	struct buf b = { 0 };

	check_plan_describe(select, dialect_mariadb(), version, &b);
	ck_assert_msg(strcmp(b.data, want) == 0, "%s\n  read as: %s\n  "
	    "expected: %s", select, b.data, want);
	buf_free(&b);
}

/*
 * MariaDB runs what an executable comment holds (slash, star, '!'), and
 * what "M!" or a version it has holds; a version it has not, and a plain
 * comment, it skips.  The plan check reads the select the same way.
 */
START_TEST(test_executable_comments_read_as_the_server_does)
{
	plan_reads("SELECT id FROM email WHERE status = 'waiting' ORDER BY id",
	    101100, "table email, fixed status, order id");
	plan_reads("SELECT id FROM email /*! WHERE status = 'waiting' */ "
	    "ORDER BY id", 101100, "table email, fixed status, order id");
	plan_reads("SELECT id FROM email WHERE status = 'waiting' "
	    "/*!50100 AND kind = 'x' */ /*M!100500 ORDER BY kind, id */",
	    101100, "table email, fixed status kind, order kind id");
	/* Not for this server: a comment. */
	plan_reads("SELECT id FROM email WHERE status = 'waiting' "
	    "/*!110500 AND kind = 'x' */ ORDER BY id", 101100,
	    "table email, fixed status, order id");
	plan_reads("SELECT id FROM email /* WHERE status = 'waiting' */ "
	    "ORDER BY id", 101100, "table email, fixed, order id");
	/* A string holding the closer does not close it. */
	plan_reads("SELECT id FROM email /*! WHERE note <> '*/' AND "
	    "status = 'w' */ ORDER BY id", 101100,
	    "table email, fixed status, order id");
	/* An optimizer hint is no code. */
	plan_reads("SELECT /*+ NO_RANGE_OPTIMIZATION(email) */ id FROM email "
	    "WHERE status = 'w' ORDER BY id", 101100,
	    "table email, fixed status, order id");
}
END_TEST

START_TEST(test_tokenize_server)
{
	const char *text = "SELECT /*!40001 SQL_NO_CACHE */ id FROM t";
	struct sql_token *t = NULL;
	size_t n = 0;

	ck_assert_int_eq(sql_tokenize(text, &t, &n, err, sizeof(err)), 0);
	ck_assert_uint_eq(n, 5);
	ck_assert_int_eq(t[1].kind, SQL_TOKEN_EXEC_COMMENT);
	free(t);
	ck_assert_int_eq(sql_tokenize_server(text, 101100, true, &t, &n, err,
	    sizeof(err)), 0);
	ck_assert_uint_eq(n, 5);
	ck_assert(sql_token_is(text, &t[1], "SQL_NO_CACHE"));
	free(t);
	ck_assert_int_eq(sql_tokenize_server("SELECT /*! 1", 101100, true, &t, &n,
	    err, sizeof(err)), -1);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("sql");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_named_to_positional);
	tcase_add_test(tc, test_literals_and_comments_are_not_parameters);
	tcase_add_test(tc, test_escapes_in_strings);
	tcase_add_test(tc, test_assignment_and_double_colon);
	tcase_add_test(tc, test_repeated_parameter);
	tcase_add_test(tc, test_trailing_semicolon_and_space);
	tcase_add_test(tc, test_errors);
	tcase_add_test(tc, test_select_rules);
	tcase_add_test(tc, test_claim_clause);
	tcase_add_test(tc, test_executable_comments_read_as_the_server_does);
	tcase_add_test(tc, test_tokenize_server);
	suite_add_tcase(s, tc);
	return unit_run(s);
}
