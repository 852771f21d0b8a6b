/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * testutil.h - what every CUnit test program of smrfs shares: a runner that
 * returns the number of failures as the exit status (so automake sees them),
 * scratch directories under $TMPDIR that are removed at exit, and an
 * assertion that checks a negative-errno result and prints it when it fails.
 */
#ifndef SMR_TESTUTIL_H
#define SMR_TESTUTIL_H

#include <CUnit/CUnit.h>
#include <stdint.h>

/* One test of a suite: { "name", fn }, ended by { NULL, NULL }. */
struct smr_test {
	const char *name;
	void (*fn)(void);
};

struct smr_suite {
	const char *name;
	const struct smr_test *tests;
};

/*
 * Run the suites (ended by { NULL, NULL }). Argument: an optional test name
 * to run alone. Returns the process exit status: 0 when every assertion
 * passed, 1 otherwise (also when no test ran at all).
 */
int smr_test_main(int argc, char **argv, const struct smr_suite *suites);

/* A fresh empty directory under $TMPDIR (or /tmp), removed with all its
 * contents when the program exits. The string is owned by testutil. */
const char *smr_test_tmpdir(const char *tag);

/* A path that surely does not exist: a name in a directory that does not
 * exist, inside a fresh smr_test_tmpdir(tag). Valid until the next call. */
const char *smr_test_missing(const char *tag);

/* Remove a tree (rm -rf). Returns 0 or a negative errno. */
int smr_test_rmtree(const char *path);

/* Deterministic pseudo-random numbers (xorshift64*), seeded per test. */
uint64_t smr_test_rand(uint64_t *state);

/* CU_ASSERT on a call returning 0 / negative errno, naming the errno. */
#define SMR_ASSERT_OK(expr)                                              \
	do {                                                             \
		int rc_ = (expr);                                        \
		if (rc_ != 0)                                            \
			smr_test_report_rc(#expr, rc_, __FILE__, __LINE__); \
		CU_ASSERT_EQUAL(rc_, 0);                                 \
	} while (0)
#define SMR_ASSERT_RC(expr, want)                                        \
	do {                                                             \
		int rc_ = (expr);                                        \
		if (rc_ != (want))                                       \
			smr_test_report_rc(#expr, rc_, __FILE__, __LINE__); \
		CU_ASSERT_EQUAL(rc_, (want));                            \
	} while (0)

void smr_test_report_rc(const char *expr, int rc, const char *file, int line);

#endif /* SMR_TESTUTIL_H */
