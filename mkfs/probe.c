/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * probe.c - other filesystems' signatures, by libblkid (probe.h).
 */
#include "mkfs/probe.h"

#include <blkid/blkid.h>
#include <errno.h>
#include <stdio.h>

int smr_probe_other(const char *path, char *what, size_t len)
{
	const char *type = NULL;
	blkid_probe pr;
	int rc;

	pr = blkid_new_probe_from_filename(path);
	if (!pr)
		return -errno ? -errno : -EIO;
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE);
	blkid_probe_enable_partitions(pr, 1);
	rc = blkid_do_safeprobe(pr);
	if (rc == -2) {
		snprintf(what, len, "more than one filesystem signature");
		rc = 1;
	} else if (rc == 0) {
		if (!blkid_probe_lookup_value(pr, "TYPE", &type, NULL))
			snprintf(what, len, "a filesystem of type %s", type);
		else if (!blkid_probe_lookup_value(pr, "PTTYPE", &type, NULL))
			snprintf(what, len, "a partition table of type %s", type);
		else
			snprintf(what, len, "a known signature");
		rc = 1;
	} else if (rc == 1) {
		rc = 0;
	} else {
		rc = -EIO;
	}
	blkid_free_probe(pr);
	return rc;
}
