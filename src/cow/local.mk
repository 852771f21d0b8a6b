# SPDX-License-Identifier: GPL-2.0-or-later
noinst_LTLIBRARIES += src/cow/libsmrfs_cow.la
src_cow_libsmrfs_cow_la_SOURCES = \
	src/cow/cow.c
