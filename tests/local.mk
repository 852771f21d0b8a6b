# SPDX-License-Identifier: GPL-2.0-or-later
# The test helpers, and the tests of code that belongs to no single layer.
# Each layer's own tests are in its local.mk.
check_LTLIBRARIES += tests/libsmrtest.la
tests_libsmrtest_la_SOURCES = tests/testutil.h tests/testutil.c tests/cowtest.h
tests_libsmrtest_la_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS)
tests_libsmrtest_la_LIBADD = $(CUNIT_LIBS)

# Tests link this plus the layers they need.
SMR_TEST_LIBS = tests/libsmrtest.la

check_PROGRAMS += tests/test_util
tests_test_util_SOURCES = tests/test_util.c
tests_test_util_LDADD = $(SMR_TEST_LIBS) src/format/libsmrfs_format.la \
	src/util/libsmrfs_util.la $(XXHASH_LIBS)

TESTS += tests/test_util

# The crash-consistency sweep of the whole filesystem (docs/design/crash.md):
# workloads recorded through the fault device, every crash state checked with
# fsck, against the workload's states, and with a new write. make check runs
# a bounded sample; make check-crash the whole space.
check_PROGRAMS += tests/crash/crash
tests_crash_crash_SOURCES = tests/crash/crash.c tests/crash/crash.h \
	tests/crash/workload.c fsck/run.c fsck/fsck.h
tests_crash_crash_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS)
tests_crash_crash_LDADD = $(SMR_TEST_LIBS) libsmrfs.la $(XXHASH_LIBS)
TESTS += tests/crash/crash

check-crash: tests/crash/crash
	tests/crash/crash --full
.PHONY: check-crash

# Every file git tracks is in the release tarball (skips outside git).
TESTS += tests/dist_files.sh
EXTRA_DIST += tests/dist_files.sh
