# SPDX-License-Identifier: GPL-2.0-or-later
# smrfsctl: the one administration command (zoned loop directories now;
# filesystem statistics and zone usage later).
sbin_PROGRAMS += ctl/smrfsctl
ctl_smrfsctl_SOURCES = ctl/smrfsctl.c
ctl_smrfsctl_LDADD = libsmrfs.la

TESTS += tests/test_smrfsctl.sh
EXTRA_DIST += tests/test_smrfsctl.sh
dist_man_MANS += man/smrfsctl.8

# smrfsctl stat and zones: figures of a device or, through the daemon's
# ioctls, of a mount point.
ctl_smrfsctl_SOURCES += ctl/ctl.h ctl/stat.c src/fuse/smrfs_ioctl.h
TESTS += tests/test_smrfsctl_stat.sh
EXTRA_DIST += tests/test_smrfsctl_stat.sh
