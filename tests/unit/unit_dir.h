/*
 * unit_dir.h: a fresh temporary directory as the current directory of
 * each test of a TCase, for the tests that write files.
 *
 *	tcase_add_unchecked_fixture(tc, unit_dir_make, unit_dir_remove);
 *	tcase_add_checked_fixture(tc, unit_dir_enter, unit_dir_leave);
 *
 * The parent directory is made and removed by the runner itself (the
 * unchecked fixture), so that a test that fails, whose checked teardown
 * Check never runs, still leaves nothing behind.  unit_dir is the test's
 * directory, for the paths a test writes.
 */
#ifndef ROWQ_UNIT_DIR_H
#define ROWQ_UNIT_DIR_H

#include <check.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char	unit_dir_parent[PATH_MAX / 2];
static char	unit_dir[PATH_MAX];
static char	unit_dir_old[PATH_MAX];

static inline void
unit_dir_make(void)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(unit_dir_parent, sizeof(unit_dir_parent),
	    "%s/rowq-unit-XXXXXX", tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
	if (mkdtemp(unit_dir_parent) == NULL) {
		perror(unit_dir_parent);
		exit(1);
	}
}

static inline int
unit_dir_remove_one(const char *path, const struct stat *st, int flag,
    struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static inline void
unit_dir_remove(void)
{
	nftw(unit_dir_parent, unit_dir_remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

static inline void
unit_dir_enter(void)
{
	snprintf(unit_dir, sizeof(unit_dir), "%s/test-XXXXXX", unit_dir_parent);
	ck_assert(mkdtemp(unit_dir) != NULL);
	ck_assert(getcwd(unit_dir_old, sizeof(unit_dir_old)) != NULL);
	ck_assert_int_eq(chdir(unit_dir), 0);
}

static inline void
unit_dir_leave(void)
{
	ck_assert_int_eq(chdir(unit_dir_old), 0);
	nftw(unit_dir, unit_dir_remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

#endif
