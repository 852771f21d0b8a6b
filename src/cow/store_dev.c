/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * store_dev.c - the node store over a device and an allocator: the
 * superblocks, checkpoint placement, format and open.
 *
 * Layout (docs/FORMAT.md, "Checkpoint placement"): the engine owns the
 * device below sb.data_start, the allocator the rest.
 *
 *   not zoned (SMR_CKPT_AREA) and zone 0 conventional (SMR_CKPT_CNV):
 *     superblock copies at bytes 0 and 4096; a ring of checkpoint slots of
 *     16 KiB from byte 65536; data from 4 MiB (AREA) or from zone 1 (CNV).
 *     Commit n writes slot (previous slot + 1) mod nr_slots, so the ring
 *     holds the newest checkpoints and a torn write hits only the oldest.
 *   zone 0 sequential (SMR_CKPT_ZONELOG): zones 0 and 1 are a log; each
 *     starts with a superblock copy followed by appended checkpoints. When
 *     the active zone cannot take another checkpoint, it is finished first
 *     (its checkpoints stay readable; the log never holds two zones
 *     active), then the other zone (holding only older checkpoints) is
 *     reset and gets a superblock copy and the next checkpoint; the
 *     finished zone is reset when the log comes back to it. Data from
 *     zone 2.
 */
#include "cow/cow_priv.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SD_SLOTS_START (64 * SMR_KIB)
#define SD_AREA_DATA_START (4 * SMR_MIB)
/*
 * The checkpoint ring fills the bytes from SD_SLOTS_START to 4 MiB: 252
 * slots, each a checkpoint or a piece of an fsync log record, so that some
 * 250 records fit between two commits. Open reads every slot, 4 MiB.
 * Filesystems made with fewer slots (16 on regular files, at most 64 in a
 * conventional zone 0, before) keep them: the superblock says how many.
 */
#define SD_MAX_SLOTS ((SD_AREA_DATA_START - SD_SLOTS_START) / SMR_CKPT_SIZE)
#define SD_MAX_FILL 16

struct sd_state {
	uint32_t next_slot;        /* AREA/CNV: slot of the next checkpoint
				    * (after the newest checkpoint or fsync
				    * log record) */
	uint32_t ck_slot;          /* AREA/CNV: the newest checkpoint's */
	uint32_t prev_slot;        /* AREA/CNV: its predecessor's, if known */
	uint32_t log_zone;         /* ZONELOG: 0 or 1, the active log zone */
	uint32_t sb_heal;          /* ZONELOG: bit z set while zone z's
				    * superblock copy does not verify: the
				    * next commits move the log there */
	bool meta_locked;          /* we hold the META stream */
	struct smr_io fill[SD_MAX_FILL]; /* zone tails to pad in this commit */
	uint32_t nr_fill;
	void *zero;                /* a node of zeros for the padding */
	void *blk;                 /* SMR_CKPT_SIZE I/O buffer */
	bool restored;             /* the last record read had a bit flipped
				    * back (sd_read_ckpt) */
};

static struct sd_state *sd(struct smr_cow *c)
{
	return c->store;
}

/* ========================================================================
 * Geometry
 * ======================================================================== */

/* Fill the layout part of @sb for @dev. 0 or -EINVAL (logged unless
 * @quiet). */
static int sd_layout(struct smr_dev *dev, struct smr_sb *sb, bool quiet)
{
#define SD_REFUSE(...)                                                    \
	do {                                                              \
		if (!quiet)                                               \
			smr_err(__VA_ARGS__);                             \
		return -EINVAL;                                           \
	} while (0)
	const struct smr_dev_info *di = smr_dev_info(dev);
	struct smr_zone z0, z1, z2;

	sb->block_size = di->block_size;
	sb->capacity = di->capacity;
	sb->nr_zones = di->zoned ? di->nr_zones : 0;
	sb->nr_cnv_zones = di->zoned ? di->nr_cnv_zones : 0;
	sb->ckpt_size = SMR_CKPT_SIZE;
	if (di->block_size > SMR_SB_SIZE || SMR_SB_SIZE % di->block_size)
		SD_REFUSE("block size %u is not supported (at most %u)",
			  di->block_size, SMR_SB_SIZE);
	if (!di->zoned) {
		sb->zone_size = sb->zone_cap = 0;
		sb->ckpt_scheme = SMR_CKPT_AREA;
		sb->ckpt_start = SD_SLOTS_START;
		sb->ckpt_len = SMR_CKPT_SIZE;
		sb->ckpt_nr_slots = SD_MAX_SLOTS;
		sb->data_start = SD_AREA_DATA_START;
		if (di->capacity < sb->data_start + 16 * SMR_MIB)
			SD_REFUSE("device too small: %" PRIu64 " bytes, need at least %llu",
				  di->capacity, (unsigned long long)(sb->data_start + 16 * SMR_MIB));
		return 0;
	}
	if (di->nr_zones < 4 || smr_dev_zone(dev, 0, &z0) ||
	    smr_dev_zone(dev, 1, &z1) || smr_dev_zone(dev, 2, &z2))
		SD_REFUSE("device too small: %u zones, need at least 4",
			  di->nr_zones);
	sb->zone_size = z0.len;
	sb->zone_cap = z0.cap;
	if (smr_zone_is_cnv(&z0)) {
		uint64_t slots = (z0.cap - SD_SLOTS_START) / SMR_CKPT_SIZE;

		if (z0.cap < SD_SLOTS_START + 4 * SMR_CKPT_SIZE)
			SD_REFUSE("conventional zone 0 too small for checkpoints");
		sb->ckpt_scheme = SMR_CKPT_CNV;
		sb->ckpt_start = SD_SLOTS_START;
		sb->ckpt_len = SMR_CKPT_SIZE;
		sb->ckpt_nr_slots = (uint32_t)SMR_MIN(slots, SD_MAX_SLOTS);
		sb->data_start = z1.start;
		return 0;
	}
	if (!smr_zone_is_seq(&z1) || z1.len != z0.len || z1.cap != z0.cap ||
	    z0.cap < SMR_SB_SIZE + 2 * SMR_CKPT_SIZE)
		SD_REFUSE("zones 0 and 1 cannot hold the checkpoint log (capacity %" PRIu64 ")",
			  z0.cap);
	sb->ckpt_scheme = SMR_CKPT_ZONELOG;
	sb->ckpt_start = z0.start;
	sb->ckpt_len = z0.len;
	sb->ckpt_nr_slots = 2;
	sb->data_start = z2.start;
	return 0;
#undef SD_REFUSE
}

/*
 * The one check that a superblock describes @dev: capacity, block size,
 * zones and the checkpoint layout. Used by open (and so by fsck). An
 * unzoned device that can do I/O in the filesystem's block size is switched
 * to it first. Returns 0 or -EINVAL with a log line naming the difference.
 */
int smr_cow_validate_geometry(const struct smr_sb *sb, struct smr_dev *dev)
{
	const struct smr_dev_info *di = smr_dev_info(dev);
	struct smr_sb want = *sb;
	int rc;

	/* An unzoned device that can work in the filesystem's block size
	 * takes it (a file holding a filesystem made on a 512-byte-sector
	 * disk); the device says which it can. */
	if (sb->block_size != di->block_size && !di->zoned &&
	    !smr_dev_set_block_size(dev, sb->block_size))
		smr_debug("%s: block size %u, as the filesystem was made",
			 smr_dev_path(dev), sb->block_size);
	rc = sd_layout(dev, &want, false);
	if (rc)
		return rc;
#define SD_CHECK(f, what)                                                 \
	do {                                                              \
		if (want.f != sb->f) {                                    \
			smr_err("superblock does not match the device: %s " \
				"(filesystem %" PRIu64 ", device %" PRIu64 ")", \
				what, (uint64_t)sb->f, (uint64_t)want.f); \
			return -EINVAL;                                   \
		}                                                         \
	} while (0)
	SD_CHECK(capacity, "capacity");
	SD_CHECK(block_size, "block size");
	SD_CHECK(nr_zones, "number of zones");
	SD_CHECK(nr_cnv_zones, "number of conventional zones");
	SD_CHECK(zone_size, "zone size");
	SD_CHECK(zone_cap, "zone capacity");
	SD_CHECK(ckpt_scheme, "checkpoint placement");
	SD_CHECK(ckpt_start, "checkpoint start");
	SD_CHECK(ckpt_len, "checkpoint slot size");
	SD_CHECK(data_start, "data start");
	if (sb->ckpt_scheme != SMR_CKPT_ZONELOG &&
	    sb->ckpt_nr_slots > want.ckpt_nr_slots) {
		smr_err("superblock does not match the device: checkpoint slots");
		return -EINVAL;
	}
#undef SD_CHECK
	return 0;
}

/* ========================================================================
 * Superblock and checkpoint I/O
 * ======================================================================== */

static int sd_write_sb(struct smr_dev *dev, const struct smr_sb *sb,
		       uint64_t addr)
{
	void *buf = smr_dev_buf_alloc(SMR_SB_SIZE);
	int rc;

	if (!buf)
		return -ENOMEM;
	rc = smr_sb_to_disk(sb, buf, addr);
	if (!rc)
		rc = smr_dev_write(dev, buf, SMR_SB_SIZE, addr);
	smr_dev_buf_free(buf);
	return rc;
}

/* Where the superblock copies are, for whichever layout the device has. */
static int sd_read_sb(struct smr_dev *dev, struct smr_sb *sb)
{
	const struct smr_dev_info *di = smr_dev_info(dev);
	uint64_t where[2] = { 0, SMR_SB_SIZE };
	void *buf = smr_dev_buf_alloc(SMR_SB_SIZE);
	int rc = -EINVAL, first = 0;

	if (!buf)
		return -ENOMEM;
	if (di->zoned && di->nr_zones > 1 &&
	    smr_dev_zone_type(dev, 0) != SMR_ZONE_TYPE_CNV)
		where[1] = smr_dev_zone_start(dev, 1);
	for (int i = 0; i < 2; i++) {
		rc = smr_dev_read(dev, buf, SMR_SB_SIZE, where[i]);
		if (rc)
			break;
		rc = smr_sb_from_disk(buf, where[i], sb);
		if (!rc)
			break;
		if (rc != -EINVAL && !first)
			first = rc;
		if (i == 0 && rc != -EINVAL)
			smr_warn("superblock at byte 0 is damaged; trying the copy at byte %" PRIu64,
				 where[1]);
	}
	smr_dev_buf_free(buf);
	if (rc == -EINVAL && first)
		rc = first;
	return rc;
}

struct sd_cand {
	uint64_t gen, prev_gen, addr;
	uint32_t slot;
};

static int cand_cmp(const void *a, const void *b)
{
	const struct sd_cand *x = a, *y = b;

	return x->gen < y->gen ? 1 : x->gen > y->gen ? -1 : 0;
}

/* Read the checkpoint at @addr if there is one: 1 and *@ck if valid, 0 if
 * the place is empty, 2 if it holds an fsync log piece (in sd(c)->blk),
 * or an error (logged). A record whose header says a generation above
 * @fix_above is valid too if one flipped bit explains its damage (an older
 * one is not worth the search: open never takes it). */
static int sd_read_ckpt(struct smr_cow *c, uint64_t addr, struct smr_ckpt *ck,
			uint64_t fix_above)
{
	void *buf = sd(c)->blk;
	struct smr_blk_id id;
	int rc;

	rc = smr_dev_read(c->dev, buf, SMR_CKPT_SIZE, addr);
	if (rc)
		return rc;
	smr_blk_hdr_decode(buf, &id);
	if (id.magic == SMR_MAGIC_LOG)
		return 2; /* an fsync log piece: the caller looks */
	if (id.magic != SMR_MAGIC_CKPT) {
		static const uint8_t zero[64];

		if (memcmp(buf, zero, sizeof(zero)))
			smr_warn("checkpoint at byte %" PRIu64 ": not a checkpoint (torn or damaged)",
				 addr);
		return 0;
	}
	rc = smr_ckpt_from_disk(buf, SMR_CKPT_SIZE, addr, c->sb.uuid, ck);
	/* One flipped bit is found and put back: taking the predecessor
	 * instead would lose the commit, and the fsync log after it. */
	sd(c)->restored = false;
	if (rc == -SMR_EFSBADCRC && id.gen > fix_above &&
	    !smr_ckpt_fix_bit(buf, SMR_CKPT_SIZE, addr, c->sb.uuid)) {
		rc = smr_ckpt_from_disk(buf, SMR_CKPT_SIZE, addr, c->sb.uuid,
					ck);
		sd(c)->restored = !rc;
	}
	return rc ? rc : 1;
}

/* Every place a checkpoint may be, in no order. */
static int sd_places(const struct smr_sb *sb, struct smr_dev *dev,
		     struct sd_cand **cp, uint32_t *np)
{
	struct sd_cand *v;
	uint32_t n = 0, max;

	if (sb->ckpt_scheme != SMR_CKPT_ZONELOG) {
		max = sb->ckpt_nr_slots;
		v = calloc(max, sizeof(*v));
		if (!v)
			return -ENOMEM;
		for (uint32_t i = 0; i < max; i++) {
			v[n].addr = sb->ckpt_start + (uint64_t)i * sb->ckpt_len;
			v[n++].slot = i;
		}
	} else {
		uint64_t per = (sb->zone_cap - SMR_SB_SIZE) / SMR_CKPT_SIZE;

		v = calloc(2 * per, sizeof(*v));
		if (!v)
			return -ENOMEM;
		for (uint32_t z = 0; z < 2; z++) {
			uint64_t start = smr_dev_zone_start(dev, z);
			uint64_t wp = smr_dev_zone_wp(dev, z);

			for (uint64_t a = start + SMR_SB_SIZE;
			     a + SMR_CKPT_SIZE <= wp; a += SMR_CKPT_SIZE) {
				v[n].addr = a;
				v[n++].slot = z;
			}
		}
	}
	*cp = v;
	*np = n;
	return 0;
}

/* ========================================================================
 * Store ops
 * ======================================================================== */

static int sd_state_new(struct smr_cow *c)
{
	struct sd_state *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	c->store = s;
	s->blk = smr_dev_buf_alloc(SMR_CKPT_SIZE);
	s->zero = smr_dev_buf_alloc(SMR_NODE_MAX_SIZE);
	if (!s->blk || !s->zero)
		return -ENOMEM;
	return 0;
}

/*
 * Data in flight when checkpoint @ck was taken is among what it released
 * (sd_record_unsettled), and the power may have gone before all of it
 * reached the device: what lies past a sequential zone's write pointer was
 * never written, and new data will be written there. Each extent @ck
 * releases is cut before its first byte the device does not hold (the
 * whole extent goes to c->cut, for its reverse-map entries); the bytes of
 * sequential zones cut off are added to *@unw (*@nunw of them), if @unw
 * is not NULL, for the allocator, whose state counts them used.
 */
static int sd_cut_pending(struct smr_cow *c, struct smr_ckpt *ck,
			  struct smr_extent **unw, size_t *nunw)
{
	uint64_t lost = 0;
	uint32_t kept = 0;
	size_t cap = 0;

	smr_xlist_clear(&c->cut);
	for (uint32_t i = 0; i < ck->nr_pending; i++) {
		uint64_t off = ck->pending[i].off, pos = off;
		uint64_t end = off + ck->pending[i].len, cut = end;

		while (pos < end) {
			uint32_t zno = smr_dev_zone_no(c->dev, pos);
			struct smr_zone z;
			uint64_t piece, from;

			if (zno == UINT32_MAX || smr_dev_zone(c->dev, zno, &z))
				break;
			piece = SMR_MIN(end, z.start + z.len) - pos;
			from = SMR_MAX(pos, z.wp);
			if (smr_zone_is_seq(&z) && from < pos + piece &&
			    z.cond != SMR_ZONE_COND_OFFLINE &&
			    z.cond != SMR_ZONE_COND_READONLY) {
				cut = SMR_MIN(cut, from);
				if (unw) {
					int rc = smr_array_grow((void **)unw,
								&cap, *nunw,
								sizeof(**unw));

					if (rc)
						return rc;
					(*unw)[*nunw].off = from;
					(*unw)[(*nunw)++].len = pos + piece - from;
				}
			}
			pos += piece;
		}
		if (cut < end) {
			int rc = smr_xlist_add(&c->cut, off, end - off);

			if (rc)
				return rc;
			lost += end - cut;
		}
		if (cut > off) {
			ck->pending[kept].off = off;
			ck->pending[kept++].len = cut - off;
		}
	}
	if (c->cut.n)
		smr_info("checkpoint of generation %" PRIu64 ": %" PRIu64
			 " bytes of data in flight when it was taken never "
			 "reached the device (nothing referenced them)",
			 ck->gen, lost);
	ck->nr_pending = kept;
	return 0;
}

static int sd_open_alloc(struct smr_cow *c, struct smr_ckpt *ck)
{
	const struct smr_alloc_ops *ops;
	const char *name = c->opts.alloc ? c->opts.alloc : c->sb.alloc;
	struct smr_alloc_ref ref = {
		.off = ck->alloc_off, .len = ck->alloc_len,
		.csum = ck->alloc_csum, .gen = ck->alloc_gen,
	};
	struct smr_extent *unw = NULL;
	size_t nunw = 0;
	int rc;

	rc = smr_alloc_select(c->info, name, &ops, c->alloc_why,
			      sizeof(c->alloc_why));
	if (rc) {
		smr_err("allocator '%s' %s: %s", name,
			rc == -ENOENT ? "is unknown" : "refuses this device",
			c->alloc_why);
		return rc;
	}
	if (c->opts.alloc && strcmp(c->opts.alloc, c->sb.alloc))
		smr_warn("allocator '%s' overrides '%s' recorded at mkfs",
			 c->opts.alloc, c->sb.alloc);
	rc = sd_cut_pending(c, ck, &unw, &nunw);
	if (!rc)
		rc = smr_alloc_open_cut(ops, c->dev, c->sb.data_start,
					c->sb.uuid, &ref, unw, nunw, &c->alloc);
	free(unw);
	if (!rc)
		smr_alloc_set_meta_unit(c->alloc, c->sb.node_size);
	return rc;
}

static int sd_check_features(struct smr_cow *c)
{
	const struct smr_sb *sb = &c->sb;
	uint64_t inc = sb->features_incompat & ~SMR_FEAT_INCOMPAT_SUPP;
	uint64_t roc = sb->features_ro_compat & ~SMR_FEAT_RO_COMPAT_SUPP;

	if (sb->format_major != SMR_FORMAT_MAJOR) {
		smr_err("format version %u.%u is not supported (this build reads %u.x)",
			sb->format_major, sb->format_minor, SMR_FORMAT_MAJOR);
		return -EOPNOTSUPP;
	}
	if (inc) {
		smr_err("unknown incompatible features 0x%" PRIx64 ": refusing to open",
			inc);
		return -EOPNOTSUPP;
	}
	if (roc && !c->opts.read_only) {
		smr_err("unknown read-only-compatible features 0x%" PRIx64
			": open read-only", roc);
		return -EROFS;
	}
	if (!(sb->features_incompat & SMR_FEAT_INCOMPAT_PREV_CKPT) &&
	    !c->opts.read_only) {
		smr_err("format %u.%u filesystem: this build writes only "
			"checkpoints of format %u.%u; open it read-only",
			sb->format_major, sb->format_minor, SMR_FORMAT_MAJOR,
			SMR_FORMAT_MINOR);
		return -EROFS;
	}
	return 0;
}

/* Read and verify the root node of every tree @ck names, as a reader of
 * the tree would. 0, or the first failure (logged). */
static int sd_check_roots(struct smr_cow *c, const struct smr_ckpt *ck)
{
	uint32_t ns = c->sb.node_size;
	void *buf = smr_dev_buf_alloc(ns);
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	for (uint32_t i = 0; i < ck->nr_roots && !rc; i++) {
		const struct smr_root *r = &ck->roots[i];
		struct smr_blk_expect exp = { .addr = r->addr, .gen = r->gen,
					      .owner = r->tree,
					      .uuid = c->sb.uuid };

		if (!r->addr)
			continue;
		if (r->addr < c->sb.data_start ||
		    r->addr + ns > c->sb.capacity)
			rc = smr_corrupt(r->addr, "checkpoint: root outside the data area");
		if (!rc)
			rc = smr_dev_read(c->dev, buf, ns, r->addr);
		if (!rc)
			rc = smr_blk_verify(buf, ns, &smr_node_ops, &exp);
		/* One flipped bit does not make the checkpoint unusable:
		 * node_load puts it back on every read. */
		if (rc == -SMR_EFSBADCRC)
			rc = smr_blk_fix_bit(buf, ns, &smr_node_ops, &exp);
		if (!rc && smr_node_level(buf) != r->level)
			rc = smr_corrupt(r->addr, "btree root: level differs from the checkpoint");
	}
	smr_dev_buf_free(buf);
	return rc;
}

/*
 * ZONELOG: the log zones whose superblock copy does not verify, as a mask
 * (bit z for zone z). A zone that is empty does not count: the log was
 * moving there, and the move writes the copy.
 */
static uint32_t sd_sb_damaged(struct smr_dev *dev)
{
	void *buf = smr_dev_buf_alloc(SMR_SB_SIZE);
	uint32_t mask = 0;
	struct smr_sb sb;

	if (!buf)
		return 0; /* not known: the copies stay as they are */
	for (uint32_t z = 0; z < 2; z++) {
		uint64_t start = smr_dev_zone_start(dev, z);

		if (smr_dev_zone_wp(dev, z) == start)
			continue;
		if (smr_dev_read(dev, buf, SMR_SB_SIZE, start) ||
		    smr_sb_from_disk(buf, start, &sb))
			mask |= 1u << z;
	}
	smr_dev_buf_free(buf);
	return mask;
}

/* Continue the ring or the log after the checkpoint @cand that open took. */
static void sd_position(struct smr_cow *c, const struct sd_cand *cand)
{
	if (c->sb.ckpt_scheme == SMR_CKPT_ZONELOG) {
		uint32_t other = cand->slot ^ 1;
		struct smr_zone z;

		sd(c)->log_zone = cand->slot;
		if (c->opts.read_only || c->info->read_only)
			return;
		/* A cut between moving the log and finishing the old
		 * zone leaves it active: finish it now. */
		if (!smr_dev_zone(c->dev, other, &z) &&
		    smr_zone_is_active(&z))
			smr_dev_zone_finish(c->dev, other);
		sd(c)->sb_heal = sd_sb_damaged(c->dev);
		if (sd(c)->sb_heal)
			smr_warn("a superblock copy of the checkpoint log does "
				 "not verify: the next commits move the log to "
				 "rewrite it");
	} else {
		/* Continue after the newest slot. */
		sd(c)->next_slot = (cand->slot + 1) % c->sb.ckpt_nr_slots;
		sd(c)->ck_slot = cand->slot;
		sd(c)->prev_slot = UINT32_MAX;
	}
}

/* An allocator state rebuilt from the device (smr_alloc_open_rebuild:
 * everything free, or on a zoned device every written byte live), its
 * counters since mkfs from @keep (NULL: from zero). */
static int sd_alloc_rebuilt(struct smr_cow *c,
			    const struct smr_alloc_stats *keep)
{
	const struct smr_alloc_ops *ops;
	const char *name = c->opts.alloc ? c->opts.alloc : c->sb.alloc;
	int rc;

	rc = smr_alloc_select(c->info, name, &ops, c->alloc_why,
			      sizeof(c->alloc_why));
	if (!rc)
		rc = smr_alloc_open_rebuild(ops, c->dev, c->sb.data_start,
					    c->sb.uuid, keep, &c->alloc);
	if (!rc)
		smr_alloc_set_meta_unit(c->alloc, c->sb.node_size);
	return rc;
}

/*
 * fsck only (opts.rebuild_alloc): no checkpoint has a usable allocator
 * state, so take the newest valid one with an allocator rebuilt from the
 * device, for fsck's space audit to bring to what the trees reference
 * (smr_alloc_check) before anything is allocated. Its counters since mkfs
 * go on from @keep, those of the state it replaces (NULL: none could be
 * read).
 */
static int sd_rebuild_alloc(struct smr_cow *c, struct smr_ckpt *ck,
			    const struct sd_cand *cand,
			    const struct smr_alloc_stats *keep)
{
	int rc;

	rc = sd_read_ckpt(c, cand->addr, ck, 0);
	if (rc != 1)
		return rc < 0 ? rc : -SMR_EFSCORRUPTED;
	/* The rebuilt state counts only what was written. */
	rc = sd_cut_pending(c, ck, NULL, NULL);
	if (!rc)
		rc = sd_alloc_rebuilt(c, keep);
	if (rc)
		return rc;
	smr_warn("checkpoint of generation %" PRIu64 ": allocator state "
		 "rebuilt from the device, to be brought to what the trees "
		 "reference", ck->gen);
	ck->alloc_off = ck->alloc_len = ck->alloc_csum = ck->alloc_gen = 0;
	sd_position(c, cand);
	return 0;
}

/*
 * fsck only (opts.rebuild_ckpt): no checkpoint record verifies. Open one
 * rebuilt from the trees' nodes on the device (smr_ckpt_from_scan), with
 * an allocator rebuilt from the device as above; its counters and the
 * cleaner's start from zero. The next commit goes above every node found,
 * in the ring after its last slot, in the zone log in the zone that is
 * open (or zone 0; the commit moves the log if it is full).
 */
static int sd_rebuild_ckpt(struct smr_cow *c, struct smr_ckpt *ck)
{
	struct sd_cand cand = { 0 };
	int rc;

	c->ns = c->sb.node_size;
	rc = smr_ckpt_from_scan(c, ck);
	if (!rc)
		rc = sd_alloc_rebuilt(c, NULL);
	if (rc)
		return rc;
	if (c->sb.ckpt_scheme == SMR_CKPT_ZONELOG) {
		struct smr_zone z;

		if (!smr_dev_zone(c->dev, 1, &z) && smr_zone_is_active(&z))
			cand.slot = 1;
	} else {
		cand.slot = c->sb.ckpt_nr_slots - 1;
	}
	c->gen_floor = ck->gen;
	c->ckpt_rebuilt = true;
	smr_warn("%s: no valid checkpoint: using one rebuilt from the %u "
		 "trees found on the device (newest node of generation %"
		 PRIu64 ") and an allocator state rebuilt from the device",
		 smr_dev_path(c->dev), ck->nr_roots, ck->gen);
	sd_position(c, &cand);
	return 0;
}

/*
 * Open the newest of the @good valid checkpoints @v (newest first) that
 * can be used, trying only the newest and the one it names as its
 * predecessor: the engine and the allocator keep exactly those two intact
 * (docs/design/cow.md); older ones may name reused space. A checkpoint
 * can be used if its allocator state opens and, when @strict, every root
 * node verifies. Returns 0 with *@ck, its index in *@picked and the
 * allocator open; 1 with the
 * last failure in *@err when neither can be used; -ENOENT or -EINVAL when
 * the allocator refuses the device (no fallback helps), -ENOMEM, -EIO.
 */
static int sd_pick(struct smr_cow *c, const struct sd_cand *v, uint32_t good,
		   struct smr_ckpt *ck, bool strict, int *err,
		   uint32_t *picked)
{
	uint64_t want = v[0].gen;
	uint32_t tried = 0;
	int rc;

	for (uint32_t i = 0; i < good && tried < 2; i++) {
		const char *what = "allocator state";

		if (v[i].gen != want)
			continue;
		tried++;
		/* A predecessor unknown (format 1.0): the next older one. */
		want = v[i].prev_gen ? v[i].prev_gen :
		       i + 1 < good ? v[i + 1].gen : 0;
		rc = sd_read_ckpt(c, v[i].addr, ck, 0);
		if (rc == 1 && sd(c)->restored)
			smr_warn("checkpoint of generation %" PRIu64 " at byte %"
				 PRIu64 ": one bit flipped, restored from its "
				 "checksum", ck->gen, v[i].addr);
		if (rc == 1)
			rc = sd_open_alloc(c, ck);
		else if (rc >= 0)
			rc = -SMR_EFSCORRUPTED;
		if (rc == -ENOENT || rc == -EINVAL || rc == -ENOMEM)
			return rc; /* the allocator refuses, or no memory */
		if (!rc && strict) {
			what = "tree root";
			rc = sd_check_roots(c, ck);
			if (rc) {
				smr_alloc_close(c->alloc);
				c->alloc = NULL;
			}
		}
		if (rc) {
			smr_err("checkpoint of generation %" PRIu64 ": %s unusable (%s)%s",
				v[i].gen, what, strerror(-rc),
				tried == 1 && want ? "; trying its predecessor" : "");
			*err = rc;
			continue;
		}
		c->skipped_gen = tried > 1 ? v[0].gen : 0;
		if (tried > 1)
			smr_warn("using the checkpoint of generation %" PRIu64
				 ": the newest (generation %" PRIu64
				 ") is damaged", ck->gen, v[0].gen);
		else if (!strict)
			smr_warn("checkpoint of generation %" PRIu64 ": a tree "
				 "root is damaged; reads through it fail",
				 ck->gen);
		sd_position(c, &v[i]);
		*picked = i;
		return 0;
	}
	return 1;
}

/* An fsync log piece found by the scan, where it was. */
struct sd_piece {
	struct smr_log_piece p;
	uint32_t slot;  /* ring slot, or zone of the log */
};

static int piece_cmp(const void *a, const void *b)
{
	const struct sd_piece *x = a, *y = b;

	if (x->p.seq != y->p.seq)
		return x->p.seq < y->p.seq ? -1 : 1;
	if (x->p.piece != y->p.piece)
		return x->p.piece < y->p.piece ? -1 : 1;
	return x->p.addr < y->p.addr ? -1 : x->p.addr > y->p.addr;
}

/* Distance of ring slot @slot after @from. */
static uint32_t ring_dist(struct smr_cow *c, uint32_t from, uint32_t slot)
{
	uint32_t n = c->sb.ckpt_nr_slots;

	return (slot + n - from) % n;
}

/*
 * The fsync log after the checkpoint @cand that open took: the records
 * based on it (piece headers found by the scan in @pc), in sequence from
 * 1, each with all its pieces, until the first that is incomplete. Their
 * payloads go to c->log_found for the engine to verify and replay. In the
 * ring, the next checkpoint goes after every piece based on it, so that
 * a torn commit cannot destroy a record it was to supersede.
 */
static int sd_log_gather(struct smr_cow *c, const struct sd_cand *cand,
			 struct sd_piece *pc, uint32_t npc)
{
	struct sd_state *s = sd(c);
	uint32_t n = 0, i = 0;
	uint64_t seq = 1;
	int rc = 0;

	for (uint32_t k = 0; k < npc; k++) {
		if (pc[k].p.gen != cand->gen)
			continue;
		pc[n++] = pc[k];
		if (c->sb.ckpt_scheme != SMR_CKPT_ZONELOG &&
		    ring_dist(c, s->ck_slot, pc[k].slot) >=
			    ring_dist(c, s->ck_slot, s->next_slot))
			s->next_slot = (pc[k].slot + 1) % c->sb.ckpt_nr_slots;
	}
	qsort(pc, n, sizeof(*pc), piece_cmp);
	while (i < n && pc[i].p.seq == seq) {
		const struct smr_log_piece *h = &pc[i].p;
		uint32_t nr = h->nr_pieces, k;
		uint8_t *pay, **fv;
		size_t *lv;

		for (k = 0; k < nr && i + k < n; k++) {
			const struct smr_log_piece *q = &pc[i + k].p;

			if (q->seq != seq || q->piece != k ||
			    q->nr_pieces != nr || q->total != h->total ||
			    q->len != SMR_MIN(h->total - (uint64_t)k * SMR_LOG_PIECE_ROOM,
					      SMR_LOG_PIECE_ROOM))
				break;
		}
		if (k != nr)
			break;
		pay = smr_dev_buf_alloc(h->total);
		fv = realloc(c->log_found, (c->log_nfound + 1) * sizeof(*fv));
		if (fv)
			c->log_found = fv;
		lv = realloc(c->log_found_len, (c->log_nfound + 1) * sizeof(*lv));
		if (lv)
			c->log_found_len = lv;
		if (!pay || !fv || !lv) {
			smr_dev_buf_free(pay);
			return -ENOMEM;
		}
		for (k = 0; k < nr && !rc; k++) {
			const struct smr_log_piece *q = &pc[i + k].p;

			rc = smr_dev_read(c->dev, s->blk, SMR_CKPT_SIZE, q->addr);
			if (!rc)
				memcpy(pay + (size_t)k * SMR_LOG_PIECE_ROOM,
				       s->blk + sizeof(struct smr_dlog), q->len);
		}
		if (rc) {
			smr_dev_buf_free(pay);
			return rc;
		}
		c->log_found[c->log_nfound] = pay;
		c->log_found_len[c->log_nfound++] = h->total;
		i += nr;
		seq++;
	}
	return 0;
}

/*
 * The @nd records of @dmg failed to verify (their generations as their
 * headers say). Those newer than every valid one of the @good in @v are
 * tried with one flipped bit put back (sd_read_ckpt): taking an older
 * record instead would lose their commits. Each restored joins @v. 0 or
 * -ENOMEM, -EIO.
 */
static int sd_restore_newer(struct smr_cow *c, struct sd_cand *v,
			    uint32_t *good, const struct sd_cand *dmg,
			    uint32_t nd, struct smr_ckpt *ck)
{
	uint64_t newest = 0;

	for (uint32_t i = 0; i < *good; i++)
		newest = SMR_MAX(newest, v[i].gen);
	for (uint32_t i = 0; i < nd; i++) {
		int rc;

		if (dmg[i].gen <= newest)
			continue;
		rc = sd_read_ckpt(c, dmg[i].addr, ck, newest);
		if (rc == -ENOMEM || rc == -EIO)
			return rc;
		if (rc != 1)
			continue;
		v[*good] = dmg[i];
		v[*good].prev_gen = ck->prev_gen;
		v[(*good)++].gen = ck->gen;
	}
	return 0;
}

static int sd_load(struct smr_cow *c, struct smr_ckpt *ck)
{
	struct sd_cand *v = NULL, *dmg = NULL;
	struct sd_piece *pc = NULL;
	uint32_t n = 0, good = 0, picked = 0, npc = 0, nd = 0;
	int rc, first = 0;

	rc = sd_state_new(c);
	if (rc)
		return rc;
	rc = sd_read_sb(c->dev, &c->sb);
	if (rc && rc != -ENOMEM && rc != -EIO) {
		/* Checkpoint records of an smrfs say whether it is one: not
		 * smrfs, or smrfs whose superblocks are damaged (wiped). */
		uint64_t gen;
		int rb = smr_cow_sb_rebuild(c->dev, &c->sb, &gen,
					    c->opts.sb_uuid);

		if (!rb && c->opts.rebuild_sb) {
			char from[64], u[SMR_UUID_STR_LEN];

			if (gen)
				snprintf(from, sizeof(from), "the checkpoint "
					 "of generation %" PRIu64, gen);
			else
				snprintf(from, sizeof(from), "UUID %s",
					 smr_uuid_format(c->sb.uuid, u));
			smr_warn("%s: no superblock copy verifies: using one "
				 "rebuilt from the device and %s",
				 smr_dev_path(c->dev), from);
			rc = 0;
		} else if (!rb) {
			smr_err("%s: no superblock copy verifies, but the "
				"device holds smrfs checkpoints (generation %"
				PRIu64 "): fsck.smrfs rebuilds the superblock",
				smr_dev_path(c->dev), gen);
			/* Damaged, even where no copy's magic is left. */
			if (rc == -EINVAL)
				rc = -SMR_EFSCORRUPTED;
		} else if (rb != -EINVAL) {
			rc = rb;
		} else if (rc == -EINVAL) {
			smr_info("%s: no smrfs superblock",
				 smr_dev_path(c->dev));
		}
	}
	if (rc)
		return rc;
	rc = sd_check_features(c);
	if (rc)
		return rc;
	/* An smrfs of another device (a copy of another size, say) is not
	 * "not smrfs": callers say which. */
	rc = smr_cow_validate_geometry(&c->sb, c->dev);
	if (rc)
		return rc == -EINVAL ? -EMEDIUMTYPE : rc;
	rc = sd_places(&c->sb, c->dev, &v, &n);
	if (rc)
		return rc;
	pc = calloc(n ? n : 1, sizeof(*pc));
	dmg = calloc(n ? n : 1, sizeof(*dmg));
	if (!pc || !dmg) {
		rc = -ENOMEM;
		goto out;
	}
	/* Note the valid ones with their generations, newest first, and
	 * the fsync log pieces. */
	for (uint32_t i = 0; i < n; i++) {
		rc = sd_read_ckpt(c, v[i].addr, ck, UINT64_MAX);
		if (rc == 1) {
			v[good] = v[i];
			v[good].prev_gen = ck->prev_gen;
			v[good++].gen = ck->gen;
		} else if (rc == 2) {
			if (!smr_log_piece_decode(sd(c)->blk, v[i].addr,
						  c->sb.uuid, &pc[npc].p))
				pc[npc++].slot = v[i].slot;
		} else if (rc < 0) {
			struct smr_blk_id id;

			if (!first)
				first = rc;
			/* Judged once the newest valid one is known. */
			smr_blk_hdr_decode(sd(c)->blk, &id);
			dmg[nd] = v[i];
			dmg[nd++].gen = id.gen;
		}
	}
	rc = sd_restore_newer(c, v, &good, dmg, nd, ck);
	if (rc)
		goto out;
	qsort(v, good, sizeof(*v), cand_cmp);
	c->gen_floor = good ? v[0].gen : 0;
	rc = first ? first : -SMR_EFSCORRUPTED;
	/* The newest, else its predecessor; first with every tree's root
	 * intact, then (a damaged root is then shared or beyond repair)
	 * with the allocator state alone. */
	for (int strict = 1; strict >= 0 && good; strict--) {
		int err = rc;

		rc = sd_pick(c, v, good, ck, strict, &err, &picked);
		if (rc != 1)
			break;
		rc = err;
	}
	if (!good && c->opts.rebuild_ckpt)
		rc = sd_rebuild_ckpt(c, ck);
	else if (!good)
		smr_err("%s: no valid checkpoint: fsck.smrfs rebuilds one "
			"from the trees on the device", smr_dev_path(c->dev));
	if (!rc && good && c->opts.rebuild_alloc_always) {
		/* The state reads but is wrong (fsck found a zone counting
		 * fewer live bytes than referenced): rebuilt, on the same
		 * checkpoint, its counters kept. */
		struct smr_alloc_stats keep;

		smr_alloc_stats(c->alloc, &keep);
		smr_alloc_close(c->alloc);
		c->alloc = NULL;
		rc = sd_rebuild_alloc(c, ck, &v[picked], &keep);
	}
	if (!rc && c->sb.ckpt_scheme != SMR_CKPT_ZONELOG) {
		for (uint32_t i = 0; i < good; i++)
			if (v[i].gen == v[picked].prev_gen)
				sd(c)->prev_slot = v[i].slot;
	}
	/* The log follows the newest checkpoint only; after a fallback the
	 * records (based on the damaged one) are not replayed, nor on an
	 * allocator rebuilt from the device. */
	if (!rc && !c->skipped_gen && !c->opts.rebuild_alloc_always &&
	    ck->alloc_off)
		rc = sd_log_gather(c, &v[picked], pc, npc);
	if (rc && rc != -ENOENT && rc != -EINVAL && good &&
	    c->opts.rebuild_alloc)
		rc = sd_rebuild_alloc(c, ck, &v[0], NULL);
out:
	free(dmg);
	free(pc);
	free(v);
	return rc;
}

static int sd_read(struct smr_cow *c, uint64_t addr, void *buf, size_t len)
{
	if (addr == SMR_ROOT_LOST)
		return smr_corrupt(UINT64_MAX, "btree: root lost with every "
				   "checkpoint record (a repair rebuilds the "
				   "tree from its leaves)");
	if (addr < c->sb.data_start || addr + len > c->sb.capacity)
		return smr_corrupt(addr, "btree: node address outside the data area");
	return smr_dev_read(c->dev, buf, len, addr);
}

static void sd_meta_lock(struct smr_cow *c)
{
	if (!sd(c)->meta_locked) {
		pthread_mutex_lock(smr_alloc_stream_lock(c->alloc, SMR_STREAM_META));
		sd(c)->meta_locked = true;
	}
}

static void sd_meta_unlock(struct smr_cow *c)
{
	if (sd(c)->meta_locked) {
		sd(c)->meta_locked = false;
		pthread_mutex_unlock(smr_alloc_stream_lock(c->alloc, SMR_STREAM_META));
	}
}

/* End of the zone holding @off (the device's end when not zoned). */
static uint64_t sd_zone_end(struct smr_cow *c, uint64_t off)
{
	uint32_t z;

	if (!c->info->zoned)
		return c->info->capacity;
	z = smr_dev_zone_no(c->dev, off);
	return smr_dev_zone_start(c->dev, z) + smr_dev_zone_len(c->dev, z);
}

static int sd_meta_alloc(struct smr_cow *c, uint32_t n, uint64_t *addrs)
{
	struct sd_state *s = sd(c);
	/* Whole nodes: a shorter piece is of no use and, where free space
	 * is cut into holes by data, there may be many of them. */
	struct smr_alloc_hint hint = { .unit = c->ns };
	uint32_t got = 0;
	int rc = 0;

	sd_meta_lock(c);
	s->nr_fill = 0;
	while (got < n) {
		struct smr_extent ext[16];

		rc = smr_alloc_extent(c->alloc, (uint64_t)(n - got) * c->ns,
				      &hint, SMR_STREAM_META, ext, 16);
		if (rc < 0)
			break;
		for (int i = 0; i < rc; i++) {
			uint64_t off = ext[i].off, end = off + ext[i].len;

			while (off + c->ns <= end && got < n) {
				uint64_t zend = sd_zone_end(c, off);

				if (off + c->ns > zend) {
					/* A node never crosses a zone. */
					if (s->nr_fill == SD_MAX_FILL) {
						rc = -ENOSPC;
						break;
					}
					s->fill[s->nr_fill++] = (struct smr_io){
						.op = SMR_IO_WRITE,
						.buf = s->zero,
						.len = zend - off, .off = off };
					smr_alloc_free(c->alloc, off, zend - off);
					off = zend;
					continue;
				}
				addrs[got++] = off;
				off += c->ns;
			}
			if (rc < 0)
				break;
			if (off < end) {
				/* A zone's tail smaller than a node: pad it
				 * (a zone is written in order, in full) and
				 * give it back. */
				if (s->nr_fill == SD_MAX_FILL) {
					rc = -ENOSPC;
					break;
				}
				s->fill[s->nr_fill++] = (struct smr_io){
					.op = SMR_IO_WRITE, .buf = s->zero,
					.len = end - off, .off = off };
				smr_alloc_free(c->alloc, off, end - off);
			}
		}
		if (rc < 0)
			break;
		rc = 0;
	}
	if (rc < 0) {
		smr_err("no space for %u metadata nodes: %s", n - got,
			strerror(-rc));
		sd_meta_unlock(c);
	}
	return rc;
}

/* A metadata write with the rank of its zone in allocation order. */
struct sd_zio {
	struct smr_io io;
	int64_t rank;
};

static int sd_zio_cmp(const void *a, const void *b)
{
	const struct sd_zio *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->io.off < y->io.off ? -1 : x->io.off > y->io.off;
}

/*
 * Submit the nodes of a commit. On a zoned device the META stream may move
 * on to a new zone in the middle of a commit; the device counts the old zone
 * as active until its last write completes, so writing both zones at once
 * can exceed the active-zone limit. Write zone by zone, in the order the
 * allocator handed the zones out (the order of first appearance in @ios),
 * each zone's writes in address order, which in a sequential zone is
 * allocation order; the padding of a zone's tail goes where it was handed
 * out. A zone that holds only padding in this batch comes first: it was
 * handed out before anything that follows it.
 */
static int sd_meta_write_zoned(struct smr_cow *c, struct smr_io *ios,
			       uint32_t n, struct smr_io *fill, uint32_t nr_fill)
{
	uint32_t total = n + nr_fill, i, j;
	struct sd_zio *all;
	int rc = 0;

	all = calloc(total, sizeof(*all));
	if (!all)
		return -ENOMEM;
	for (i = 0; i < total; i++) {
		struct smr_io *io = i < n ? &ios[i] : &fill[i - n];
		uint32_t zno = smr_dev_zone_no(c->dev, io->off);

		all[i].io = *io;
		all[i].rank = -1;
		for (j = 0; j < n; j++) {
			if (smr_dev_zone_no(c->dev, ios[j].off) == zno) {
				all[i].rank = j;
				break;
			}
		}
	}
	qsort(all, total, sizeof(*all), sd_zio_cmp);

	for (i = 0; i < total && !rc; i = j) {
		uint32_t zno = smr_dev_zone_no(c->dev, all[i].io.off);
		struct smr_io batch[64];
		uint32_t k = 0;

		for (j = i; j < total &&
			    smr_dev_zone_no(c->dev, all[j].io.off) == zno &&
			    k < SMR_ARRAY_SIZE(batch);
		     j++)
			batch[k++] = all[j].io;
		rc = smr_dev_submit(c->dev, batch, k);
		for (uint32_t m = 0; m < k; m++)
			all[i + m].io.result = batch[m].result;
	}
	/* Bring the allocator back in line for every write that failed or
	 * was not issued (those from index j on). */
	for (i = 0; rc && i < total; i++) {
		if (i < j && !all[i].io.result)
			continue;
		smr_alloc_write_failed(c->alloc, all[i].io.off, all[i].io.len);
	}
	free(all);
	return rc;
}

static int sd_meta_write(struct smr_cow *c, struct smr_io *ios, uint32_t n)
{
	struct sd_state *s = sd(c);
	int rc;

	if (c->info->zoned) {
		rc = sd_meta_write_zoned(c, ios, n, s->fill, s->nr_fill);
	} else {
		rc = smr_dev_submit(c->dev, ios, n);
		for (uint32_t i = 0; rc && i < n; i++) {
			if (ios[i].result)
				smr_alloc_write_failed(c->alloc, ios[i].off,
						       ios[i].len);
		}
	}
	if (rc)
		smr_err("writing %u metadata nodes failed: %s", n, strerror(-rc));
	s->nr_fill = 0;
	return rc;
}

static void sd_meta_abort(struct smr_cow *c)
{
	sd_meta_unlock(c);
}

static int sd_free(struct smr_cow *c, uint64_t off, uint64_t len)
{
	return smr_alloc_free(c->alloc, off, len);
}

/* Write the checkpoint record @buf in the next place of the log or ring. */
static int sd_put_ckpt(struct smr_cow *c, const struct smr_ckpt *ck)
{
	struct sd_state *s = sd(c);
	struct smr_sb *sb = &c->sb;
	uint64_t addr;
	int rc;

	if (sb->ckpt_scheme != SMR_CKPT_ZONELOG) {
		addr = sb->ckpt_start + (uint64_t)s->next_slot * sb->ckpt_len;
		rc = smr_ckpt_to_disk(ck, sb->uuid, s->blk, SMR_CKPT_SIZE, addr);
		if (!rc)
			rc = smr_dev_write(c->dev, s->blk, SMR_CKPT_SIZE, addr);
		if (!rc)
			rc = smr_dev_flush(c->dev);
		if (!rc) {
			s->prev_slot = s->ck_slot;
			s->ck_slot = s->next_slot;
			s->next_slot = (s->next_slot + 1) % sb->ckpt_nr_slots;
		}
		return rc;
	}
	uint32_t z = s->log_zone;
	uint64_t start = smr_dev_zone_start(c->dev, z);
	uint64_t wp = smr_dev_zone_wp(c->dev, z);
	/* A torn record may have left the write pointer between records:
	 * the next one goes to the next record boundary, where open looks. */
	uint64_t at = start + SMR_SB_SIZE +
		      (wp > start + SMR_SB_SIZE ?
		       SMR_ROUND_UP(wp - start - SMR_SB_SIZE, SMR_CKPT_SIZE) : 0);
	bool fresh = false;

	/* A damaged superblock copy is rewritten by moving the log to its
	 * zone: at once when it is the other zone, and when it is this one,
	 * away now and back at the next commit. */
	if (at + SMR_CKPT_SIZE > start + smr_dev_zone_cap(c->dev, z) ||
	    smr_dev_zone_cond(c->dev, z) == SMR_ZONE_COND_FULL ||
	    s->sb_heal) {
		/* Move to the other zone: it holds only older checkpoints.
		 * Finish this one first: nothing more goes into it, its
		 * checkpoints stay readable, and while it is open it would
		 * count against the device's active-zone limit together with
		 * the new log zone, which the allocator does not expect. */
		if (smr_dev_zone_cond(c->dev, z) != SMR_ZONE_COND_FULL) {
			rc = smr_dev_zone_finish(c->dev, z);
			if (rc)
				return rc;
		}
		z ^= 1;
		start = smr_dev_zone_start(c->dev, z);
		rc = smr_dev_zone_reset(c->dev, z);
		if (rc)
			return rc;
		wp = start;
		fresh = true;
	}
	if (wp == start) {
		/* Empty (just reset, or so found by fsck's rebuild of a
		 * checkpoint): its superblock copy first. */
		rc = sd_write_sb(c->dev, sb, start);
		if (rc)
			return rc;
		wp = at = smr_dev_zone_wp(c->dev, z);
	}
	if (at > wp) {
		memset(s->blk, 0, SMR_CKPT_SIZE);
		rc = smr_dev_write(c->dev, s->blk, at - wp, wp);
		if (rc)
			return rc;
		wp = at;
	}
	addr = wp;
	rc = smr_ckpt_to_disk(ck, sb->uuid, s->blk, SMR_CKPT_SIZE, addr);
	if (!rc)
		rc = smr_dev_write(c->dev, s->blk, SMR_CKPT_SIZE, addr);
	if (!rc)
		rc = smr_dev_flush(c->dev);
	if (rc)
		return rc;
	if (fresh) {
		s->log_zone = z;
		s->sb_heal &= ~(1u << z);
	}
	return 0;
}

/*
 * An fsync log record: @nr pieces after the newest checkpoint or record,
 * then one flush. In the ring the pieces and the slot after them (where
 * the next checkpoint goes) must spare the newest checkpoint and its
 * predecessor, which a damaged newest one falls back to. In the zone log
 * they must fit in the active zone. Otherwise 1: the caller commits.
 */
static int sd_log_write(struct smr_cow *c, const uint8_t *payload,
			size_t len, uint64_t seq, uint32_t nr)
{
	struct sd_state *s = sd(c);
	struct smr_sb *sb = &c->sb;
	uint64_t addr[SMR_LOG_MAX_PIECES], at, wp = 0;
	uint8_t *buf;
	int rc = 0;

	if (nr > SMR_LOG_MAX_PIECES)
		return 1;
	if (sb->ckpt_scheme != SMR_CKPT_ZONELOG) {
		uint32_t ns = sb->ckpt_nr_slots;

		if (nr + 1 >= ns)
			return 1;
		for (uint32_t i = 0; i <= nr; i++) {
			uint32_t slot = (s->next_slot + i) % ns;

			if (slot == s->ck_slot || slot == s->prev_slot)
				return 1;
			if (i < nr)
				addr[i] = sb->ckpt_start + (uint64_t)slot * sb->ckpt_len;
		}
	} else {
		uint32_t z = s->log_zone;
		uint64_t start = smr_dev_zone_start(c->dev, z);

		wp = smr_dev_zone_wp(c->dev, z);
		at = start + SMR_SB_SIZE +
		     SMR_ROUND_UP(wp - start - SMR_SB_SIZE, SMR_CKPT_SIZE);
		if (smr_dev_zone_cond(c->dev, z) == SMR_ZONE_COND_FULL ||
		    at + (uint64_t)nr * SMR_CKPT_SIZE >
			    start + smr_dev_zone_cap(c->dev, z))
			return 1;
		for (uint32_t i = 0; i < nr; i++)
			addr[i] = at + (uint64_t)i * SMR_CKPT_SIZE;
	}
	buf = smr_dev_buf_alloc((size_t)nr * SMR_CKPT_SIZE);
	if (!buf)
		return -ENOMEM;
	rc = smr_log_seal(c, payload, len, seq, buf, addr, nr);
	if (!rc && sb->ckpt_scheme == SMR_CKPT_ZONELOG && addr[0] > wp) {
		/* After a torn record: pad to the boundary open looks at. */
		memset(s->blk, 0, SMR_CKPT_SIZE);
		rc = smr_dev_write(c->dev, s->blk, addr[0] - wp, wp);
	}
	/* One write per run of adjacent slots. */
	for (uint32_t i = 0, j; i < nr && !rc; i = j) {
		for (j = i + 1; j < nr && addr[j] == addr[j - 1] + SMR_CKPT_SIZE; j++)
			;
		rc = smr_dev_write(c->dev, buf + (size_t)i * SMR_CKPT_SIZE,
				   (size_t)(j - i) * SMR_CKPT_SIZE, addr[i]);
	}
	smr_dev_buf_free(buf);
	smr_failpoint("log.after_write");
	if (!rc)
		rc = smr_dev_flush(c->dev);
	if (rc) {
		smr_err("writing an fsync log record failed: %s", strerror(-rc));
		return rc;
	}
	if (sb->ckpt_scheme != SMR_CKPT_ZONELOG)
		s->next_slot = (s->next_slot + nr) % sb->ckpt_nr_slots;
	return 0;
}

/*
 * Data written but not yet referenced when the allocator state was taken
 * counts as used in that state; nothing in this checkpoint references it.
 * Recorded as released, a recovery from this checkpoint frees it (commit
 * leaves room for SMR_CKPT_UNSETTLED_ROOM of them).
 */
static void sd_record_unsettled(struct smr_cow *c, struct smr_ckpt *ck)
{
	uint32_t room = SMR_CKPT_MAX_PENDING - ck->nr_pending;
	struct smr_extent x[SMR_CKPT_MAX_PENDING];
	size_t n = smr_alloc_unsettled_at_commit(c->alloc, x, room);

	if (n > room)
		smr_warn("checkpoint %" PRIu64 ": %zu extents of data in "
			 "flight, room for %u; a crash now would leave the "
			 "rest counted used until fsck.smrfs -y", ck->gen, n,
			 room);
	for (size_t i = 0; i < SMR_MIN(n, (size_t)room); i++) {
		ck->pending[ck->nr_pending].off = x[i].off;
		ck->pending[ck->nr_pending++].len = x[i].len;
	}
}

static int sd_checkpoint(struct smr_cow *c, struct smr_ckpt *ck)
{
	struct smr_alloc_ref ref = { 0 };
	int rc;

	sd_meta_lock(c);
	rc = smr_alloc_commit(c->alloc, ck->gen, &ref);
	sd_meta_unlock(c);
	if (rc) {
		smr_err("writing the allocator state failed: %s", strerror(-rc));
		return rc;
	}
	ck->alloc_off = ref.off;
	ck->alloc_len = ref.len;
	ck->alloc_csum = ref.csum;
	ck->alloc_gen = ref.gen;
	sd_record_unsettled(c, ck);
	/* Everything the checkpoint names must be durable before it. */
	rc = smr_dev_flush(c->dev);
	if (!rc) {
		smr_failpoint("commit.after_flush");
		rc = sd_put_ckpt(c, ck);
	}
	if (rc) {
		smr_err("writing the checkpoint of generation %" PRIu64 " failed: %s",
			ck->gen, strerror(-rc));
		return rc;
	}
	smr_failpoint("commit.after_checkpoint");
	c->alloc_ref = ref;
	/* The checkpoint is durable: the commit has happened, whatever
	 * follows. A zone reset that fails leaves the zone full and dead;
	 * the allocator tries again after the next commit. */
	pthread_rwlock_wrlock(&c->reuse_lock);
	rc = smr_alloc_committed(c->alloc);
	pthread_rwlock_unlock(&c->reuse_lock);
	/* The reserve may have changed (smr_cow_reserve). */
	__atomic_store_n(&c->reserve1, 0, __ATOMIC_RELAXED);
	if (rc)
		smr_warn("after the checkpoint of generation %" PRIu64
			 ": %s; the filesystem goes on", ck->gen, strerror(-rc));
	return 0;
}

static void sd_close(struct smr_cow *c)
{
	struct sd_state *s = c->store;

	if (c->alloc) {
		if (s && s->meta_locked)
			sd_meta_unlock(c);
		smr_alloc_close(c->alloc);
		c->alloc = NULL;
	}
	if (s) {
		smr_dev_buf_free(s->blk);
		smr_dev_buf_free(s->zero);
		free(s);
		c->store = NULL;
	}
}

struct sd_scan {
	struct smr_cow *c;
	int (*fn)(void *arg, uint64_t addr, const void *node);
	void *arg;
};

/* A node the scan found: its structure is checked too, since the caller
 * decodes the items. */
static int sd_scan_one(void *arg, uint64_t addr, const void *node,
		       uint32_t tree)
{
	struct sd_scan *s = arg;

	(void)tree;
	if (smr_node_ops.verify(node, s->c->ns, addr))
		return 0;
	return s->fn(s->arg, addr, node);
}

/* What a scan reads of zone @z (of the whole device without zones, @z
 * 0): from the data area's start, below the write pointer of a
 * sequential zone, all of a conventional one, nothing of one offline.
 * [*@from, *@to), or an error. */
static int sd_scan_range(struct smr_cow *c, uint32_t z, uint64_t *from,
			 uint64_t *to)
{
	struct smr_zone zn;
	int rc;

	*from = *to = c->sb.data_start;
	if (!c->info->zoned) {
		*to = c->info->capacity;
		return 0;
	}
	rc = smr_dev_zone(c->dev, z, &zn);
	if (rc || zn.cond == SMR_ZONE_COND_OFFLINE)
		return rc;
	*from = SMR_MAX(zn.start, c->sb.data_start);
	*to = smr_zone_is_cnv(&zn) ? zn.start + zn.cap :
				     SMR_MIN(zn.wp, zn.start + zn.cap);
	*to = SMR_MAX(*to, *from);
	return 0;
}

/* Every node in the written part of the managed area (sd_scan_range),
 * with progress and cancel (opts.scan_progress, opts.cancel). */
static int sd_scan_nodes(struct smr_cow *c, uint32_t tree,
			 int (*fn)(void *arg, uint64_t addr, const void *node),
			 void *arg)
{
	struct sd_scan s = { .c = c, .fn = fn, .arg = arg };
	uint32_t first = c->info->zoned ?
			 smr_dev_zone_no(c->dev, c->sb.data_start) : 0;
	uint32_t end = c->info->zoned ? c->info->nr_zones : 1;
	uint64_t from, to, total = 0;
	int rc = 0;

	for (uint32_t z = first; z < end && !rc; z++) {
		rc = sd_scan_range(c, z, &from, &to);
		total += to - from;
	}
	c->scan_done = 0;
	c->scan_total = total;
	for (uint32_t z = first; z < end && !rc; z++) {
		rc = sd_scan_range(c, z, &from, &to);
		if (!rc)
			rc = smr_scan_nodes_range(c, tree, from, to,
						  sd_scan_one, &s);
	}
	c->scan_total = 0;
	return rc;
}

const struct smr_store_ops smr_store_dev_ops = {
	.name = "device",
	.load = sd_load,
	.read = sd_read,
	.meta_alloc = sd_meta_alloc,
	.meta_write = sd_meta_write,
	.meta_abort = sd_meta_abort,
	.free = sd_free,
	.checkpoint = sd_checkpoint,
	.close = sd_close,
	.log_write = sd_log_write,
	.scan_nodes = sd_scan_nodes,
};

/* ========================================================================
 * Format
 * ======================================================================== */

static void sd_random_uuid(uint8_t uuid[16])
{
	FILE *f = fopen("/dev/urandom", "re");
	uint64_t x = (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)uuid;

	if (!f || fread(uuid, 1, 16, f) != 16) {
		for (int i = 0; i < 16; i++) {
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			uuid[i] = (uint8_t)(x >> 56);
		}
	}
	if (f)
		fclose(f);
	uuid[6] = (uint8_t)((uuid[6] & 0x0f) | 0x40); /* version 4 */
	uuid[8] = (uint8_t)((uuid[8] & 0x3f) | 0x80);
}

static void sd_fill_info(const struct smr_sb *sb, const char *why,
			 struct smr_cow_info *info, uint64_t gen)
{
	if (!info)
		return;
	memset(info, 0, sizeof(*info));
	memcpy(info->uuid, sb->uuid, 16);
	memcpy(info->label, sb->label, sizeof(info->label));
	memcpy(info->alloc, sb->alloc, sizeof(info->alloc));
	snprintf(info->alloc_why, sizeof(info->alloc_why), "%s", why);
	info->block_size = sb->block_size;
	info->node_size = sb->node_size;
	info->capacity = sb->capacity;
	info->data_start = sb->data_start;
	info->gen = gen;
	info->format_major = sb->format_major;
	info->format_minor = sb->format_minor;
}

/* Zero the checkpoint slots, so that no checkpoint of an earlier
 * filesystem on the device can be taken for one of this. */
static int sd_clear_slots(struct smr_dev *dev, const struct smr_sb *sb)
{
	uint64_t len = (uint64_t)sb->ckpt_nr_slots * sb->ckpt_len;
	void *buf = smr_dev_buf_alloc(len);
	int rc;

	if (!buf)
		return -ENOMEM;
	rc = smr_dev_write(dev, buf, len, sb->ckpt_start);
	smr_dev_buf_free(buf);
	return rc;
}

/* What mkfs writes in every superblock of @dev with allocator @ops, all but
 * the UUID, label and time. 0 or -EINVAL (logged unless @quiet). */
static int sd_mkfs_sb(struct smr_dev *dev, const struct smr_alloc_ops *ops,
		      struct smr_sb *sb, bool quiet)
{
	memset(sb, 0, sizeof(*sb));
	sb->format_major = SMR_FORMAT_MAJOR;
	sb->format_minor = SMR_FORMAT_MINOR;
	sb->features_incompat = SMR_FEAT_INCOMPAT_PREV_CKPT |
				SMR_FEAT_INCOMPAT_LOG |
				SMR_FEAT_INCOMPAT_LOG_FREES |
				SMR_FEAT_INCOMPAT_BIG_RING |
				SMR_FEAT_INCOMPAT_USER_BYTES;
	sb->node_size = SMR_NODE_MIN_SIZE;
	snprintf(sb->alloc, sizeof(sb->alloc), "%s", ops->name);
	return sd_layout(dev, sb, quiet);
}

int smr_cow_sb_rebuild(struct smr_dev *dev, struct smr_sb *sb,
		       uint64_t *gen, const uint8_t *uuid)
{
	const struct smr_alloc_ops *ops;
	struct sd_cand *v = NULL;
	struct smr_ckpt *ck;
	char why[160];
	uint32_t n = 0;
	uint8_t *buf;
	int rc;

	*gen = 0;
	rc = smr_alloc_select(smr_dev_info(dev), NULL, &ops, why, sizeof(why));
	if (!rc)
		rc = sd_mkfs_sb(dev, ops, sb, true);
	if (!rc)
		rc = sd_places(sb, dev, &v, &n);
	if (rc)
		return rc;
	buf = smr_dev_buf_alloc(SMR_CKPT_SIZE);
	ck = calloc(1, sizeof(*ck));
	if (!buf || !ck) {
		rc = -ENOMEM;
		goto out;
	}
	/* Each record says its UUID, and verifies only with it. */
	for (uint32_t i = 0; i < n && !rc; i++) {
		struct smr_blk_id id;

		rc = smr_dev_read(dev, buf, SMR_CKPT_SIZE, v[i].addr);
		if (rc)
			break;
		smr_blk_hdr_decode(buf, &id);
		if (id.magic != SMR_MAGIC_CKPT || id.gen <= *gen ||
		    smr_ckpt_from_disk(buf, SMR_CKPT_SIZE, v[i].addr, id.uuid,
				       ck))
			continue;
		*gen = ck->gen;
		memcpy(sb->uuid, id.uuid, sizeof(sb->uuid));
	}
	if (!rc && !*gen && uuid)
		memcpy(sb->uuid, uuid, sizeof(sb->uuid));
	else if (!rc && !*gen)
		rc = -EINVAL;
out:
	free(ck);
	smr_dev_buf_free(buf);
	free(v);
	return rc;
}

/* The filesystems whose B-tree nodes a scan finds, by UUID. */
struct sd_uuids {
	const struct smr_dev *dev;
	uint8_t uuid[4][16];
	uint64_t nodes[4];
	uint64_t seq[4];   /* of them, in sequential zones */
	uint32_t n;
	bool more;         /* of more filesystems than fit */
};

static int sd_uuid_found(void *arg, uint64_t addr, const void *node)
{
	struct sd_uuids *s = arg;
	struct smr_blk_id id;
	uint32_t i = 0;

	(void)addr;
	smr_blk_hdr_decode(node, &id);
	while (i < s->n && memcmp(s->uuid[i], id.uuid, sizeof(id.uuid)))
		i++;
	if (i == SMR_ARRAY_SIZE(s->uuid)) {
		s->more = true;
		return 0;
	}
	if (i == s->n)
		memcpy(s->uuid[s->n++], id.uuid, sizeof(id.uuid));
	s->nodes[i]++;
	if (smr_dev_info(s->dev)->zoned &&
	    smr_dev_zone_type(s->dev, smr_dev_zone_no(s->dev, addr)) !=
		    SMR_ZONE_TYPE_CNV)
		s->seq[i]++;
	return 0;
}

/* Of several filesystems' nodes, the one whose nodes alone lie in
 * sequential zones: every mkfs resets those, so nodes of a filesystem
 * made before the newest can only be left in conventional zones. The
 * index, or -1. */
static int sd_uuid_newest(const struct sd_uuids *s)
{
	int found = -1;

	if (s->more)
		return -1;
	for (uint32_t i = 0; i < s->n; i++) {
		if (!s->seq[i])
			continue;
		if (found >= 0)
			return -1;
		found = (int)i;
	}
	return found;
}

int smr_cow_find_uuid(struct smr_dev *dev, const struct smr_cow_opts *o,
		      uint8_t uuid[16])
{
	const struct smr_alloc_ops *ops;
	struct sd_uuids s = { .dev = dev };
	struct smr_cow *c;
	char why[160];
	int rc, k = 0;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->dev = dev;
	c->info = smr_dev_info(dev);
	if (o) {
		c->opts.scan_progress = o->scan_progress;
		c->opts.scan_arg = o->scan_arg;
		c->opts.cancel = o->cancel;
	}
	/* The layout mkfs makes, with no UUID: the scan takes any. */
	rc = smr_alloc_select(c->info, NULL, &ops, why, sizeof(why));
	if (!rc)
		rc = sd_mkfs_sb(dev, ops, &c->sb, true);
	c->ns = c->sb.node_size;
	if (!rc)
		rc = sd_scan_nodes(c, 0, sd_uuid_found, &s);
	free(c);
	if (rc)
		return rc;
	if (!s.n)
		return -EINVAL;
	if (s.n > 1 || s.more)
		k = sd_uuid_newest(&s);
	if (k < 0) {
		char list[4 * 80] = "", u[SMR_UUID_STR_LEN];
		size_t at = 0;

		for (uint32_t i = 0; i < s.n && at < sizeof(list); i++)
			at += (size_t)snprintf(list + at, sizeof(list) - at,
					       "%s%s (%" PRIu64 " nodes)",
					       i ? ", " : "",
					       smr_uuid_format(s.uuid[i], u),
					       s.nodes[i]);
		smr_err("%s: the B-tree nodes on it are of %s%u filesystems, "
			"UUID %s: which one to rebuild cannot be told",
			smr_dev_path(dev), s.more ? "more than " : "", s.n,
			list);
		return -EEXIST;
	}
	if (s.n > 1) {
		char u[SMR_UUID_STR_LEN];

		smr_warn("%s: of the %u filesystems whose B-tree nodes are on "
			 "it, taking UUID %s, the one with nodes in sequential "
			 "zones (%" PRIu64 " of %" PRIu64 "): the others' lie "
			 "in conventional zones only, left by an earlier mkfs",
			 smr_dev_path(dev), s.n, smr_uuid_format(s.uuid[k], u),
			 s.seq[k], s.nodes[k]);
	}
	memcpy(uuid, s.uuid[k], sizeof(s.uuid[k]));
	return 0;
}

int smr_cow_format(struct smr_dev *dev, const struct smr_format_opts *o,
		   struct smr_cow_info *info)
{
	static const struct smr_format_opts none;
	const struct smr_alloc_ops *ops;
	struct smr_cow *c;
	struct smr_ckpt *ck = NULL;
	char why[160] = "";
	int rc;

	if (!o)
		o = &none;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->dev = dev;
	c->info = smr_dev_info(dev);
	c->opts.commit_secs = 1;
	if (o->label && strlen(o->label) >= sizeof(c->sb.label)) {
		smr_err("label too long (at most %zu bytes)",
			sizeof(c->sb.label) - 1);
		rc = -EINVAL;
		goto out_free;
	}
	rc = smr_alloc_select(c->info, o->alloc, &ops, why, sizeof(why));
	if (rc) {
		if (rc == -ENOENT)
			smr_err("unknown allocator '%s'", o->alloc);
		else
			smr_err("allocator refuses the device: %s", why);
		goto out_free;
	}
	rc = sd_mkfs_sb(dev, ops, &c->sb, false);
	if (rc)
		goto out_free;
	if (o->uuid && !memcmp(o->uuid, c->sb.uuid, 16)) {
		/* sd_mkfs_sb left it zero: it stands for "none yet" when a
		 * superblock is rebuilt (smr_cow_find_uuid). */
		smr_err("the nil UUID cannot name a filesystem");
		rc = -EINVAL;
		goto out_free;
	}
	if (o->uuid)
		memcpy(c->sb.uuid, o->uuid, 16);
	else
		sd_random_uuid(c->sb.uuid);
	snprintf(c->sb.label, sizeof(c->sb.label), "%s", o->label ? o->label : "");
	c->sb.ctime = (uint64_t)time(NULL);
	snprintf(c->alloc_why, sizeof(c->alloc_why), "%s", why);
	if (c->info->read_only) {
		rc = -EROFS;
		goto out_free;
	}

	if (o->discard) {
		rc = smr_dev_discard(dev, 0, c->info->capacity);
		if (rc && rc != -EOPNOTSUPP)
			smr_warn("%s: discard failed (%s): what was there "
				 "before stays readable", smr_dev_path(dev),
				 strerror(-rc));
	}
	rc = smr_dev_reset_all(dev);
	if (rc)
		goto out_free;
	if (c->sb.ckpt_scheme == SMR_CKPT_ZONELOG) {
		/* Zone 1 holds only its superblock copy until the log moves
		 * there: finish it, so that the log keeps one zone active. */
		rc = sd_write_sb(dev, &c->sb, smr_dev_zone_start(dev, 0));
		if (!rc)
			rc = sd_write_sb(dev, &c->sb, smr_dev_zone_start(dev, 1));
		if (!rc)
			rc = smr_dev_zone_finish(dev, 1);
	} else {
		rc = sd_clear_slots(dev, &c->sb);
		if (!rc)
			rc = sd_write_sb(dev, &c->sb, 0);
		if (!rc)
			rc = sd_write_sb(dev, &c->sb, SMR_SB_SIZE);
	}
	if (rc)
		goto out_free;

	/* The first checkpoint goes through the daemon's commit path. */
	rc = sd_state_new(c);
	if (rc)
		goto out_store;
	rc = smr_alloc_open(ops, dev, c->sb.data_start, c->sb.uuid, NULL,
			    &c->alloc);
	if (rc)
		goto out_store;
	smr_alloc_set_meta_unit(c->alloc, c->sb.node_size);
	c->sops = &smr_store_dev_ops;
	c->ns = c->sb.node_size;
	rc = smr_cow_setup(c);
	if (rc)
		goto out_setup;
	ck = calloc(1, sizeof(*ck));
	if (!ck) {
		rc = -ENOMEM;
		goto out_setup;
	}
	rc = smr_bt_load_roots(c, ck);
	if (!rc) {
		pthread_rwlock_wrlock(&c->lock);
		rc = smr_bt_create_locked(c, SMR_TREE_FS);
		pthread_rwlock_unlock(&c->lock);
	}
	if (!rc)
		rc = smr_cow_commit_now(c);
	if (!rc)
		sd_fill_info(&c->sb, why, info, c->gen);
out_setup:
	smr_cow_teardown(c);
out_store:
	sd_close(c);
	if (rc)
		smr_err("%s: format failed: %s", smr_dev_path(dev), strerror(-rc));
out_free:
	free(ck);
	free(c);
	return rc;
}

/* ========================================================================
 * Data extents
 * ======================================================================== */

void *smr_cow_buf_alloc(size_t len)
{
	return smr_dev_buf_alloc(len);
}

void *smr_cow_buf_alloc_uninit(size_t len)
{
	return smr_dev_buf_alloc_uninit(len);
}

void smr_cow_buf_free(void *buf)
{
	smr_dev_buf_free(buf);
}

int smr_cow_data_write_raw(struct smr_cow *c, enum smr_data_temp temp,
			   uint64_t near, const void *buf, uint64_t len,
			   struct smr_data_extent *ext, unsigned int max,
			   const struct smr_cow_held *held)
{
	struct smr_alloc_hint hint = {
		.near = near,
		.held = held ? held->fn : NULL,
		.held_arg = held ? held->arg : NULL,
	};
	struct smr_extent x[64];
	uint64_t done = 0;
	int n;

	if (!c->alloc)
		return -EOPNOTSUPP;
	if (smr_cow_is_read_only(c))
		return -EROFS;
	if (!max || !len || len % c->info->block_size)
		return -EINVAL;
	n = smr_alloc_write(c->alloc, buf, len, &hint,
			    temp == SMR_DATA_COLD     ? SMR_STREAM_COLD :
			    temp == SMR_DATA_RESCUE ? SMR_STREAM_RELOC :
							SMR_STREAM_HOT,
			    x, SMR_MIN(max, (unsigned int)SMR_ARRAY_SIZE(x)));
	if (n < 0)
		return n;
	for (int i = 0; i < n; i++) {
		ext[i].off = x[i].off;
		ext[i].len = x[i].len;
		done += x[i].len;
	}
	if (done != len) {
		/* Too fragmented for @max extents: give the space back. */
		for (int i = 0; i < n; i++)
			smr_alloc_free(c->alloc, x[i].off, x[i].len);
		return -ENOSPC;
	}
	return n;
}

int smr_cow_data_write(struct smr_cow *c, enum smr_data_temp temp,
		       uint64_t near, const void *buf, uint64_t len,
		       struct smr_data_extent *ext, unsigned int max)
{
	int n = smr_cow_data_write_raw(c, temp, near, buf, len, ext, max,
				       NULL);

	if (n > 0)
		smr_log_written(c, ext, n, buf, NULL);
	return n;
}

bool smr_cow_data_write_quick(struct smr_cow *c, uint64_t len)
{
	return !c->dev || smr_dev_write_quick(c->dev, (size_t)len);
}

int smr_cow_data_read(struct smr_cow *c, uint64_t off, void *buf, uint64_t len)
{
	if (!c->dev)
		return -EOPNOTSUPP;
	if (off < c->sb.data_start || off + len > c->sb.capacity)
		return -EINVAL;
	return smr_dev_read(c->dev, buf, len, off);
}

void smr_cow_read_pin(struct smr_cow *c)
{
	pthread_rwlock_rdlock(&c->reuse_lock);
}

void smr_cow_read_unpin(struct smr_cow *c)
{
	pthread_rwlock_unlock(&c->reuse_lock);
}

int smr_cow_data_free(struct smr_txn *t, uint64_t off, uint64_t len)
{
	struct smr_cow *c = t->c;
	int rc;

	if (off < c->sb.data_start || off + len > c->sb.capacity || !len)
		return -EINVAL;
	/* Released through the list from now on, whether it was ever
	 * referenced or not: never both listed and unsettled, and never
	 * neither to smr_cow_space, which reads both under the lock. */
	pthread_rwlock_wrlock(&c->lock);
	rc = c->alloc ? smr_alloc_settle(c->alloc, off, len) : 0;
	if (rc) {
		pthread_rwlock_unlock(&c->lock);
		return rc;
	}
	rc = smr_xlist_add(&c->free_cur, off, len);
	if (!rc)
		rc = smr_rmap_trim_locked(c, off, len);
	if (!rc)
		rc = smr_log_free_locked(c, off, len);
	c->changed = true;
	pthread_rwlock_unlock(&c->lock);
	return rc;
}

int smr_cow_data_settle(struct smr_txn *t, uint64_t off, uint64_t len)
{
	struct smr_cow *c = t->c;

	if (off < c->sb.data_start || off + len > c->sb.capacity || !len)
		return -EINVAL;
	smr_log_settle(c, off, len);
	return c->alloc ? smr_alloc_settle(c->alloc, off, len) : 0;
}

/* What users may still add: the size, and @slack past it, less the bytes
 * in use. */
static uint64_t space_room(struct smr_cow *c, uint64_t slack)
{
	uint64_t freeing, used, size;

	/* Released extents count as reclaimable at once, as in
	 * smr_cow_space, and under the same lock as the allocator's
	 * figures (see there). */
	pthread_rwlock_rdlock(&c->lock);
	freeing = c->free_cur.bytes + c->free_prev.bytes;
	smr_alloc_usage(c->alloc, freeing, &used, &size);
	pthread_rwlock_unlock(&c->lock);
	size += slack;
	return used < size ? size - used : 0;
}

uint64_t smr_cow_space_room(struct smr_cow *c)
{
	return c->alloc ? space_room(c, 0) : UINT64_MAX;
}

uint64_t smr_cow_reserve(struct smr_cow *c, uint64_t *taken)
{
	uint64_t r = __atomic_load_n(&c->reserve1, __ATOMIC_ACQUIRE);

	if (!r) {
		struct smr_space sp;

		smr_alloc_space(c->alloc, &sp);
		r = sp.reserved + 1;
		__atomic_store_n(&c->reserve_taken, sp.reserve_taken,
				 __ATOMIC_RELAXED);
		__atomic_store_n(&c->reserve1, r, __ATOMIC_RELEASE);
	}
	if (taken)
		*taken = __atomic_load_n(&c->reserve_taken, __ATOMIC_RELAXED);
	return r - 1;
}

uint64_t smr_cow_space_room_meta(struct smr_cow *c)
{
	if (!c->alloc)
		return UINT64_MAX;
	/* An eighth of the reserve past the size, for names and xattrs. */
	return space_room(c, SMR_MAX(smr_cow_reserve(c, NULL) / 8, 1));
}

void smr_cow_space(struct smr_cow *c, struct smr_cow_space *sp)
{
	struct smr_space s = { 0 };
	struct smr_extent *x = NULL;
	size_t n = 0;

	memset(sp, 0, sizeof(*sp));
	sp->block_size = c->sb.block_size;
	if (!c->alloc)
		return;
	/* Released extents reach the allocator only after later commits;
	 * until then the allocator still counts them as used, though a writer
	 * short of space gets them back at once (smr_cow_clean_for_space
	 * commits as often as that takes). Count them as reclaimable from the
	 * moment they are freed: the allocator works out, zone by zone, what
	 * a writer can then really get. Without memory for the list, they
	 * count as used until handed over.
	 *
	 * The lists and the allocator are read under one hold of the lock:
	 * a commit hands free_prev to the allocator with the lock held
	 * exclusive, and one between the two reads would have those extents
	 * subtracted twice, counting users' data as free (a write admitted
	 * past the size, statfs over-reporting by up to all that the last
	 * checkpoint released). Lock order: lock, then the allocator's. */
	pthread_rwlock_rdlock(&c->lock);
	if (c->free_cur.n + c->free_prev.n)
		x = malloc((c->free_cur.n + c->free_prev.n) * sizeof(*x));
	if (x) {
		/* Either list may be empty, with no array (NULL is not for
		 * memcpy even for 0 bytes). */
		for (size_t i = 0; i < c->free_cur.n; i++)
			x[n++] = c->free_cur.x[i];
		for (size_t i = 0; i < c->free_prev.n; i++)
			x[n++] = c->free_prev.x[i];
	}
	smr_alloc_space_freeing(c->alloc, x, n, &s);
	pthread_rwlock_unlock(&c->lock);
	free(x);
	sp->capacity = s.capacity;
	sp->used = s.used;
	sp->free = s.free;
	sp->reclaimable = s.reclaimable;
	sp->reserved = s.reserved;
	sp->overhead = s.overhead;
}
