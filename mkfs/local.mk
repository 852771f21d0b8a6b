# SPDX-License-Identifier: GPL-2.0-or-later
# mkfs.smrfs: formats through the engine, makes the root through the
# namespace layer; libblkid finds existing filesystems.
sbin_PROGRAMS += mkfs/mkfs.smrfs
mkfs_mkfs_smrfs_SOURCES = mkfs/mkfs.c mkfs/probe.c mkfs/probe.h
mkfs_mkfs_smrfs_CFLAGS = $(AM_CFLAGS) $(BLKID_CFLAGS)
mkfs_mkfs_smrfs_LDADD = libsmrfs.la $(BLKID_LIBS)
dist_man_MANS += mkfs/mkfs.smrfs.8
