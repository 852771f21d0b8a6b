/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_super.c - the superblock and checkpoint codecs (src/format/sb.c).
 *
 * Input: flags byte (FUZZ_F_RESEAL; FUZZ_SUPER_CKPT picks the checkpoint,
 * else the superblock), then records over one block. What decodes must
 * encode back to a block that decodes to the same thing.
 */
#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include "format/sb.h"
#include "fuzz.h"

static void fuzz_sb(uint8_t *blk)
{
	const struct smr_blk_hdr *h = (const void *)blk;
	uint64_t addr = le64toh(h->addr);
	struct smr_sb sb, sb2;
	uint8_t *out;

	if (smr_sb_from_disk(blk, addr, &sb))
		return;
	out = malloc(SMR_SB_SIZE);
	if (!out)
		return;
	if (smr_sb_to_disk(&sb, out, addr) ||
	    smr_sb_from_disk(out, addr, &sb2) || memcmp(&sb, &sb2, sizeof(sb)))
		abort(); /* decoded, but does not encode to itself */
	free(out);
}

static void fuzz_ckpt(uint8_t *blk)
{
	const struct smr_blk_hdr *h = (const void *)blk;
	uint64_t addr = le64toh(h->addr);
	struct smr_ckpt *ck, *ck2;
	uint8_t *out;

	ck = calloc(2, sizeof(*ck));
	out = malloc(SMR_CKPT_SIZE);
	if (!ck || !out)
		goto out;
	ck2 = ck + 1;
	if (smr_ckpt_from_disk(blk, SMR_CKPT_SIZE, addr, h->uuid, ck))
		goto out;
	if (smr_ckpt_to_disk(ck, h->uuid, out, SMR_CKPT_SIZE, addr) ||
	    smr_ckpt_from_disk(out, SMR_CKPT_SIZE, addr, NULL, ck2) ||
	    memcmp(ck, ck2, offsetof(struct smr_ckpt, pending)) ||
	    memcmp(ck->pending, ck2->pending,
		   ck->nr_pending * sizeof(ck->pending[0])))
		abort();
out:
	free(out);
	free(ck);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	uint8_t flags = fuzz_u8(&in);
	size_t len = flags & FUZZ_SUPER_CKPT ? SMR_CKPT_SIZE : SMR_SB_SIZE;
	/* Exactly the block: a read past it is a sanitizer report. */
	uint8_t *blk = calloc(1, len);

	fuzz_setup();
	if (!blk)
		return 0;
	fuzz_sparse_flat(&in, blk, len);
	if (flags & FUZZ_F_RESEAL)
		((struct smr_blk_hdr *)blk)->csum =
			htole64(smr_blk_csum(blk, len));
	if (flags & FUZZ_SUPER_CKPT)
		fuzz_ckpt(blk);
	else
		fuzz_sb(blk);
	free(blk);
	return 0;
}
