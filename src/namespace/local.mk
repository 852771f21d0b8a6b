# SPDX-License-Identifier: GPL-2.0-or-later
# The namespace layer: inodes, directories, extent maps, xattrs, POSIX rules.
# It calls only the COW engine (cow/cow.h).
noinst_LTLIBRARIES += src/namespace/libsmrfs_ns.la
src_namespace_libsmrfs_ns_la_SOURCES = \
	src/namespace/ns.h \
	src/namespace/ns_priv.h \
	src/namespace/ns.c \
	src/namespace/dir.c \
	src/namespace/file.c \
	src/namespace/xattr.c \
	src/namespace/acl.c \
	src/namespace/check.c \
	src/namespace/undo.c
SMR_NS_LIBS += src/namespace/libsmrfs_ns.la

# The namespace over the in-memory engine of tests/memcow.c.
check_PROGRAMS += tests/test_ns
tests_test_ns_SOURCES = tests/test_ns.c tests/memcow.c tests/memcow.h
tests_test_ns_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS)
tests_test_ns_LDADD = $(SMR_TEST_LIBS) src/namespace/libsmrfs_ns.la \
	src/format/libsmrfs_format.la src/util/libsmrfs_util.la \
	$(XXHASH_LIBS) -lpthread
TESTS += tests/test_ns

# The same tests over the real COW engine on a zoned loop directory, with
# persistence across close and reopen.
check_PROGRAMS += tests/test_ns_cow
tests_test_ns_cow_SOURCES = tests/test_ns.c
tests_test_ns_cow_CPPFLAGS = $(AM_CPPFLAGS) -DNS_TEST_REAL
tests_test_ns_cow_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS)
tests_test_ns_cow_LDADD = $(SMR_TEST_LIBS) libsmrfs.la
TESTS += tests/test_ns_cow
src_namespace_libsmrfs_ns_la_SOURCES += src/namespace/stats.c
