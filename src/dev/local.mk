# SPDX-License-Identifier: GPL-2.0-or-later
# The device layer: the handle and zone cache (dev.c, zcache.c), the zoned
# loop directory and file backends, and the io_uring engine. The zbd and
# fault backends are added by backends.mk.
noinst_LTLIBRARIES += src/dev/libsmrfs_dev.la
src_dev_libsmrfs_dev_la_SOURCES = \
	src/dev/dev.h \
	src/dev/dev_priv.h \
	src/dev/dev_int.h \
	src/dev/dev.c \
	src/dev/zcache.h \
	src/dev/zcache.c \
	src/dev/dev_zloop.c \
	src/dev/dev_file.c \
	src/dev/dev_io.c \
	src/dev/dev_wb.c
src_dev_libsmrfs_dev_la_LIBADD = $(URING_LIBS) $(ZBD_LIBS) -lpthread

# Tests of the device layer.
SMR_DEV_TEST_LIBS = $(SMR_TEST_LIBS) src/dev/libsmrfs_dev.la \
	src/util/libsmrfs_util.la $(SMR_DEP_LIBS)

check_PROGRAMS += tests/test_zcache tests/test_zloop tests/test_dev_file \
	tests/test_dev_io tests/test_dev_wb
tests_test_zcache_SOURCES = tests/test_zcache.c
tests_test_zcache_LDADD = $(SMR_DEV_TEST_LIBS)
tests_test_zloop_SOURCES = tests/test_zloop.c
tests_test_zloop_LDADD = $(SMR_DEV_TEST_LIBS)
tests_test_dev_file_SOURCES = tests/test_dev_file.c
tests_test_dev_file_LDADD = $(SMR_DEV_TEST_LIBS)
tests_test_dev_io_SOURCES = tests/test_dev_io.c
tests_test_dev_io_LDADD = $(SMR_DEV_TEST_LIBS)
tests_test_dev_wb_SOURCES = tests/test_dev_wb.c
tests_test_dev_wb_LDADD = $(SMR_DEV_TEST_LIBS)
TESTS += tests/test_zcache tests/test_zloop tests/test_dev_file \
	tests/test_dev_io tests/test_dev_wb
