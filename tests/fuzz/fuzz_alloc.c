/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_alloc.c - the allocator state and its modules' decoding of it
 * (src/alloc/state.c, zoned.c, extent_mod.c), through smr_alloc_open.
 *
 * Input: flags byte (FUZZ_F_RESEAL; bits 1-2 the geometry, enum
 * fuzz_geom; bit 3 the flash module instead of rotational on the file
 * geometry), the checkpoint's reference to the state (__le64 off, len, gen,
 * csum), then records at device offsets. With FUZZ_F_RESEAL the state's
 * blocks are stamped and the reference gets their whole checksum. An
 * allocator that opens is then asked for everything it knows, audited
 * (smr_alloc_check), and used a little.
 */
#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc.h"
#include "dev/dev.h"
#include "format/ondisk.h"
#include "fuzz.h"

static void fuzz_alloc_use(struct smr_alloc *a, const struct smr_alloc_ref *ref)
{
	struct smr_space sp;
	struct smr_alloc_stats st;
	struct smr_alloc_check chk;
	struct smr_extent ext[4];
	struct smr_alloc_hint hint = { 0 };
	uint32_t zno;
	int n;

	smr_alloc_space(a, &sp);
	smr_alloc_stats(a, &st);
	smr_alloc_gc_pick(a, SMR_GC_GREEDY, &zno);
	smr_alloc_gc_pick(a, SMR_GC_COST_BENEFIT, &zno);
	for (uint32_t z = 0; z < FUZZ_NR_ZONES; z++)
		smr_alloc_zone_live(a, z);
	smr_alloc_check(a, ref, NULL, 0, false, &chk);
	smr_alloc_check(a, ref, NULL, 0, true, &chk);
	for (int s = 0; s < SMR_STREAM_NR; s++) {
		n = smr_alloc_extent(a, 65536, &hint, (enum smr_stream)s, ext, 4);
		for (int i = 0; i < n; i++)
			smr_alloc_free(a, ext[i].off, ext[i].len);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	uint8_t flags = fuzz_u8(&in);
	enum fuzz_geom g = (enum fuzz_geom)((flags >> 1) & 3);
	struct smr_dev_opts dopts = { 0 };
	struct smr_alloc_ref ref;
	const struct smr_alloc_ops *ops;
	struct smr_blk_hdr h;
	struct smr_alloc *a;
	struct smr_dev *dev;
	struct fuzz_img img;
	uint64_t data_start;

	fuzz_setup();
	if (g >= FUZZ_GEOM_NR)
		g = FUZZ_GEOM_FILE;
	ref.off = fuzz_u64(&in);
	ref.len = fuzz_u64(&in);
	ref.gen = fuzz_u64(&in);
	ref.csum = fuzz_u64(&in);
	fuzz_img_init(&img, fuzz_dev_size(g));
	if (fuzz_img_load(&img, &in))
		goto out;
	if (flags & FUZZ_F_RESEAL) {
		fuzz_img_reseal(&img);
		fuzz_img_state_hash(&img, ref.off, ref.len, &ref.csum);
	}
	if (fuzz_dev_write(g, &img, NULL))
		goto out;
	fuzz_img_get(&img, ref.off, &h, sizeof(h));
	switch (g) {
	case FUZZ_GEOM_ZCNV:
		ops = &smr_zoned_ops;
		data_start = FUZZ_ZONE_SIZE;
		break;
	case FUZZ_GEOM_ZLOG:
		ops = &smr_zoned_ops;
		data_start = 2 * FUZZ_ZONE_SIZE;
		break;
	default:
		ops = flags & FUZZ_ALLOC_FLASH ? &smr_flash_ops : &smr_rot_ops;
		data_start = 4ULL << 20;
		break;
	}
	if (smr_dev_open(fuzz_dev_path(g), &dopts, &dev))
		abort(); /* the harness's own device */
	if (!smr_alloc_open(ops, dev, data_start, h.uuid, &ref, &a)) {
		fuzz_alloc_use(a, &ref);
		smr_alloc_close(a);
	}
	smr_dev_close(dev);
out:
	fuzz_img_free(&img);
	return 0;
}
