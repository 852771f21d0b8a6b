# SPDX-License-Identifier: GPL-2.0-or-later
noinst_LTLIBRARIES += src/alloc/libsmrfs_alloc.la
src_alloc_libsmrfs_alloc_la_SOURCES = \
	src/alloc/alloc.h \
	src/alloc/alloc_int.h \
	src/alloc/alloc.c \
	src/alloc/state.c \
	src/alloc/extent_index.h \
	src/alloc/extent_index.c \
	src/alloc/extent_mod.c \
	src/alloc/rotational.c \
	src/alloc/flash.c \
	src/alloc/zoned.c

# The allocator's tests and benchmark link the layers below it only.
SMR_ALLOC_TEST_LIBS = src/alloc/libsmrfs_alloc.la \
	src/format/libsmrfs_format.la src/dev/libsmrfs_dev.la \
	src/util/libsmrfs_util.la $(SMR_DEP_LIBS)

check_PROGRAMS += tests/test_alloc
tests_test_alloc_SOURCES = tests/test_alloc.c
tests_test_alloc_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS)
tests_test_alloc_LDADD = $(SMR_TEST_LIBS) $(SMR_ALLOC_TEST_LIBS)
# Lets a test make the allocator's calloc fail (test_extent_index_nomem).
tests_test_alloc_LDFLAGS = $(AM_LDFLAGS) -Wl,--wrap=calloc
TESTS += tests/test_alloc

noinst_PROGRAMS += bench/bench_alloc
bench_bench_alloc_SOURCES = bench/bench_alloc.c
bench_bench_alloc_LDADD = $(SMR_ALLOC_TEST_LIBS)
src_alloc_libsmrfs_alloc_la_SOURCES += src/alloc/check.c
