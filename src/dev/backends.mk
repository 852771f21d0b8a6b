# SPDX-License-Identifier: GPL-2.0-or-later
# The zbd backend (kernel zoned block devices; its open fails with EOPNOTSUPP
# in a build without libzbd) and the fault device (fault.h), with their tests.
src_dev_libsmrfs_dev_la_SOURCES += \
	src/dev/dev_zbd.c \
	src/dev/fault.h \
	src/dev/dev_fault.c
