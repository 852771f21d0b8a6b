# SPDX-License-Identifier: GPL-2.0-or-later
noinst_LTLIBRARIES += src/dev/libsmrfs_dev.la
src_dev_libsmrfs_dev_la_SOURCES = \
	src/dev/dev.h \
	src/dev/dev.c
