# SPDX-License-Identifier: GPL-2.0-or-later
noinst_LTLIBRARIES += src/cow/libsmrfs_cow.la
src_cow_libsmrfs_cow_la_SOURCES = \
	src/cow/cow.h \
	src/cow/cow_priv.h \
	src/cow/cow.c \
	src/cow/bt.c \
	src/cow/txn.c \
	src/cow/store_mem.c \
	src/cow/store_dev.c \
	src/cow/clean.c \
	src/cow/log.c

# The tree alone, over the memory store: a model-based test against a
# reference map. SMR_TEST_OPS sets the number of operations (default
# 1000000).
check_PROGRAMS += tests/test_bt_model
tests_test_bt_model_SOURCES = tests/test_bt_model.c
tests_test_bt_model_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS)
tests_test_bt_model_LDADD = $(SMR_TEST_LIBS) src/cow/libsmrfs_cow.la \
	src/alloc/libsmrfs_alloc.la src/format/libsmrfs_format.la \
	src/dev/libsmrfs_dev.la src/util/libsmrfs_util.la $(SMR_DEP_LIBS)
TESTS += tests/test_bt_model

# The engine on files and zoned loop directories: format/open, corruption,
# features, group commit, timer, power loss at every write (fault device).
check_PROGRAMS += tests/test_cow
tests_test_cow_SOURCES = tests/test_cow.c
tests_test_cow_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS)
tests_test_cow_LDADD = $(tests_test_bt_model_LDADD)
TESTS += tests/test_cow

# One tree of many items on a file: O(log n) node reads per lookup.
# SMR_TEST_ITEMS sets the count (default 10000000).
check_PROGRAMS += tests/test_bt_scale
tests_test_bt_scale_SOURCES = tests/test_bt_scale.c
tests_test_bt_scale_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS)
tests_test_bt_scale_LDADD = $(tests_test_bt_model_LDADD)
TESTS += tests/test_bt_scale
src_cow_libsmrfs_cow_la_SOURCES += src/cow/check.c src/cow/ckpt_scan.c

# The cleaner over the engine and the namespace on zoned loop directories:
# relocation of a zone, a move dropped because its data changed, fill /
# delete / refill to ENOSPC, cleaning after every operation changes no file.
check_PROGRAMS += tests/test_clean
tests_test_clean_SOURCES = tests/test_clean.c
tests_test_clean_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS)
tests_test_clean_LDADD = $(SMR_TEST_LIBS) libsmrfs.la
TESTS += tests/test_clean

# Write amplification of the cleaner under greedy and cost-benefit, uniform
# and hot/cold overwrites at 50, 75 and 90% utilization (bench/README.md).
noinst_PROGRAMS += bench/bench_wa
bench_bench_wa_SOURCES = bench/bench_wa.c
bench_bench_wa_LDADD = libsmrfs.la

src_cow_libsmrfs_cow_la_SOURCES += src/cow/stats.c

# The figures of smrfsctl stat and zones (stats.c).
check_PROGRAMS += tests/test_cow_stats
tests_test_cow_stats_SOURCES = tests/test_cow_stats.c
tests_test_cow_stats_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS)
tests_test_cow_stats_LDADD = $(tests_test_bt_model_LDADD)
TESTS += tests/test_cow_stats

# The fsync log: records replayed after a power cut on every allocator and
# checkpoint placement, damaged records and data, read-only opens, a full
# ring.
check_PROGRAMS += tests/test_log
tests_test_log_SOURCES = tests/test_log.c
tests_test_log_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS)
tests_test_log_LDADD = $(tests_test_bt_model_LDADD)
TESTS += tests/test_log
