/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "testutil.h"

#include <CUnit/Basic.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char **tmpdirs;
static int nr_tmpdirs, max_tmpdirs;

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path) ? -errno : 0;
}

int smr_test_rmtree(const char *path)
{
	return nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS) ? -errno : 0;
}

static void cleanup_tmpdirs(void)
{
	while (nr_tmpdirs > 0) {
		char *d = tmpdirs[--nr_tmpdirs];

		if (!getenv("SMR_TEST_KEEP"))
			smr_test_rmtree(d);
		free(d);
	}
	free(tmpdirs);
	tmpdirs = NULL;
	max_tmpdirs = 0;
}

const char *smr_test_tmpdir(const char *tag)
{
	const char *base = getenv("TMPDIR");
	char *path;

	if (nr_tmpdirs == max_tmpdirs) {
		int max = max_tmpdirs ? 2 * max_tmpdirs : 64;
		char **more = realloc(tmpdirs, max * sizeof(*more));

		if (!more)
			abort();
		tmpdirs = more;
		max_tmpdirs = max;
	}
	if (!base || !*base)
		base = "/tmp";
	if (asprintf(&path, "%s/smrfs-%s-XXXXXX", base, tag) < 0)
		abort();
	if (!mkdtemp(path)) {
		perror(path);
		abort();
	}
	if (nr_tmpdirs == 0)
		atexit(cleanup_tmpdirs);
	tmpdirs[nr_tmpdirs++] = path;
	return path;
}

const char *smr_test_missing(const char *tag)
{
	static char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/none/none", smr_test_tmpdir(tag));
	return path;
}

uint64_t smr_test_rand(uint64_t *state)
{
	uint64_t x = *state ? *state : 0x9e3779b97f4a7c15ULL;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dULL;
}

void smr_test_report_rc(const char *expr, int rc, const char *file, int line)
{
	fprintf(stderr, "%s:%d: %s returned %d (%s)\n", file, line, expr, rc,
		rc < 0 ? strerror(-rc) : "positive");
}

int smr_test_main(int argc, char **argv, const struct smr_suite *suites)
{
	const char *only = argc > 1 ? argv[1] : NULL;
	unsigned int ran, failed;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 2;
	for (const struct smr_suite *s = suites; s->name; s++) {
		CU_pSuite cs = CU_add_suite(s->name, NULL, NULL);

		if (!cs)
			return 2;
		for (const struct smr_test *t = s->tests; t->name; t++) {
			if (only && strcmp(only, t->name))
				continue;
			if (!CU_add_test(cs, t->name, t->fn))
				return 2;
		}
	}
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	ran = CU_get_number_of_tests_run();
	failed = CU_get_number_of_tests_failed();
	CU_cleanup_registry();
	if (ran == 0) {
		fprintf(stderr, "no test ran\n");
		return 1;
	}
	return failed ? 1 : 0;
}
