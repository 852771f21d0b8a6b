# SPDX-License-Identifier: GPL-2.0-or-later
noinst_LTLIBRARIES += src/util/libsmrfs_util.la
src_util_libsmrfs_util_la_SOURCES = src/util/smr.h src/util/log.c src/util/size.c \
	src/util/array.c src/util/clock.c src/util/failpoint.c \
	src/util/stdio_guard.c src/util/mtab.c src/util/uuid.c
src_util_libsmrfs_util_la_LIBADD = -lm
