/*
 * Unit tests for dialect.c: which family a server's greeting names, and
 * the SQL text each family is sent for the same thing (what the servers
 * then make of it is for the integration tests, on each server).
 */
#include "rowq.h"
#include "dialect.h"

#include <check.h>
#include "unit.h"
#include <string.h>

START_TEST(test_family)
{
	ck_assert_ptr_eq(dialect_of("10.11.6-MariaDB-0+deb12u1"),
	    dialect_mariadb());
	ck_assert_ptr_eq(dialect_of("11.8.9-MariaDB-0+deb13u1 from Debian"),
	    dialect_mariadb());
	/* Through replication's old prefix, as some proxies still send. */
	ck_assert_ptr_eq(dialect_of("5.5.5-10.6.12-MariaDB-log"),
	    dialect_mariadb());
	ck_assert_ptr_eq(dialect_of("9.7.4-2"), dialect_mysql());
	ck_assert_ptr_eq(dialect_of("8.0.36-28 Percona Server"),
	    dialect_mysql());
	ck_assert_ptr_eq(dialect_of(NULL), dialect_mysql());
	ck_assert_str_eq(dialect_mariadb()->explain, "EXPLAIN ");
	ck_assert_str_eq(dialect_mysql()->explain,
	    "EXPLAIN FORMAT=TRADITIONAL ");
	/* MariaDB can assign a SET list at once; MySQL never does. */
	ck_assert_str_eq(dialect_mariadb()->simultaneous_assignment,
	    "SIMULTANEOUS_ASSIGNMENT");
	ck_assert_ptr_null(dialect_mysql()->simultaneous_assignment);
}
END_TEST

/* The same statement, made the session's and run with two values. */
static void
stmt_as(const struct dialect *d, const char *text, const struct value *v,
    size_t n, const char *want_prepare, const char *want_execute)
{
	struct dialect_stmt s;
	struct buf prepare = { 0 }, out = { 0 };

	ck_assert_int_eq(dialect_stmt_init(&s, d, "rowq_x", text, &prepare),
	    0);
	ck_assert_str_eq(prepare.len ? prepare.data : "", want_prepare);
	ck_assert(dialect_stmt_execute(&s, &out, v, n));
	ck_assert_str_eq(out.data, want_execute);
	/* Wrong number of values: nothing written. */
	buf_reset(&out);
	ck_assert(!dialect_stmt_execute(&s, &out, v, n - 1));
	ck_assert_uint_eq(out.len, 0);
	dialect_stmt_free(&s);
	buf_free(&prepare);
	buf_free(&out);
}

START_TEST(test_stmt)
{
	/* A '?' in a string or a comment is no value's place. */
	const char *text = "UPDATE t SET s = '?' /* ? */ WHERE id = ? AND "
	    "k = ?";
	struct value v[2] = {
		{ .type = VALUE_INT, .i = -712 },
		{ .type = VALUE_BLOB, .s = "1\0\x7f", .len = 3 },
	};

	stmt_as(dialect_mariadb(), text, v, 2,
	    "PREPARE rowq_x FROM X'5550444154452074205345542073203d20273f"
	    "27202f2a203f202a2f205748455245206964203d203f20414e44206b203d"
	    "203f'",
	    "EXECUTE rowq_x USING -712, X'31007f'");
	stmt_as(dialect_mysql(), text, v, 2, "",
	    "UPDATE t SET s = '?' /* ? */ WHERE id = -712 AND k = "
	    "CAST(X'31007f' AS BINARY)\n");
}
END_TEST

START_TEST(test_stmt_values)
{
	struct dialect_stmt s;
	struct buf prepare = { 0 }, out = { 0 };
	struct value null = { .type = VALUE_NULL };
	struct value big = { .type = VALUE_INT, .is_unsigned = true,
	    .i = (long long)18446744073709551615ULL };
	struct value text = { .type = VALUE_TEXT, .s = "x", .len = 1 };

	ck_assert_int_eq(dialect_stmt_init(&s, dialect_mysql(), "n",
	    "SELECT ?", &prepare), 0);
	ck_assert(dialect_stmt_execute(&s, &out, &null, 1));
	ck_assert_str_eq(out.data, "SELECT NULL\n");
	buf_reset(&out);
	ck_assert(dialect_stmt_execute(&s, &out, &big, 1));
	ck_assert_str_eq(out.data, "SELECT 18446744073709551615\n");
	/* Text is never written as a literal: refused, nothing left. */
	buf_reset(&out);
	buf_puts(&out, "kept;");
	ck_assert(!dialect_stmt_execute(&s, &out, &text, 1));
	ck_assert_str_eq(out.data, "kept;");
	dialect_stmt_free(&s);
	/* A statement with no value at all. */
	ck_assert_int_eq(dialect_stmt_init(&s, dialect_mariadb(), "g",
	    "SELECT 1", &prepare), 0);
	buf_reset(&out);
	ck_assert(dialect_stmt_execute(&s, &out, NULL, 0));
	ck_assert_str_eq(out.data, "EXECUTE g");
	dialect_stmt_free(&s);
	/* Text the tokenizer cannot read apart is refused. */
	ck_assert_int_eq(dialect_stmt_init(&s, dialect_mysql(), "n",
	    "SELECT 'open", &prepare), -1);
	buf_free(&prepare);
	buf_free(&out);
}
END_TEST

START_TEST(test_session_idle)
{
	struct buf b = { 0 };

	dialect_session_idle(dialect_mariadb(), &b, "60", 35);
	ck_assert_str_eq(b.data, "SET SESSION wait_timeout = 60, "
	    "idle_transaction_timeout = 35, idle_write_transaction_timeout = "
	    "35, idle_readonly_transaction_timeout = 35");
	buf_reset(&b);
	dialect_session_idle(dialect_mariadb(), &b, NULL, 5);
	ck_assert_str_eq(b.data, "SET SESSION idle_transaction_timeout = 5, "
	    "idle_write_transaction_timeout = 5, "
	    "idle_readonly_transaction_timeout = 5");
	buf_reset(&b);
	dialect_session_idle(dialect_mysql(), &b, "60", 35);
	ck_assert_str_eq(b.data, "SET SESSION wait_timeout = 60");
	buf_free(&b);
}
END_TEST

START_TEST(test_upsert_binlog_errors)
{
	struct buf b = { 0 };

	dialect_upsert_alias(dialect_mariadb(), &b);
	dialect_upsert_value(dialect_mariadb(), &b, "seen");
	ck_assert_str_eq(b.data, "VALUES(seen)");
	buf_reset(&b);
	dialect_upsert_alias(dialect_mysql(), &b);
	dialect_upsert_value(dialect_mysql(), &b, "seen");
	ck_assert_str_eq(b.data, " AS rowq_newrowq_new.seen");
	buf_free(&b);

	ck_assert_str_eq(dialect_binlog_position(dialect_mariadb(), 110809),
	    "SHOW MASTER STATUS");
	ck_assert_str_eq(dialect_binlog_position(dialect_mysql(), 80036),
	    "SHOW MASTER STATUS");
	ck_assert_str_eq(dialect_binlog_position(dialect_mysql(), 90704),
	    "SHOW BINARY LOG STATUS");

	/* MySQL's idle end is a lost link there, an unknown number here. */
	ck_assert_int_eq(dialect_error(dialect_mysql(), 4031), DB_RECONNECT);
	ck_assert_int_eq(dialect_error(dialect_mysql(), 3024), DB_RETRY);
	ck_assert_int_eq(dialect_error(dialect_mariadb(), 4031), -1);
	ck_assert_int_eq(dialect_error(dialect_mysql(), 1213), -1);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("dialect");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_family);
	tcase_add_test(tc, test_stmt);
	tcase_add_test(tc, test_stmt_values);
	tcase_add_test(tc, test_session_idle);
	tcase_add_test(tc, test_upsert_binlog_errors);
	suite_add_tcase(s, tc);
	return unit_run(s);
}
