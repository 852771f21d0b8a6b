/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_image.c - a whole filesystem image: everything mount and fsck read.
 *
 * Input: flags byte (FUZZ_F_RESEAL; FUZZ_IMAGE_CHANGE mounts read-write,
 * changes things and cleans zones; FUZZ_IMAGE_REPAIR runs fsck's repair
 * instead of a check), a geometry byte (enum fuzz_geom), FUZZ_NR_ZONES
 * __le16 write pointers in 4 KiB blocks (zoned geometries), then records at
 * device offsets. The image is laid on a regular file or a zoned loop
 * directory; fsck.smrfs's checker runs over it (with --scrub), then the
 * engine and the namespace are opened on it as the daemon does, and the
 * namespace is walked (fuzz_ns_walk).
 */
#include <stdlib.h>

#include "cow/cow.h"
#include "dev/dev.h"
#include "fsck/fsck.h"
#include "fuzz.h"
#include "namespace/ns.h"

static void fuzz_mount(const char *path, bool change, bool zoned)
{
	struct smr_dev_opts dopts = { .read_only = !change };
	struct smr_cow_opts co = {
		.read_only = !change, .gc_off = true, .commit_secs = 3600,
	};
	struct smr_dev *dev;
	struct smr_cow *cow;
	struct smr_ns *ns;

	if (smr_dev_open(path, &dopts, &dev))
		abort(); /* the harness's own device */
	if (smr_cow_open(dev, &co, &cow))
		goto out_dev;
	/* The trees are checked with their items, as fsck does. */
	if (!smr_ns_register_trees(cow))
		smr_cow_check(cow);
	if (!smr_ns_open(cow, NULL, &ns)) {
		fuzz_ns_walk(ns, change);
		if (change) {
			smr_ns_sync(ns);
			if (zoned)
				smr_cow_clean(cow, SMR_COW_GC_GREEDY, 2);
		}
		smr_ns_close(ns);
	}
	smr_cow_close(cow);
out_dev:
	smr_dev_close(dev);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	uint8_t flags = fuzz_u8(&in);
	enum fuzz_geom g = (enum fuzz_geom)(fuzz_u8(&in) % FUZZ_GEOM_NR);
	struct smr_fsck_opts fo = { .scrub = true };
	struct smr_fsck_result fr;
	uint32_t wp[FUZZ_NR_ZONES];
	struct fuzz_img img;

	fuzz_setup();
	for (int z = 0; z < FUZZ_NR_ZONES; z++)
		wp[z] = (uint32_t)fuzz_u16(&in) * FUZZ_PAGE;
	fuzz_img_init(&img, fuzz_dev_size(g));
	if (fuzz_img_load(&img, &in))
		goto out;
	if (flags & FUZZ_F_RESEAL)
		fuzz_img_reseal(&img);
	if (fuzz_dev_write(g, &img, wp))
		goto out;
	fo.device = fuzz_dev_path(g);
	fo.repair = flags & FUZZ_IMAGE_REPAIR;
	smr_fsck_run(&fo, &fr);
	fuzz_mount(fo.device, flags & FUZZ_IMAGE_CHANGE, g != FUZZ_GEOM_FILE);
out:
	fuzz_img_free(&img);
	return 0;
}
