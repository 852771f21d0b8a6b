# SPDX-License-Identifier: GPL-2.0-or-later
noinst_LTLIBRARIES += src/format/libsmrfs_format.la
src_format_libsmrfs_format_la_SOURCES = \
	src/format/ondisk.h \
	src/format/ondisk_alloc.h \
	src/format/ondisk_ns.h \
	src/format/ondisk_rmap.h \
	src/format/blk.h \
	src/format/blk.c \
	src/format/sb.h \
	src/format/sb.c \
	src/format/node.h \
	src/format/node.c
