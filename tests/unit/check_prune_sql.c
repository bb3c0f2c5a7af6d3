/*
 * check_prune_sql.c: prune_compile, a queue's prune: statement as rowq
 * runs it: a DELETE with LIMIT <chunk> and its count for --dry-run, a
 * CALL with the chunk in place of :chunk, and what it refuses, with why.
 */
#include "rowq.h"

#include <check.h>
#include "unit.h"
#include <stdlib.h>
#include <string.h>

#define NELEMS(a)	(sizeof(a) / sizeof((a)[0]))

static const struct {
	const char	*text;
	int		 chunk;
	const char	*chunk_sql;
	const char	*count_sql;	/* NULL: a CALL */
} valid[] = {
	{ "DELETE FROM email WHERE status = 'sent'", 1000,
	    "DELETE FROM email WHERE status = 'sent' LIMIT 1000",
	    "SELECT COUNT(*) FROM email WHERE status = 'sent'" },
	/* The ; at the end goes, and the white space becomes one space. */
	{ "DELETE FROM email\n  WHERE status = 'sent'\n    AND done_at < NOW() - INTERVAL 7 DAY;\n",
	    500,
	    "DELETE FROM email WHERE status = 'sent' AND done_at < NOW() - INTERVAL 7 DAY LIMIT 500",
	    "SELECT COUNT(*) FROM email WHERE status = 'sent' AND done_at < NOW() - INTERVAL 7 DAY" },
	/* ORDER BY stays in the chunk, not in the count. */
	{ "DELETE FROM email WHERE status = 'sent' ORDER BY id", 10,
	    "DELETE FROM email WHERE status = 'sent' ORDER BY id LIMIT 10",
	    "SELECT COUNT(*) FROM email WHERE status = 'sent'" },
	{ "delete low_priority quick ignore from shop.email where id < 5 order by id desc",
	    1,
	    "delete low_priority quick ignore from shop.email where id < 5 order by id desc LIMIT 1",
	    "SELECT COUNT(*) FROM shop.email where id < 5" },
	{ "DELETE FROM `old mail` WHERE `status` = 'sent'", 7,
	    "DELETE FROM `old mail` WHERE `status` = 'sent' LIMIT 7",
	    "SELECT COUNT(*) FROM `old mail` WHERE `status` = 'sent'" },
	{ "DELETE FROM email PARTITION (p1) WHERE status = 'sent'", 100,
	    "DELETE FROM email PARTITION (p1) WHERE status = 'sent' LIMIT 100",
	    "SELECT COUNT(*) FROM email PARTITION (p1) WHERE status = 'sent'" },
	/* A LIMIT, an ORDER or a WHERE inside a subquery is the subquery's. */
	{ "DELETE FROM email WHERE id IN (SELECT id FROM t WHERE x ORDER BY id LIMIT 5)",
	    3,
	    "DELETE FROM email WHERE id IN (SELECT id FROM t WHERE x ORDER BY id LIMIT 5) LIMIT 3",
	    "SELECT COUNT(*) FROM email WHERE id IN (SELECT id FROM t WHERE x ORDER BY id LIMIT 5)" },
	/* A comment at the end cannot swallow the LIMIT appended. */
	{ "DELETE FROM email WHERE status = 'sent' -- the old ones", 1000,
	    "DELETE FROM email WHERE status = 'sent' LIMIT 1000",
	    "SELECT COUNT(*) FROM email WHERE status = 'sent'" },
	{ "DELETE FROM email WHERE status = 'sent' # the old ones\n", 1000,
	    "DELETE FROM email WHERE status = 'sent' LIMIT 1000",
	    "SELECT COUNT(*) FROM email WHERE status = 'sent'" },
	{ "/* weekly */ DELETE FROM email WHERE status = 'sent' /* sent */", 2,
	    "DELETE FROM email WHERE status = 'sent' LIMIT 2",
	    "SELECT COUNT(*) FROM email WHERE status = 'sent'" },
	/* Words that only look like clauses, in strings and names. */
	{ "DELETE FROM email WHERE subject = 'LIMIT 5; RETURNING'", 1,
	    "DELETE FROM email WHERE subject = 'LIMIT 5; RETURNING' LIMIT 1",
	    "SELECT COUNT(*) FROM email WHERE subject = 'LIMIT 5; RETURNING'" },
	{ "DELETE FROM email WHERE `limit` = 1", 1,
	    "DELETE FROM email WHERE `limit` = 1 LIMIT 1",
	    "SELECT COUNT(*) FROM email WHERE `limit` = 1" },
	{ "CALL purge_email(:chunk)", 1000, "CALL purge_email(1000)", NULL },
	{ "call shop.purge_email( :chunk , 'sent' ) ;", 250,
	    "call shop.purge_email( 250 , 'sent' )", NULL },
	{ "CALL purge(:chunk, :chunk)", 9, "CALL purge(9, 9)", NULL },
	/* A ? in a string is no parameter. */
	{ "CALL purge(:chunk, 'why?')", 5, "CALL purge(5, 'why?')", NULL },
};

START_TEST(test_valid)
{
	struct prune_policy pp = { .text = xstrdup(valid[_i].text),
	    .chunk = valid[_i].chunk };
	char err[256] = "";

	ck_assert_msg(prune_compile(&pp, err, sizeof(err)) == 0,
	    "\"%s\" refused: %s", valid[_i].text, err);
	ck_assert_str_eq(pp.chunk_sql, valid[_i].chunk_sql);
	if (valid[_i].count_sql == NULL) {
		ck_assert(pp.is_call);
		ck_assert_ptr_null(pp.count_sql);
	} else {
		ck_assert(!pp.is_call);
		ck_assert_str_eq(pp.count_sql, valid[_i].count_sql);
	}
	prune_policy_free(&pp);
}
END_TEST

static const struct {
	const char	*text;
	const char	*err;		/* the start of the message */
} refused[] = {
	{ "", "an empty statement" },
	{ "  ;  ", "an empty statement" },
	{ "-- nothing\n", "an empty statement" },
	{ "DELETE FROM email", "a DELETE without WHERE would remove the "
	    "waiting rows too" },
	{ "DELETE FROM email ORDER BY id", "a DELETE without WHERE" },
	{ "DELETE FROM email ORDER BY (SELECT 1 FROM t WHERE x)",
	    "a DELETE without WHERE" },
	{ "DELETE FROM email WHERE status = 'sent' LIMIT 10",
	    "has LIMIT: rowq appends LIMIT <chunk> itself" },
	{ "DELETE FROM email WHERE status = 'sent' RETURNING id",
	    "RETURNING: rowq reads no rows back from a prune" },
	{ "DELETE email FROM email JOIN t USING (id) WHERE t.x",
	    "a DELETE of several tables (DELETE t FROM ...) cannot take LIMIT" },
	{ "DELETE", "a DELETE of several tables" },
	{ "DELETE FROM email USING email, t WHERE email.id = t.id",
	    "a DELETE of one table, with nothing but WHERE and ORDER BY" },
	{ "DELETE FROM email AS e WHERE e.status = 'sent'",
	    "a DELETE of one table, with nothing but WHERE and ORDER BY" },
	{ "DELETE FROM email e WHERE e.status = 'sent'",
	    "a DELETE of one table, with nothing but WHERE and ORDER BY" },
	{ "DELETE FROM email WHERE status = :status",
	    ":status: a prune DELETE takes no parameters" },
	{ "DELETE FROM email WHERE id < :chunk",
	    ":chunk: a prune DELETE takes no parameters" },
	{ "DELETE FROM email WHERE status = 'sent'; DELETE FROM t WHERE x",
	    "one statement only, not several separated by ;" },
	{ "DELETE FROM email WHERE status = 'sent';;",
	    "one statement only" },
	{ "DELETE /*! QUICK */ FROM email WHERE status = 'sent'",
	    "an executable comment or optimizer hint" },
	{ "DELETE /*+ NO_INDEX(email) */ FROM email WHERE x",
	    "an executable comment or optimizer hint" },
	{ "CALL purge_email()", "a CALL must take :chunk" },
	{ "CALL purge_email(1000)", "a CALL must take :chunk" },
	{ "CALL purge_email(:chunk, :status)",
	    ":status: a prune CALL takes only :chunk" },
	{ "TRUNCATE email", "a DELETE or a CALL, which rowq can bound, not "
	    "TRUNCATE" },
	{ "UPDATE email SET status = 'gone' WHERE status = 'sent'",
	    "a DELETE or a CALL, which rowq can bound, not UPDATE" },
	{ "DELETE FROM email WHERE subject = 'unterminated",
	    "unterminated quoted string" },
	{ "CALL purge(:chunk) /* unterminated", "unterminated comment" },
};

START_TEST(test_refused)
{
	struct prune_policy pp = { .text = xstrdup(refused[_i].text),
	    .chunk = 1000 };
	const char *want = refused[_i].err;
	char err[256] = "";

	ck_assert_msg(prune_compile(&pp, err, sizeof(err)) == -1,
	    "\"%s\" accepted as \"%s\"", refused[_i].text, pp.chunk_sql);
	ck_assert_msg(err[0] != '\0', "\"%s\": no reason", refused[_i].text);
	ck_assert_msg(strncmp(err, want, strlen(want)) == 0,
	    "\"%s\": \"%s\", not \"%s...\"", refused[_i].text, err, want);
	ck_assert_ptr_null(pp.chunk_sql);
	ck_assert_ptr_null(pp.count_sql);
	prune_policy_free(&pp);
}
END_TEST

/* What is neither a DELETE nor a CALL is named by its first word, cut. */
START_TEST(test_first_word)
{
	struct prune_policy pp = {
	    .text = xstrdup("a_very_long_word_of_thirty_chars x"), .chunk = 1 };
	char err[256];

	ck_assert_int_eq(prune_compile(&pp, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "a DELETE or a CALL, which rowq can bound, not "
	    "a_very_long_word_of_");
	prune_policy_free(&pp);
}
END_TEST

/* A message longer than the caller's buffer is cut, not overflowed. */
START_TEST(test_small_err)
{
	struct prune_policy pp = { .text = xstrdup("DELETE FROM email"),
	    .chunk = 1 };
	char err[16];

	memset(err, 'x', sizeof(err));
	ck_assert_int_eq(prune_compile(&pp, err, 8), -1);
	ck_assert_int_eq(strlen(err), 7);
	ck_assert_int_eq(err[8], 'x');
	prune_policy_free(&pp);
}
END_TEST

/* The largest chunk, written out whole. */
START_TEST(test_chunk_max)
{
	struct prune_policy pp = {
	    .text = xstrdup("DELETE FROM t WHERE x"), .chunk = PRUNE_CHUNK_MAX };
	char err[256], want[64];

	ck_assert_int_eq(prune_compile(&pp, err, sizeof(err)), 0);
	snprintf(want, sizeof(want), "DELETE FROM t WHERE x LIMIT %d",
	    PRUNE_CHUNK_MAX);
	ck_assert_str_eq(pp.chunk_sql, want);
	prune_policy_free(&pp);
}
END_TEST

static Suite *
prune_sql_suite(void)
{
	Suite *s = suite_create("prune_sql");
	TCase *tc = tcase_create("prune_sql");

	tcase_add_loop_test(tc, test_valid, 0, NELEMS(valid));
	tcase_add_loop_test(tc, test_refused, 0, NELEMS(refused));
	tcase_add_test(tc, test_first_word);
	tcase_add_test(tc, test_small_err);
	tcase_add_test(tc, test_chunk_max);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return unit_run(prune_sql_suite());
}
