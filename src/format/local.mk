# SPDX-License-Identifier: GPL-2.0-or-later
noinst_LTLIBRARIES += src/format/libsmrfs_format.la
src_format_libsmrfs_format_la_SOURCES = \
	src/format/ondisk.h \
	src/format/blk.h \
	src/format/blk.c
