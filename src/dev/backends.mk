# SPDX-License-Identifier: GPL-2.0-or-later
# The zbd backend (kernel zoned block devices; its open fails with EOPNOTSUPP
# in a build without libzbd) and the fault device (fault.h), with their tests.
src_dev_libsmrfs_dev_la_SOURCES += \
	src/dev/dev_zbd.c \
	src/dev/fault.h \
	src/dev/dev_fault.c

SMR_BACKEND_TEST_LIBS = $(SMR_TEST_LIBS) src/dev/libsmrfs_dev.la \
	src/util/libsmrfs_util.la $(SMR_DEP_LIBS)

# Skipped (exit 77) unless ZONED_DEV names a zoned block device; see
# tests/zoned/run-zbd-tests.sh, which runs it in a VM.
check_PROGRAMS += tests/test_zbd
tests_test_zbd_SOURCES = tests/test_zbd.c
tests_test_zbd_LDADD = $(SMR_BACKEND_TEST_LIBS)
TESTS += tests/test_zbd

check_PROGRAMS += tests/test_fault
tests_test_fault_SOURCES = tests/test_fault.c
tests_test_fault_LDADD = $(SMR_BACKEND_TEST_LIBS)
TESTS += tests/test_fault

# Runs tests/test_zbd in VMs with real zoned block devices (not part of
# make check: it needs the zoned-vm tool).
dist_noinst_SCRIPTS += tests/zoned/run-zbd-tests.sh

# The whole filesystem on real zoned block devices in VMs (run by
# make check-zoned).
dist_noinst_SCRIPTS += tests/zoned/run-fs-tests.sh tests/zoned/fs-guest.sh
EXTRA_DIST += tests/zoned/fs-workload.py
