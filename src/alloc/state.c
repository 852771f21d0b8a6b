/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * state.c - the persisted allocator state: blocks of entries behind a
 * summary, sealed and verified with the common block header.
 *
 * Block 0 lists the extents the state occupies, so that a reader finds the
 * whole state from the one offset the checkpoint holds, and reads the rest
 * in one batch.
 */
#include "alloc/alloc_int.h"

#include <endian.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/blk.h"

/* A corrupt reference must not make us allocate without bound. */
#define STATE_MAX_BYTES (1ULL << 30)

static size_t entries_in_blk(uint32_t idx, size_t entry_size)
{
	size_t at = idx ? SMR_ALLOC_STATE_ENTRIES_OFF :
			  SMR_ALLOC_STATE_ENTRIES0_OFF;

	return (SMR_ALLOC_STATE_BLKSZ - at) / entry_size;
}

static int state_verify(const void *blk, size_t len, uint64_t addr)
{
	const uint8_t *b = blk;
	const struct smr_alloc_state_blk *sb =
		(const void *)(b + SMR_ALLOC_STATE_BLK_OFF);
	uint32_t idx = le32toh(sb->blk_index);
	uint32_t es = le32toh(sb->entry_size);
	uint32_t mod = le32toh(sb->module);

	if (len != SMR_ALLOC_STATE_BLKSZ)
		return smr_corrupt(addr, "allocator state: bad block size");
	if (mod < SMR_ALLOC_MOD_ZONED || mod > SMR_ALLOC_MOD_FLASH)
		return smr_corrupt(addr, "allocator state: unknown module");
	if (es != sizeof(struct smr_alloc_zone_d) &&
	    es != sizeof(struct smr_alloc_ext_d))
		return smr_corrupt(addr, "allocator state: bad entry size");
	if (idx >= le32toh(sb->nr_blks))
		return smr_corrupt(addr, "allocator state: index past count");
	if (le32toh(sb->nr_entries) > entries_in_blk(idx, es))
		return smr_corrupt(addr, "allocator state: too many entries");
	if (sb->reserved)
		return smr_corrupt(addr, "allocator state: reserved not zero");
	if (idx == 0) {
		const struct smr_alloc_state_head *h =
			(const void *)(b + SMR_ALLOC_STATE_HEAD_OFF);

		if (le32toh(h->nr_ext) < 1 ||
		    le32toh(h->nr_ext) > SMR_ALLOC_STATE_MAX_EXT)
			return smr_corrupt(addr,
					   "allocator state: bad extent count");
		if (h->reserved[0])
			return smr_corrupt(addr,
					   "allocator state: reserved not zero");
	}
	return 0;
}

static const struct smr_blk_ops state_blk_ops = {
	.name = "allocator state",
	.magic = SMR_MAGIC_ALLOC,
	.verify = state_verify,
};

void smr_state_sum_init(struct smr_alloc *a, struct smr_state_sum *sum)
{
	memset(sum, 0, sizeof(*sum));
	sum->data_start = a->data_start;
	sum->capacity = a->info->capacity;
	sum->block_size = a->info->block_size;
	sum->nr_zones = a->info->nr_zones;
	for (int i = 0; i < SMR_STREAM_NR; i++)
		sum->slot_zone[i] = SMR_ALLOC_NO_ZONE;
	sum->user_bytes = __atomic_load_n(&a->user_bytes, __ATOMIC_RELAXED);
}

uint64_t smr_state_bytes(size_t entry_size, uint64_t n)
{
	uint64_t blks = 1;
	uint64_t first = entries_in_blk(0, entry_size);
	uint64_t per = entries_in_blk(1, entry_size);

	if (n > first)
		blks += SMR_DIV_ROUND_UP(n - first, per);
	return blks * SMR_ALLOC_STATE_BLKSZ;
}

void smr_state_unalloc(struct smr_alloc *a, const struct smr_extent *ext,
		       unsigned int nr)
{
	for (unsigned int i = 0; i < nr; i++) {
		if (a->ops->write_failed)
			a->ops->write_failed(a, ext[i].off, ext[i].len);
		else
			a->ops->free(a, ext[i].off, ext[i].len);
	}
}

int smr_state_alloc(struct smr_alloc *a, uint64_t bytes,
		    struct smr_extent *ext)
{
	struct smr_alloc_hint hint = { .contiguous = true };
	unsigned int nr = 0;
	uint64_t got = 0;
	int rc;

	/* Only whole state blocks count: a piece shorter than one (a zone's
	 * tail on a device of small blocks) is padding. */
	while (got < bytes && nr < SMR_ALLOC_STATE_MAX_EXT) {
		/* One piece at a time, so that a short piece's padding is
		 * not followed by another short piece. */
		rc = a->ops->alloc(a, bytes - got, &hint, SMR_STREAM_META,
				   ext + nr, 1);
		if (rc < 0)
			goto out_undo;
		got += SMR_ROUND_DOWN(ext[nr].len, SMR_ALLOC_STATE_BLKSZ);
		nr++;
	}
	if (got < bytes) {
		rc = -ENOSPC;
		goto out_undo;
	}
	return (int)nr;

out_undo:
	smr_state_unalloc(a, ext, nr);
	return rc;
}

/*
 * The layout of the state over its extents: each extent holds as many
 * whole blocks as fit from its start, in order; the rest of an extent
 * (shorter than a block) is zero padding. The state's buffer is the
 * extents' bytes back to back.
 */
static uint64_t layout_blocks(const struct smr_extent *ext,
			      unsigned int nr_ext)
{
	uint64_t n = 0;

	for (unsigned int e = 0; e < nr_ext; e++)
		n += ext[e].len / SMR_ALLOC_STATE_BLKSZ;
	return n;
}

/* Where block @i lies: its byte position in the buffer and its device
 * address. False if there is no such block. */
static bool layout_blk(const struct smr_extent *ext, unsigned int nr_ext,
		       uint64_t i, uint64_t *pos, uint64_t *addr)
{
	uint64_t at = 0;

	for (unsigned int e = 0; e < nr_ext; e++) {
		uint64_t in = ext[e].len / SMR_ALLOC_STATE_BLKSZ;

		if (i < in) {
			*pos = at + i * SMR_ALLOC_STATE_BLKSZ;
			*addr = ext[e].off + i * SMR_ALLOC_STATE_BLKSZ;
			return true;
		}
		i -= in;
		at += ext[e].len;
	}
	return false;
}

static void sum_to_disk(const struct smr_state_sum *s, uint64_t total,
			const struct smr_extent *ext, unsigned int nr_ext,
			struct smr_alloc_state_head *h)
{
	memset(h, 0, sizeof(*h));
	h->data_start = htole64(s->data_start);
	h->capacity = htole64(s->capacity);
	h->total_entries = htole64(total);
	h->block_size = htole32(s->block_size);
	h->nr_zones = htole32(s->nr_zones);
	h->nr_ext = htole32(nr_ext);
	h->reserve_zones = htole32(s->reserve_zones);
	for (int i = 0; i < SMR_STREAM_NR; i++) {
		h->slot_zone[i] = htole32(s->slot_zone[i]);
		h->bytes_allocated[i] = htole64(s->stats.bytes_allocated[i]);
	}
	h->bytes_freed = htole64(s->stats.bytes_freed);
	h->nr_allocs = htole64(s->stats.nr_allocs);
	h->zones_reset = htole64(s->stats.zones_reset);
	h->zones_finished = htole64(s->stats.zones_finished);
	h->cursor = htole64(s->cursor);
	h->nr_cooling = htole64(s->nr_cooling);
	h->user_bytes = htole64(s->user_bytes);
	for (unsigned int i = 0; i < nr_ext; i++) {
		h->ext[i].off = htole64(ext[i].off);
		h->ext[i].len = htole64(ext[i].len);
	}
}

static void sum_from_disk(const struct smr_alloc_state_head *h,
			  struct smr_state_sum *s)
{
	memset(s, 0, sizeof(*s));
	s->data_start = le64toh(h->data_start);
	s->capacity = le64toh(h->capacity);
	s->block_size = le32toh(h->block_size);
	s->nr_zones = le32toh(h->nr_zones);
	s->reserve_zones = le32toh(h->reserve_zones);
	for (int i = 0; i < SMR_STREAM_NR; i++) {
		s->slot_zone[i] = le32toh(h->slot_zone[i]);
		s->stats.bytes_allocated[i] = le64toh(h->bytes_allocated[i]);
	}
	s->stats.bytes_freed = le64toh(h->bytes_freed);
	s->stats.nr_allocs = le64toh(h->nr_allocs);
	s->stats.zones_reset = le64toh(h->zones_reset);
	s->stats.zones_finished = le64toh(h->zones_finished);
	s->cursor = le64toh(h->cursor);
	s->nr_cooling = le64toh(h->nr_cooling);
	s->user_bytes = le64toh(h->user_bytes);
}

int smr_state_write(struct smr_alloc *a, uint32_t module, uint64_t gen,
		    const struct smr_state_sum *sum, const void *entries,
		    size_t entry_size, uint64_t n, const struct smr_extent *ext,
		    unsigned int nr_ext, struct smr_alloc_ref *ref)
{
	uint64_t total = 0, nblks, done = 0, bpos = 0, baddr = 0, addr0 = 0;
	uint8_t *buf;
	size_t pos;
	int rc;

	for (unsigned int i = 0; i < nr_ext; i++)
		total += ext[i].len;
	nblks = layout_blocks(ext, nr_ext);
	if (nblks * SMR_ALLOC_STATE_BLKSZ < smr_state_bytes(entry_size, n) ||
	    nblks > UINT32_MAX)
		return smr_corrupt(ext[0].off,
				   "allocator state larger than its space");
	buf = smr_dev_buf_alloc(total);
	if (!buf)
		return -ENOMEM;

	for (uint64_t i = 0; i < nblks; i++) {
		uint8_t *b;
		struct smr_alloc_state_blk *sb;
		uint64_t cnt = SMR_MIN(n - done, entries_in_blk(i, entry_size));

		layout_blk(ext, nr_ext, i, &bpos, &baddr);
		if (i == 0)
			addr0 = baddr;
		b = buf + bpos;
		sb = (void *)(b + SMR_ALLOC_STATE_BLK_OFF);
		smr_blk_hdr_init(b, &state_blk_ops, SMR_ALLOC_STATE_BLKSZ,
				 baddr, gen, SMR_OWNER_ALLOC, a->fs_uuid, 0);
		sb->module = htole32(module);
		sb->blk_index = htole32((uint32_t)i);
		sb->nr_blks = htole32((uint32_t)nblks);
		sb->entry_size = htole32((uint32_t)entry_size);
		sb->first_entry = htole64(done);
		sb->nr_entries = htole32((uint32_t)cnt);
		if (i == 0) {
			sum_to_disk(sum, n, ext, nr_ext,
				    (void *)(b + SMR_ALLOC_STATE_HEAD_OFF));
			pos = SMR_ALLOC_STATE_ENTRIES0_OFF;
		} else {
			pos = SMR_ALLOC_STATE_ENTRIES_OFF;
		}
		memcpy(b + pos, (const uint8_t *)entries + done * entry_size,
		       cnt * entry_size);
		done += cnt;
		rc = smr_blk_seal(b, SMR_ALLOC_STATE_BLKSZ, &state_blk_ops);
		if (rc)
			goto out_free;
	}

	/* One extent after the other, not as one batch: extents in two zones
	 * written at once could make one zone too many active while the
	 * first is not yet full. */
	pos = 0;
	for (unsigned int i = 0; i < nr_ext; i++) {
		rc = smr_dev_write(a->dev, buf + pos, ext[i].len, ext[i].off);
		if (rc) {
			smr_err("allocator state: writing %" PRIu64
				" bytes at %" PRIu64 " failed: %s", ext[i].len,
				ext[i].off, strerror(-rc));
			goto out_free;
		}
		pos += ext[i].len;
	}
	ref->off = addr0;
	ref->len = total;
	ref->csum = smr_hash64(buf, total, 0);
	ref->gen = gen;

out_free:
	smr_dev_buf_free(buf);
	return rc;
}

static int check_sum(struct smr_alloc *a, const struct smr_state_sum *s)
{
	if (s->data_start != a->data_start || s->capacity != a->info->capacity ||
	    s->block_size != a->info->block_size ||
	    s->nr_zones != a->info->nr_zones) {
		smr_err("allocator state is of another device or layout: "
			"data start %" PRIu64 " capacity %" PRIu64
			" block %u zones %u, device has %" PRIu64 " %" PRIu64
			" %u %u", s->data_start, s->capacity, s->block_size,
			s->nr_zones, a->data_start, a->info->capacity,
			a->info->block_size, a->info->nr_zones);
		return -EINVAL;
	}
	return 0;
}

/*
 * Can @module read a state that @wrote wrote? rotational and flash keep the
 * same state, free and cooling extents, so each reads the other's: the
 * mount option alloc= may switch between them, and the module recorded at
 * mkfs reads what the other left.
 */
static bool state_module_reads(uint32_t module, uint32_t wrote)
{
	return wrote == module || (module != SMR_ALLOC_MOD_ZONED &&
				   wrote != SMR_ALLOC_MOD_ZONED);
}

/*
 * Verify a state block read at exp->addr; one flipped bit is put back
 * (smr_blk_fix_bit), as the engine does for its own blocks, and the whole
 * state's checksum checks it once more. Logged if @say.
 */
static int state_blk_check(struct smr_alloc *a, void *b,
			   const struct smr_blk_expect *exp, bool say)
{
	int rc = smr_blk_verify(b, SMR_ALLOC_STATE_BLKSZ, &state_blk_ops, exp);

	if (rc != -SMR_EFSBADCRC ||
	    smr_blk_fix_bit(b, SMR_ALLOC_STATE_BLKSZ, &state_blk_ops, exp))
		return rc;
	if (say)
		smr_warn("allocator state block at byte %" PRIu64 ": one bit "
			 "flipped, restored from its checksum", exp->addr);
	a->state_restored = true;
	return 0;
}

int smr_state_read(struct smr_alloc *a, uint32_t module,
		   const struct smr_alloc_ref *ref, size_t entry_size,
		   struct smr_state_sum *sum, void **entries, uint64_t *n,
		   struct smr_extent *ext, unsigned int *nr_ext)
{
	struct smr_io ios[SMR_ALLOC_STATE_MAX_EXT];
	struct smr_blk_expect exp = {
		.addr = ref->off,
		.gen = ref->gen,
		.owner = SMR_OWNER_ALLOC,
		.uuid = a->fs_uuid,
	};
	const struct smr_alloc_state_head *h;
	uint64_t total = 0, nblks, done = 0, count, bpos = 0, baddr = 0;
	uint64_t bs = a->info->block_size;
	uint8_t *buf = NULL, *b0, *out = NULL;
	unsigned int ne;
	size_t pos;
	int rc;

	if (ref->len < SMR_ALLOC_STATE_BLKSZ || ref->len > STATE_MAX_BYTES ||
	    ref->len % bs || ref->off % bs || ref->off < a->data_start ||
	    ref->off >= a->info->capacity ||
	    ref->len > a->info->capacity - ref->off)
		return smr_corrupt(ref->off, "allocator state: bad reference");
	b0 = smr_dev_buf_alloc(SMR_ALLOC_STATE_BLKSZ);
	if (!b0)
		return -ENOMEM;
	rc = smr_dev_read(a->dev, b0, SMR_ALLOC_STATE_BLKSZ, ref->off);
	if (rc) {
		smr_err("allocator state: reading block 0 at %" PRIu64 ": %s",
			ref->off, strerror(-rc));
		goto out_free;
	}
	rc = state_blk_check(a, b0, &exp, false);
	if (rc)
		goto out_free;
	h = (const void *)(b0 + SMR_ALLOC_STATE_HEAD_OFF);
	ne = le32toh(h->nr_ext);
	for (unsigned int i = 0; i < ne; i++) {
		ext[i].off = le64toh(h->ext[i].off);
		ext[i].len = le64toh(h->ext[i].len);
		if (ext[i].len % bs || ext[i].off % bs || !ext[i].len ||
		    ext[i].off < a->data_start ||
		    ext[i].off >= a->info->capacity ||
		    ext[i].len > a->info->capacity - ext[i].off) {
			rc = smr_corrupt(ref->off,
					 "allocator state: bad extent table");
			goto out_free;
		}
		total += ext[i].len;
	}
	nblks = layout_blocks(ext, ne);
	if (total != ref->len || !nblks ||
	    !layout_blk(ext, ne, 0, &bpos, &baddr) || baddr != ref->off) {
		rc = smr_corrupt(ref->off,
				 "allocator state: extents differ from reference");
		goto out_free;
	}
	sum_from_disk(h, sum);
	count = le64toh(h->total_entries);
	if (sum->nr_cooling > count) {
		rc = smr_corrupt(ref->off, "allocator state: cooling count");
		goto out_free;
	}

	/* All of it, block 0 again included, in one batch. */
	buf = smr_dev_buf_alloc(total);
	if (!buf) {
		rc = -ENOMEM;
		goto out_free;
	}
	pos = 0;
	for (unsigned int i = 0; i < ne; i++) {
		ios[i].op = SMR_IO_READ;
		ios[i].buf = buf + pos;
		ios[i].len = ext[i].len;
		ios[i].off = ext[i].off;
		ios[i].result = 0;
		pos += ext[i].len;
	}
	rc = smr_dev_submit(a->dev, ios, ne);
	if (rc) {
		smr_err("allocator state: reading %" PRIu64 " bytes at %" PRIu64
			": %s", ref->len, ref->off, strerror(-rc));
		goto out_free;
	}

	if (count > nblks * (SMR_ALLOC_STATE_BLKSZ / entry_size)) {
		rc = smr_corrupt(ref->off, "allocator state: entry count");
		goto out_free;
	}
	out = malloc(count ? count * entry_size : 1);
	if (!out) {
		rc = -ENOMEM;
		goto out_free;
	}
	for (uint64_t i = 0; i < nblks; i++) {
		uint8_t *b;
		const struct smr_alloc_state_blk *sb;
		uint64_t cnt;

		layout_blk(ext, ne, i, &bpos, &baddr);
		b = buf + bpos;
		sb = (const void *)(b + SMR_ALLOC_STATE_BLK_OFF);
		exp.addr = baddr;
		rc = state_blk_check(a, b, &exp, true);
		if (rc)
			goto out_free;
		cnt = le32toh(sb->nr_entries);
		if (!state_module_reads(module, le32toh(sb->module)) ||
		    le32toh(sb->entry_size) != entry_size ||
		    le32toh(sb->blk_index) != i ||
		    le32toh(sb->nr_blks) != nblks ||
		    le64toh(sb->first_entry) != done || done + cnt > count) {
			char why[96];

			snprintf(why, sizeof(why),
				 "allocator state: block %" PRIu64
				 " out of place or of another module", i);
			rc = smr_corrupt(baddr, why);
			goto out_free;
		}
		memcpy(out + done * entry_size,
		       b + (i ? SMR_ALLOC_STATE_ENTRIES_OFF :
				SMR_ALLOC_STATE_ENTRIES0_OFF),
		       cnt * entry_size);
		done += cnt;
	}
	if (done != count) {
		rc = smr_corrupt(ref->off, "allocator state: entries missing");
		goto out_free;
	}
	if (smr_hash64(buf, total, 0) != ref->csum) {
		smr_err("allocator state at %" PRIu64
			": checksum of the whole state differs from the "
			"checkpoint's", ref->off);
		rc = -SMR_EFSBADCRC;
		goto out_free;
	}
	rc = check_sum(a, sum);
	if (rc)
		goto out_free;
	*entries = out;
	out = NULL;
	*n = count;
	*nr_ext = ne;

out_free:
	free(out);
	smr_dev_buf_free(buf);
	smr_dev_buf_free(b0);
	return rc;
}
