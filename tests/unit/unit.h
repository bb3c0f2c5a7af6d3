/*
 * unit.h: what every Check unit test's main() does once its suite is
 * built: run it and turn the failures into the exit status.
 */
#ifndef ROWQ_UNIT_H
#define ROWQ_UNIT_H

#include <check.h>

static inline int
unit_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}

#endif
