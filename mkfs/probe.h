/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * probe.h - signatures of other filesystems and partition tables, found by
 * libblkid (which knows no smrfs): mkfs.smrfs refuses to overwrite one
 * unless forced, and fsck.smrfs to rebuild a superblock over one.
 */
#ifndef SMR_MKFS_PROBE_H
#define SMR_MKFS_PROBE_H

#include <stddef.h>

/*
 * What filesystem or partition table libblkid finds on the regular file or
 * block device @path: 1 and its name in @what, 0 for none, negative on error.
 */
int smr_probe_other(const char *path, char *what, size_t len);

#endif /* SMR_MKFS_PROBE_H */
