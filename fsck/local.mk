# SPDX-License-Identifier: GPL-2.0-or-later
# fsck.smrfs: the checker (run.c) behind a command line (fsck.c); the tests
# build run.c in as well. libblkid (mkfs's probe, given by fsck.c) keeps a
# superblock from being rebuilt over another filesystem.
sbin_PROGRAMS += fsck/fsck.smrfs
fsck_fsck_smrfs_SOURCES = fsck/fsck.c fsck/run.c fsck/fsck.h mkfs/probe.c \
	mkfs/probe.h
fsck_fsck_smrfs_CFLAGS = $(AM_CFLAGS) $(BLKID_CFLAGS)
fsck_fsck_smrfs_LDADD = libsmrfs.la $(BLKID_LIBS)
dist_man_MANS += man/fsck.smrfs.8

# Damage made precisely through the library, then check and repair.
check_PROGRAMS += tests/test_fsck
tests_test_fsck_SOURCES = tests/test_fsck.c fsck/run.c fsck/fsck.h
tests_test_fsck_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS)
tests_test_fsck_LDADD = $(SMR_TEST_LIBS) libsmrfs.la
TESTS += tests/test_fsck

# The command line: usage, exit codes, --json, a device in use.
dist_noinst_SCRIPTS += tests/fsck/cli.sh
EXTRA_DIST += tests/fsck/lib.sh
TESTS += tests/fsck/cli.sh

# The progress bar and e2fsck's progress lines.
dist_noinst_SCRIPTS += tests/fsck/progress.sh
TESTS += tests/fsck/progress.sh

# With the daemon: a mounted device refused, an orphan left by kill -9,
# damage the daemon survives and fsck repairs (FUSE; skipped without it).
dist_noinst_SCRIPTS += tests/fsck/mount.sh
TESTS += tests/fsck/mount.sh

# The corruption corpus: each kind of structure damaged (by tests/fsck/damage,
# through the library), then fsck.smrfs and the daemon on it.
check_PROGRAMS += tests/fsck/damage
tests_fsck_damage_SOURCES = tests/fsck/damage.c
tests_fsck_damage_LDADD = libsmrfs.la
dist_noinst_SCRIPTS += tests/fsck/corpus.sh
TESTS += tests/fsck/corpus.sh

# Random damage: bits flipped at random in a filled image, then fsck.smrfs
# and the daemon on it (FUSE; skipped without it).
dist_noinst_SCRIPTS += tests/fsck/flips.sh
TESTS += tests/fsck/flips.sh

# The progress bar on a check that takes a while (FUSE, to fill it).
dist_noinst_SCRIPTS += tests/fsck/progress_long.sh
TESTS += tests/fsck/progress_long.sh
