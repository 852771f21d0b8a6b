/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sb.c - superblock and checkpoint codecs and verifiers. */
#include "format/sb.h"

#include <endian.h>
#include <string.h>

/* ------------------------------------------------------------------------
 * Superblock
 * ------------------------------------------------------------------------ */

static bool smr_str_ok(const char *s, size_t len)
{
	/* NUL terminated inside the field and NUL padded after it. */
	size_t n = strnlen(s, len);

	if (n == len)
		return false;
	for (size_t i = n; i < len; i++)
		if (s[i])
			return false;
	return true;
}

static bool smr_zero(const void *p, size_t len)
{
	const uint8_t *b = p;

	/* The first byte zero and each byte equal to the one before it:
	 * memcmp's vector loop rather than a byte at a time, which was a
	 * sixth of a commit's instructions (a checkpoint is sealed with its
	 * verifier, and its tail is nearly 16 KiB of zeros). */
	return !len || (!b[0] && !memcmp(b, b + 1, len - 1));
}

static int smr_sb_verify(const void *blk, size_t len, uint64_t addr)
{
	const struct smr_dsb *d = blk;
	uint32_t bs = le32toh(d->block_size), ns = le32toh(d->node_size);
	uint32_t cs = le32toh(d->ckpt_size), scheme = le32toh(d->ckpt_scheme);
	uint64_t cap = le64toh(d->capacity), ds = le64toh(d->data_start);

	if (len != SMR_SB_SIZE)
		return smr_corrupt(addr, "superblock: bad size");
	if (le64toh(d->hdr.owner) != SMR_OWNER_SB || d->hdr.level)
		return smr_corrupt(addr, "superblock: bad owner or level");
	if (!SMR_IS_POW2(bs) || bs < 512 || bs > SMR_SB_SIZE)
		return smr_corrupt(addr, "superblock: bad block size");
	if (!SMR_IS_POW2(ns) || ns < SMR_NODE_MIN_SIZE ||
	    ns > SMR_NODE_MAX_SIZE)
		return smr_corrupt(addr, "superblock: bad node size");
	if (cs != SMR_CKPT_SIZE)
		return smr_corrupt(addr, "superblock: bad checkpoint size");
	if (!ds || ds % bs || ds >= cap)
		return smr_corrupt(addr, "superblock: bad data start");
	if (scheme < SMR_CKPT_AREA || scheme > SMR_CKPT_ZONELOG)
		return smr_corrupt(addr, "superblock: bad checkpoint scheme");
	/* In 128 bits: a huge slot size must not wrap around to "fits". */
	if ((unsigned __int128)le64toh(d->ckpt_start) +
	    (unsigned __int128)le64toh(d->ckpt_len) *
		    le32toh(d->ckpt_nr_slots) > ds)
		return smr_corrupt(addr, "superblock: checkpoints overlap data");
	if (!smr_str_ok(d->alloc, sizeof(d->alloc)) ||
	    !smr_str_ok(d->label, sizeof(d->label)))
		return smr_corrupt(addr, "superblock: unterminated string");
	if (!smr_zero(d->reserved, sizeof(d->reserved)))
		return smr_corrupt(addr, "superblock: reserved bytes not zero");
	return 0;
}

const struct smr_blk_ops smr_sb_ops = {
	.name = "superblock",
	.magic = SMR_MAGIC_SB,
	.verify = smr_sb_verify,
};

int smr_sb_to_disk(const struct smr_sb *sb, void *blk, uint64_t addr)
{
	struct smr_dsb *d = blk;

	memset(d, 0, sizeof(*d));
	smr_blk_hdr_init(d, &smr_sb_ops, SMR_SB_SIZE, addr, 1, SMR_OWNER_SB,
			 sb->uuid, 0);
	d->format_major = htole16(sb->format_major);
	d->format_minor = htole16(sb->format_minor);
	d->block_size = htole32(sb->block_size);
	d->node_size = htole32(sb->node_size);
	d->ckpt_size = htole32(sb->ckpt_size);
	d->features_compat = htole64(sb->features_compat);
	d->features_ro_compat = htole64(sb->features_ro_compat);
	d->features_incompat = htole64(sb->features_incompat);
	d->capacity = htole64(sb->capacity);
	d->zone_size = htole64(sb->zone_size);
	d->zone_cap = htole64(sb->zone_cap);
	d->nr_zones = htole32(sb->nr_zones);
	d->nr_cnv_zones = htole32(sb->nr_cnv_zones);
	d->data_start = htole64(sb->data_start);
	d->ckpt_scheme = htole32(sb->ckpt_scheme);
	d->ckpt_nr_slots = htole32(sb->ckpt_nr_slots);
	d->ckpt_start = htole64(sb->ckpt_start);
	d->ckpt_len = htole64(sb->ckpt_len);
	memcpy(d->alloc, sb->alloc, strnlen(sb->alloc, sizeof(d->alloc) - 1));
	memcpy(d->label, sb->label, strnlen(sb->label, sizeof(d->label) - 1));
	d->ctime = htole64(sb->ctime);
	return smr_blk_seal(d, SMR_SB_SIZE, &smr_sb_ops);
}

int smr_sb_from_disk(const void *blk, uint64_t addr, struct smr_sb *sb)
{
	const struct smr_dsb *d = blk;
	struct smr_blk_expect exp = { .addr = addr, .owner = SMR_OWNER_SB };
	int rc;

	if (le32toh(d->hdr.magic) != SMR_MAGIC_SB)
		return -EINVAL;
	rc = smr_blk_verify(d, SMR_SB_SIZE, &smr_sb_ops, &exp);
	if (rc)
		return rc;
	memset(sb, 0, sizeof(*sb));
	memcpy(sb->uuid, d->hdr.uuid, sizeof(sb->uuid));
	sb->format_major = le16toh(d->format_major);
	sb->format_minor = le16toh(d->format_minor);
	sb->block_size = le32toh(d->block_size);
	sb->node_size = le32toh(d->node_size);
	sb->ckpt_size = le32toh(d->ckpt_size);
	sb->features_compat = le64toh(d->features_compat);
	sb->features_ro_compat = le64toh(d->features_ro_compat);
	sb->features_incompat = le64toh(d->features_incompat);
	sb->capacity = le64toh(d->capacity);
	sb->zone_size = le64toh(d->zone_size);
	sb->zone_cap = le64toh(d->zone_cap);
	sb->nr_zones = le32toh(d->nr_zones);
	sb->nr_cnv_zones = le32toh(d->nr_cnv_zones);
	sb->data_start = le64toh(d->data_start);
	sb->ckpt_scheme = le32toh(d->ckpt_scheme);
	sb->ckpt_nr_slots = le32toh(d->ckpt_nr_slots);
	sb->ckpt_start = le64toh(d->ckpt_start);
	sb->ckpt_len = le64toh(d->ckpt_len);
	memcpy(sb->alloc, d->alloc, sizeof(sb->alloc));
	memcpy(sb->label, d->label, sizeof(sb->label));
	sb->ctime = le64toh(d->ctime);
	return 0;
}

/* ------------------------------------------------------------------------
 * Checkpoint
 * ------------------------------------------------------------------------ */

static int smr_ckpt_verify(const void *blk, size_t len, uint64_t addr)
{
	const struct smr_dckpt *d = blk;
	uint32_t nr = le32toh(d->nr_roots), np = le32toh(d->nr_pending);
	const struct smr_dextent *pe = (const void *)(d + 1);

	if (len != SMR_CKPT_SIZE)
		return smr_corrupt(addr, "checkpoint: bad size");
	if (le64toh(d->hdr.owner) != SMR_OWNER_CKPT || d->hdr.level ||
	    !d->hdr.gen)
		return smr_corrupt(addr, "checkpoint: bad owner, level or gen");
	if (nr > SMR_CKPT_MAX_ROOTS)
		return smr_corrupt(addr, "checkpoint: too many roots");
	if (np > SMR_CKPT_MAX_PENDING)
		return smr_corrupt(addr, "checkpoint: too many pending frees");
	if (le64toh(d->prev_gen) >= le64toh(d->hdr.gen))
		return smr_corrupt(addr, "checkpoint: predecessor not older");
	if (!smr_zero(&d->reserved0, sizeof(d->reserved0)) ||
	    !smr_zero(d->reserved1, sizeof(d->reserved1)))
		return smr_corrupt(addr, "checkpoint: reserved bytes not zero");
	for (uint32_t i = 0; i < SMR_CKPT_MAX_ROOTS; i++) {
		const struct smr_droot *r = &d->roots[i];

		if (i >= nr) {
			if (!smr_zero(r, sizeof(*r)))
				return smr_corrupt(addr,
					"checkpoint: unused root not zero");
			continue;
		}
		if (!r->tree || le64toh(r->tree) > SMR_CKPT_MAX_ROOTS)
			return smr_corrupt(addr, "checkpoint: bad tree id");
		if (!smr_zero(r->pad, sizeof(r->pad)))
			return smr_corrupt(addr, "checkpoint: root pad not zero");
		if (le16toh(r->level) >= SMR_BT_MAX_LEVEL)
			return smr_corrupt(addr, "checkpoint: root level too high");
		if (r->addr && (!r->gen || le64toh(r->gen) > le64toh(d->hdr.gen)))
			return smr_corrupt(addr, "checkpoint: bad root generation");
		if (!r->addr && (r->nr_items || r->level))
			return smr_corrupt(addr, "checkpoint: empty tree with items");
	}
	for (uint32_t i = 0; i < np; i++)
		if (!pe[i].len)
			return smr_corrupt(addr, "checkpoint: empty pending extent");
	if (!smr_zero(pe + np, len - sizeof(*d) - np * sizeof(*pe)))
		return smr_corrupt(addr, "checkpoint: tail not zero");
	return 0;
}

const struct smr_blk_ops smr_ckpt_ops = {
	.name = "checkpoint",
	.magic = SMR_MAGIC_CKPT,
	.verify = smr_ckpt_verify,
};

int smr_ckpt_to_disk(const struct smr_ckpt *ck, const uint8_t uuid[16],
		     void *blk, size_t size, uint64_t addr)
{
	struct smr_dckpt *d = blk;
	struct smr_dextent *pe = (void *)(d + 1);

	if (size != SMR_CKPT_SIZE || ck->nr_roots > SMR_CKPT_MAX_ROOTS ||
	    ck->nr_pending > SMR_CKPT_MAX_PENDING)
		return -EINVAL;
	memset(blk, 0, size);
	smr_blk_hdr_init(d, &smr_ckpt_ops, size, addr, ck->gen, SMR_OWNER_CKPT,
			 uuid, 0);
	d->alloc_off = htole64(ck->alloc_off);
	d->alloc_len = htole64(ck->alloc_len);
	d->alloc_csum = htole64(ck->alloc_csum);
	d->alloc_gen = htole64(ck->alloc_gen);
	d->nr_nodes = htole64(ck->nr_nodes);
	d->prev_gen = htole64(ck->prev_gen);
	d->gc_runs = htole64(ck->gc_runs);
	d->gc_zones = htole64(ck->gc_zones);
	d->gc_usecs = htole64(ck->gc_usecs);
	d->nr_roots = htole32(ck->nr_roots);
	d->nr_pending = htole32(ck->nr_pending);
	for (uint32_t i = 0; i < ck->nr_roots; i++) {
		d->roots[i].tree = htole64(ck->roots[i].tree);
		d->roots[i].addr = htole64(ck->roots[i].addr);
		d->roots[i].gen = htole64(ck->roots[i].gen);
		d->roots[i].nr_items = htole64(ck->roots[i].nr_items);
		d->roots[i].level = htole16(ck->roots[i].level);
	}
	for (uint32_t i = 0; i < ck->nr_pending; i++) {
		pe[i].off = htole64(ck->pending[i].off);
		pe[i].len = htole64(ck->pending[i].len);
	}
	return smr_blk_seal(d, size, &smr_ckpt_ops);
}

int smr_ckpt_fix_bit(void *blk, size_t size, uint64_t addr,
		     const uint8_t *uuid)
{
	struct smr_blk_expect exp = { .addr = addr, .owner = SMR_OWNER_CKPT,
				      .uuid = uuid };

	return smr_blk_fix_bit(blk, size, &smr_ckpt_ops, &exp);
}

int smr_ckpt_from_disk(const void *blk, size_t size, uint64_t addr,
		       const uint8_t *uuid, struct smr_ckpt *ck)
{
	const struct smr_dckpt *d = blk;
	const struct smr_dextent *pe = (const void *)(d + 1);
	struct smr_blk_expect exp = { .addr = addr, .owner = SMR_OWNER_CKPT,
				      .uuid = uuid };
	int rc;

	rc = smr_blk_verify(d, size, &smr_ckpt_ops, &exp);
	if (rc)
		return rc;
	ck->gen = le64toh(d->hdr.gen);
	ck->alloc_off = le64toh(d->alloc_off);
	ck->alloc_len = le64toh(d->alloc_len);
	ck->alloc_csum = le64toh(d->alloc_csum);
	ck->alloc_gen = le64toh(d->alloc_gen);
	ck->nr_nodes = le64toh(d->nr_nodes);
	ck->prev_gen = le64toh(d->prev_gen);
	ck->gc_runs = le64toh(d->gc_runs);
	ck->gc_zones = le64toh(d->gc_zones);
	ck->gc_usecs = le64toh(d->gc_usecs);
	ck->nr_roots = le32toh(d->nr_roots);
	ck->nr_pending = le32toh(d->nr_pending);
	memset(ck->roots, 0, sizeof(ck->roots));
	for (uint32_t i = 0; i < ck->nr_roots; i++) {
		ck->roots[i].tree = le64toh(d->roots[i].tree);
		ck->roots[i].addr = le64toh(d->roots[i].addr);
		ck->roots[i].gen = le64toh(d->roots[i].gen);
		ck->roots[i].nr_items = le64toh(d->roots[i].nr_items);
		ck->roots[i].level = le16toh(d->roots[i].level);
	}
	for (uint32_t i = 0; i < ck->nr_pending; i++) {
		ck->pending[i].off = le64toh(pe[i].off);
		ck->pending[i].len = le64toh(pe[i].len);
	}
	return 0;
}
