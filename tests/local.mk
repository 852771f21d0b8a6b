# SPDX-License-Identifier: GPL-2.0-or-later
# The test helpers, and the tests of code that belongs to no single layer.
# Each layer's own tests are in its local.mk.
check_LTLIBRARIES += tests/libsmrtest.la
tests_libsmrtest_la_SOURCES = tests/testutil.h tests/testutil.c
tests_libsmrtest_la_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS)
tests_libsmrtest_la_LIBADD = $(CUNIT_LIBS)

# Tests link this plus the layers they need.
SMR_TEST_LIBS = tests/libsmrtest.la

check_PROGRAMS += tests/test_util
tests_test_util_SOURCES = tests/test_util.c
tests_test_util_LDADD = $(SMR_TEST_LIBS) src/format/libsmrfs_format.la \
	src/util/libsmrfs_util.la $(XXHASH_LIBS)

TESTS += tests/test_util
