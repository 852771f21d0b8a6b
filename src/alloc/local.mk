# SPDX-License-Identifier: GPL-2.0-or-later
noinst_LTLIBRARIES += src/alloc/libsmrfs_alloc.la
src_alloc_libsmrfs_alloc_la_SOURCES = \
	src/alloc/alloc.h \
	src/alloc/alloc.c
