/*
 * check_recent.c: worker_recent.c, the rows a worker finished lately: the
 * hashes of a key and of a row, entries that count only once committed,
 * the window, forgetting, a full table, and recent_returned over a claim.
 */
#include "worker.h"

#include <check.h>
#include "unit.h"
#include <stdlib.h>
#include <string.h>

#define NELEMS(a)	(sizeof(a) / sizeof((a)[0]))

#define WINDOW	10000

static uint64_t
key(const char *s)
{
	return recent_key_hash(s, strlen(s));
}

/* Key and row hashes are never 0, the mark of an empty slot. */
START_TEST(test_hash)
{
	ck_assert(recent_hash("", 0, 0) != 0);
	ck_assert(recent_key_hash("", 0) != 0);
	ck_assert(recent_key_hash("1", 1) != recent_key_hash("2", 1));
	ck_assert(recent_key_hash("1", 1) == key("1"));
	/* Binary keys: the bytes after a zero byte count. */
	ck_assert(recent_key_hash("a\0b", 3) != recent_key_hash("a\0c", 3));
	ck_assert(recent_key_hash("a\0b", 3) != recent_key_hash("a", 1));
	/* Chained: the seed carries on, so a split makes no difference. */
	ck_assert(recent_hash("cd", 2, recent_hash("ab", 2, 0)) ==
	    recent_hash("abcd", 4, 0));
	ck_assert(recent_hash("ab", 2, 7) != recent_hash("ab", 2, 8));
}
END_TEST

/* A row of n values; NULL stands for SQL NULL. */
struct test_row {
	char		*value[4];
	size_t		 len[4];
	struct row	 row;
};

static void
row_set(struct test_row *t, const char *a, const char *b)
{
	const char *v[2] = { a, b };

	for (size_t i = 0; i < 2; i++) {
		t->value[i] = (char *)v[i];
		t->len[i] = v[i] != NULL ? strlen(v[i]) : 0;
	}
	t->row.value = t->value;
	t->row.len = t->len;
}

START_TEST(test_row_hash)
{
	struct test_row x, y;

	row_set(&x, "1", "sent");
	row_set(&y, "1", "sent");
	ck_assert(recent_row_hash(2, &x.row) == recent_row_hash(2, &y.row));
	row_set(&y, "1", "waiting");
	ck_assert(recent_row_hash(2, &x.row) != recent_row_hash(2, &y.row));
	/* NULL is not the empty string. */
	row_set(&x, "1", NULL);
	row_set(&y, "1", "");
	ck_assert(recent_row_hash(2, &x.row) != recent_row_hash(2, &y.row));
	/* Values do not run into each other. */
	row_set(&x, "ab", "c");
	row_set(&y, "a", "bc");
	ck_assert(recent_row_hash(2, &x.row) != recent_row_hash(2, &y.row));
	row_set(&x, NULL, "1");
	row_set(&y, "1", NULL);
	ck_assert(recent_row_hash(2, &x.row) != recent_row_hash(2, &y.row));
	/* Only the columns counted: the select's, not what lies beyond. */
	row_set(&x, "1", "a");
	row_set(&y, "1", "b");
	ck_assert(recent_row_hash(1, &x.row) == recent_row_hash(1, &y.row));
}
END_TEST

/* Counted once committed; a rollback forgets what it finished. */
START_TEST(test_commit_rollback)
{
	struct recent *r = recent_new();

	recent_add(r, key("1"), 11, "done", 1000);
	ck_assert_ptr_null(recent_match(r, key("1"), 11, 1001, WINDOW));
	recent_commit(r);
	ck_assert_str_eq(recent_match(r, key("1"), 11, 1001, WINDOW), "done");

	/* A rollback leaves what an earlier transaction committed. */
	recent_add(r, key("2"), 22, "retry", 1100);
	recent_rollback(r);
	ck_assert_ptr_null(recent_match(r, key("2"), 22, 1200, WINDOW));
	ck_assert_str_eq(recent_match(r, key("1"), 11, 1200, WINDOW), "done");
	/* A commit after the rollback does not bring it back. */
	recent_commit(r);
	ck_assert_ptr_null(recent_match(r, key("2"), 22, 1200, WINDOW));

	/* The row finished again: the newest statement and values count. */
	recent_add(r, key("1"), 12, "failed", 1300);
	recent_commit(r);
	ck_assert_ptr_null(recent_match(r, key("1"), 11, 1400, WINDOW));
	ck_assert_str_eq(recent_match(r, key("1"), 12, 1400, WINDOW),
	    "failed");
	recent_free(r);
}
END_TEST

/* A match is a finish at most window_ms ago, by this worker's clock. */
START_TEST(test_window)
{
	struct recent *r = recent_new();

	recent_add(r, key("1"), 11, "done", 1000);
	recent_commit(r);
	ck_assert_str_eq(recent_match(r, key("1"), 11, 1000, WINDOW), "done");
	ck_assert_str_eq(recent_match(r, key("1"), 11, 1000 + WINDOW, WINDOW),
	    "done");
	ck_assert_ptr_null(recent_match(r, key("1"), 11, 1001 + WINDOW,
	    WINDOW));
	ck_assert_ptr_null(recent_match(r, key("1"), 11, 1001, 0));
	recent_free(r);
}
END_TEST

START_TEST(test_forget)
{
	struct recent *r = recent_new();

	recent_add(r, key("1"), 11, "done", 1000);
	recent_add(r, key("2"), 22, "done", 1000);
	recent_commit(r);
	recent_forget(r, key("1"));
	ck_assert_ptr_null(recent_match(r, key("1"), 11, 1001, WINDOW));
	ck_assert_str_eq(recent_match(r, key("2"), 22, 1001, WINDOW), "done");
	recent_forget(r, key("3"));		/* never there: nothing */
	recent_forget(r, key("1"));		/* twice: nothing */
	ck_assert_str_eq(recent_match(r, key("2"), 22, 1001, WINDOW), "done");

	/* Forgotten while its transaction is open: the commit finds no row. */
	recent_add(r, key("4"), 44, "done", 1100);
	recent_forget(r, key("4"));
	recent_commit(r);
	ck_assert_ptr_null(recent_match(r, key("4"), 44, 1101, WINDOW));
	/* And the slot it left takes a row again. */
	recent_add(r, key("4"), 45, "retry", 1200);
	recent_commit(r);
	ck_assert_str_eq(recent_match(r, key("4"), 45, 1201, WINDOW), "retry");
	recent_free(r);
}
END_TEST

/*
 * Keys whose hashes probe the same slots: the table keeps the newest,
 * an old one gives way, and every key still found is the right one.
 */
START_TEST(test_collisions)
{
	struct recent *r = recent_new();
	const uint64_t base = 0x1000, stride = 4096;	/* RECENT_SLOTS */
	int found = 0;

	/* 40 keys on one slot: more than the 16 probes hold. */
	for (uint64_t i = 0; i < 40; i++)
		recent_add(r, base + i * stride, i, "done", (int64_t)(1000 + i));
	recent_commit(r);
	for (uint64_t i = 0; i < 40; i++) {
		const char *w = recent_match(r, base + i * stride, i, 2000,
		    WINDOW);
		if (w != NULL)
			found++;
		/* Another key's values never match this key. */
		ck_assert_ptr_null(recent_match(r, base + i * stride, i + 1,
		    2000, WINDOW));
	}
	ck_assert_int_eq(found, 16);
	/* The newest 16 are those kept. */
	ck_assert_str_eq(recent_match(r, base + 39 * stride, 39, 2000, WINDOW),
	    "done");
	ck_assert_str_eq(recent_match(r, base + 24 * stride, 24, 2000, WINDOW),
	    "done");
	ck_assert_ptr_null(recent_match(r, base + 23 * stride, 23, 2000,
	    WINDOW));
	recent_free(r);
}
END_TEST

/* A whole batch in one transaction, the largest there is. */
START_TEST(test_full_batch)
{
	struct recent *r = recent_new();
	char k[16];

	for (int i = 0; i < BATCH_MAX; i++) {
		snprintf(k, sizeof(k), "%d", i);
		recent_add(r, key(k), (uint64_t)i, "done", 1000);
	}
	recent_commit(r);
	for (int i = 0; i < BATCH_MAX; i++) {
		snprintf(k, sizeof(k), "%d", i);
		ck_assert_msg(recent_match(r, key(k), (uint64_t)i, 1001,
		    WINDOW) != NULL, "row %d of the batch forgotten", i);
	}
	/* A rolled back batch as large leaves nothing behind. */
	for (int i = 0; i < BATCH_MAX; i++) {
		snprintf(k, sizeof(k), "x%d", i);
		recent_add(r, key(k), (uint64_t)i, "done", 1100);
	}
	recent_rollback(r);
	recent_commit(r);
	for (int i = 0; i < BATCH_MAX; i++) {
		snprintf(k, sizeof(k), "x%d", i);
		ck_assert_ptr_null(recent_match(r, key(k), (uint64_t)i, 1101,
		    WINDOW));
	}
	recent_free(r);
}
END_TEST

/* A claim's rows: the first that came back unchanged, its statement. */
START_TEST(test_returned)
{
	struct recent *r = recent_new();
	struct test_row a, b, c;
	struct row rows[3];
	struct rowset rs = { .rows = rows, .nrows = 3 };
	const char *where = NULL;

	row_set(&a, "1", "x");
	row_set(&b, "2", "y");
	row_set(&c, NULL, "z");
	rows[0] = c.row;		/* a NULL key: never matched */
	rows[1] = a.row;
	rows[2] = b.row;
	ck_assert_int_eq(recent_returned(NULL, 2, 0, &rs, 1000, WINDOW,
	    &where), -1);
	ck_assert_int_eq(recent_returned(r, 2, 0, &rs, 1000, WINDOW, &where),
	    -1);

	recent_add(r, key("2"), recent_row_hash(2, &b.row), "done", 1000);
	recent_commit(r);
	ck_assert_int_eq(recent_returned(r, 2, 0, &rs, 1001, WINDOW, &where),
	    2);
	ck_assert_str_eq(where, "done");
	/* Its values changed: not the same row. */
	row_set(&b, "2", "y2");
	rows[2] = b.row;
	ck_assert_int_eq(recent_returned(r, 2, 0, &rs, 1001, WINDOW, &where),
	    -1);
	/* The first of two that came back, keyed by another column. */
	recent_add(r, key("x"), recent_row_hash(2, &a.row), "retry", 1000);
	recent_add(r, key("y2"), recent_row_hash(2, &b.row), "failed", 1000);
	recent_commit(r);
	ck_assert_int_eq(recent_returned(r, 2, 1, &rs, 1001, WINDOW, &where),
	    1);
	ck_assert_str_eq(where, "retry");
	/* Past the window, none. */
	ck_assert_int_eq(recent_returned(r, 2, 1, &rs, 1001 + WINDOW, WINDOW,
	    &where), -1);
	recent_free(r);
}
END_TEST

static Suite *
recent_suite(void)
{
	Suite *s = suite_create("recent");
	TCase *tc = tcase_create("recent");

	tcase_add_test(tc, test_hash);
	tcase_add_test(tc, test_row_hash);
	tcase_add_test(tc, test_commit_rollback);
	tcase_add_test(tc, test_window);
	tcase_add_test(tc, test_forget);
	tcase_add_test(tc, test_collisions);
	tcase_add_test(tc, test_full_batch);
	tcase_add_test(tc, test_returned);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return unit_run(recent_suite());
}
