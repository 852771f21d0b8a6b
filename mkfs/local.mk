# SPDX-License-Identifier: GPL-2.0-or-later
# mkfs.smrfs: formats through the engine, makes the root through the
# namespace layer; libblkid finds existing filesystems.
# Built on demand (EXTRA_PROGRAMS) until the COW engine it links is in the
# tree; then it moves to sbin_PROGRAMS.
EXTRA_PROGRAMS += mkfs/mkfs.smrfs
mkfs_mkfs_smrfs_SOURCES = mkfs/mkfs.c
mkfs_mkfs_smrfs_CFLAGS = $(AM_CFLAGS) $(BLKID_CFLAGS)
mkfs_mkfs_smrfs_LDADD = libsmrfs.la $(BLKID_LIBS)
