/* Unit tests for json.c: every row must come out as valid JSON. */
#include "rowq.h"

#include <check.h>
#include "unit.h"
#include <stdlib.h>
#include <string.h>

static char *
encode(const char *s, size_t n)
{
	struct buf b = { 0 };

	json_string(&b, s, n);
	return buf_steal(&b);
}

START_TEST(test_escapes)
{
	char *j = encode("a\"b\\c\nd\te\r\x01", 11);

	ck_assert_str_eq(j, "\"a\\\"b\\\\c\\nd\\te\\r\\u0001\"");
	free(j);
}
END_TEST

START_TEST(test_nul_inside)
{
	char *j = encode("a\0b", 3);

	ck_assert_str_eq(j, "\"a\\u0000b\"");
	free(j);
}
END_TEST

START_TEST(test_utf8_kept_bad_bytes_replaced)
{
	char *j = encode("caf\xc3\xa9 \xf0\x9f\x98\x80", 10);

	ck_assert_str_eq(j, "\"caf\xc3\xa9 \xf0\x9f\x98\x80\"");
	free(j);
	/* A lone continuation byte, an overlong slash, a surrogate, a cut. */
	j = encode("\x80/\xc0\xaf/\xed\xa0\x80/\xe2\x82", 11);
	ck_assert_str_eq(j, "\"\\ufffd/\\ufffd\\ufffd/\\ufffd\\ufffd\\ufffd/"
	    "\\ufffd\\ufffd\"");
	free(j);
}
END_TEST

START_TEST(test_row)
{
	struct column cols[] = {
		{ .name = "id", .kind = COLUMN_INTEGER },
		{ .name = "price", .kind = COLUMN_NUMBER, .is_decimal = true },
		{ .name = "name", .kind = COLUMN_TEXT },
		{ .name = "blob", .kind = COLUMN_BINARY },
		{ .name = "gone", .kind = COLUMN_TEXT },
		{ .name = "zero", .kind = COLUMN_INTEGER },
	};
	char *values[] = { "42", "-1.50", "O'Brien \"x\"", "\xff\x00\x01",
	    NULL, "007" };
	size_t lens[] = { 2, 5, 11, 3, 0, 3 };
	struct row r = { .value = values, .len = lens };
	struct buf b = { 0 };

	json_row(&b, cols, 6, &r);
	ck_assert_str_eq(b.data, "{\"id\":42,\"price\":\"-1.50\","
	    "\"name\":\"O'Brien \\\"x\\\"\",\"blob\":\"/wAB\",\"gone\":null,"
	    "\"zero\":\"007\"}");
	buf_free(&b);
}
END_TEST

START_TEST(test_base64_padding)
{
	struct column col = { .name = "b", .kind = COLUMN_BINARY };
	const char *cases[][2] = {
		{ "", "{\"b\":\"\"}" }, { "f", "{\"b\":\"Zg==\"}" },
		{ "fo", "{\"b\":\"Zm8=\"}" }, { "foo", "{\"b\":\"Zm9v\"}" },
		{ "foob", "{\"b\":\"Zm9vYg==\"}" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *v[] = { (char *)cases[i][0] };
		size_t l[] = { strlen(cases[i][0]) };
		struct row r = { .value = v, .len = l };
		struct buf b = { 0 };
		json_row(&b, &col, 1, &r);
		ck_assert_str_eq(b.data, cases[i][1]);
		buf_free(&b);
	}
}
END_TEST

/*
 * JavaScript and jq read every JSON number as a double: an integer beyond
 * 2^53 - 1 would come out rounded, so it is written as a string.
 */
START_TEST(test_big_integers_as_strings)
{
	struct column col = { .name = "n", .kind = COLUMN_INTEGER };
	const char *cases[][2] = {
		{ "9007199254740991", "{\"n\":9007199254740991}" },
		{ "-9007199254740991", "{\"n\":-9007199254740991}" },
		{ "9007199254740992", "{\"n\":\"9007199254740992\"}" },
		{ "-9007199254740992", "{\"n\":\"-9007199254740992\"}" },
		{ "18446744073709551615", "{\"n\":\"18446744073709551615\"}" },
		{ "-9223372036854775808", "{\"n\":\"-9223372036854775808\"}" },
		{ "0", "{\"n\":0}" },
		{ "-1", "{\"n\":-1}" },
	};
	struct column dbl = { .name = "d", .kind = COLUMN_NUMBER };
	char *dv[] = { "1.5e300" };
	size_t dl[] = { 7 };
	struct row dr = { .value = dv, .len = dl };
	struct buf db = { 0 };

	/* FLOAT and DOUBLE are doubles already: numbers. */
	json_row(&db, &dbl, 1, &dr);
	ck_assert_str_eq(db.data, "{\"d\":1.5e300}");
	buf_free(&db);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *v[] = { (char *)cases[i][0] };
		size_t l[] = { strlen(cases[i][0]) };
		struct row r = { .value = v, .len = l };
		struct buf b = { 0 };
		json_row(&b, &col, 1, &r);
		ck_assert_str_eq(b.data, cases[i][1]);
		buf_free(&b);
	}
}
END_TEST

START_TEST(test_utf8_sanitize)
{
	struct buf b = { 0 };

	/* Valid text, a NUL included, is left exactly as it is. */
	buf_append(&b, "ok \xc3\xa9\0x", 7);
	utf8_sanitize(&b);
	ck_assert_uint_eq(b.len, 7);
	ck_assert_mem_eq(b.data, "ok \xc3\xa9\0x", 7);
	buf_reset(&b);
	/* A tail cut mid-character, and a stray byte, become U+FFFD. */
	buf_append(&b, "\xa9 ok \xff end \xe2\x82", 13);
	utf8_sanitize(&b);
	ck_assert_str_eq(b.data, "\xef\xbf\xbd ok \xef\xbf\xbd end "
	    "\xef\xbf\xbd\xef\xbf\xbd");
	buf_free(&b);
	/* An empty buffer stays empty. */
	utf8_sanitize(&b);
	ck_assert_ptr_null(b.data);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("json");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_escapes);
	tcase_add_test(tc, test_nul_inside);
	tcase_add_test(tc, test_utf8_kept_bad_bytes_replaced);
	tcase_add_test(tc, test_row);
	tcase_add_test(tc, test_base64_padding);
	tcase_add_test(tc, test_utf8_sanitize);
	tcase_add_test(tc, test_big_integers_as_strings);
	suite_add_tcase(s, tc);
	return unit_run(s);
}
