/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * check.c - the engine's part of fsck beyond the tree audit of
 * smr_cow_check(): every superblock copy and checkpoint record as it lies on
 * the device (smr_cow_check_super), and the space audit that puts the
 * trees' nodes, the released blocks and the caller's data extents together
 * and hands them to the allocator's audit (smr_cow_check_space).
 *
 * The places are the ones store_dev.c reads at open (docs/FORMAT.md,
 * "Checkpoint placement"); the blocks go through the same codecs and
 * verifiers.
 */
#include "cow/cow_priv.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ========================================================================
 * Superblocks and checkpoints
 * ======================================================================== */

static void cs_where(struct smr_dev *dev, uint64_t where[2])
{
	const struct smr_dev_info *di = smr_dev_info(dev);

	where[0] = 0;
	where[1] = SMR_SB_SIZE;
	if (di->zoned && di->nr_zones > 1 &&
	    smr_dev_zone_type(dev, 0) != SMR_ZONE_TYPE_CNV)
		where[1] = smr_dev_zone_start(dev, 1);
}

/* A zone of the checkpoint log that holds nothing at all: reset, its
 * superblock copy not yet written. */
static bool cs_log_zone_empty(struct smr_dev *dev, uint64_t where)
{
	uint32_t zno = smr_dev_zone_no(dev, where);

	return smr_dev_zone_type(dev, zno) != SMR_ZONE_TYPE_CNV &&
	       smr_dev_zone_wp(dev, zno) == smr_dev_zone_start(dev, zno);
}

/* The header's generation of a record that failed to verify, if its magic
 * is still a checkpoint's (0 otherwise). */
static uint64_t cs_raw_gen(const void *buf)
{
	struct smr_blk_id id;

	smr_blk_hdr_decode(buf, &id);
	return id.magic == SMR_MAGIC_CKPT ? id.gen : 0;
}

static bool cs_is_zero(const void *buf, size_t len)
{
	const uint8_t *p = buf;

	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

/*
 * Read the record at @addr into @buf again and put back one flipped bit
 * (smr_blk_fix_bit), as open does for a damaged record newer than every
 * valid one: 0 with its generation in *@gen, else an error.
 */
static int cs_restore(struct smr_dev *dev, void *buf, uint64_t addr,
		      const uint8_t *uuid, uint64_t *gen)
{
	struct smr_ckpt *ck = calloc(1, sizeof(*ck));
	int rc = ck ? smr_dev_read(dev, buf, SMR_CKPT_SIZE, addr) : -ENOMEM;

	if (!rc)
		rc = smr_ckpt_fix_bit(buf, SMR_CKPT_SIZE, addr, uuid);
	if (!rc)
		rc = smr_ckpt_from_disk(buf, SMR_CKPT_SIZE, addr, uuid, ck);
	if (!rc)
		*gen = ck->gen;
	free(ck);
	return rc;
}

int smr_cow_check_super(struct smr_dev *dev, bool repair,
			const uint8_t *uuid, struct smr_cow_super_check *r)
{
	struct smr_sb sb, sb2;
	uint64_t where[2], bad_at[2 * 64 + 2];
	uint32_t nbad = 0;
	uint64_t newest_valid;
	bool ok[2] = { false, false }, ring;
	void *buf;
	int rc = 0, got = -1;

	memset(r, 0, sizeof(*r));
	buf = smr_dev_buf_alloc(SMR_CKPT_SIZE);
	if (!buf)
		return -ENOMEM;
	cs_where(dev, where);
	for (int i = 0; i < 2; i++) {
		rc = smr_dev_read(dev, buf, SMR_SB_SIZE, where[i]);
		if (rc)
			goto out;
		rc = smr_sb_from_disk(buf, where[i], i ? &sb2 : &sb);
		if (rc == -ENOMEM)
			goto out;
		ok[i] = !rc;
		if (ok[i] && got < 0)
			got = i;
	}
	rc = 0;
	if (got < 0) {
		char u[SMR_UUID_STR_LEN];
		uint64_t gen;

		smr_err("no valid superblock (at bytes %" PRIu64 " and %" PRIu64 ")",
			where[0], where[1]);
		/* mkfs alone writes it: rebuilt, if checkpoint records say
		 * the device is smrfs. */
		rc = smr_cow_sb_rebuild(dev, &sb, &gen, uuid);
		if (rc == -EINVAL) {
			r->problems++;
			r->unfixable++;
			r->no_sb = true;
			rc = 0;
			goto out;
		}
		if (rc)
			goto out;
		if (gen)
			smr_err("superblock rebuilt from the device and the "
				"checkpoint of generation %" PRIu64 " (allocator "
				"%s, the device's default; the label is lost)",
				gen, sb.alloc);
		else
			smr_err("superblock rebuilt from the device with UUID "
				"%s (allocator %s, the device's default; the "
				"label is lost)",
				smr_uuid_format(sb.uuid, u), sb.alloc);
		r->sb_rebuilt = true;
	} else if (got == 1) {
		sb = sb2;
	}
	if (ok[0] && ok[1] &&
	    (memcmp(sb.uuid, sb2.uuid, 16) || sb.data_start != sb2.data_start ||
	     sb.capacity != sb2.capacity)) {
		smr_err("the two superblock copies describe different filesystems");
		r->problems++;
		r->unfixable++;
	}
	ring = sb.ckpt_scheme != SMR_CKPT_ZONELOG;
	/* The checkpoint area below is sized and placed by the superblock:
	 * only as open would trust it (a damaged count once made this ask
	 * for 58 GB). */
	if (smr_cow_validate_geometry(&sb, dev)) {
		smr_err("the superblock does not describe this device: "
			"checkpoints not read");
		r->sb_copies = 2;
		r->problems++;
		r->unfixable++;
		goto out;
	}
	for (int i = 0; i < 2; i++) {
		r->sb_copies++;
		if (ok[i])
			continue;
		if (!ring && cs_log_zone_empty(dev, where[i])) {
			/* A power cut between the reset of the zone the log
			 * moves to and its superblock copy: the next commit
			 * writes the copy (FORMAT.md, checkpoint placement). */
			smr_info("checkpoint log zone at byte %" PRIu64
				 " is empty: the log was moving there, and the "
				 "next commit writes its superblock copy",
				 where[i]);
			continue;
		}
		r->sb_bad++;
		r->problems++;
		smr_err("superblock copy at byte %" PRIu64 " is damaged%s", where[i],
			!ring ? (repair ? " (rewritten by moving the checkpoint "
					  "log to its zone)" :
				 " (would rewrite it by moving the checkpoint "
				 "log to its zone)") :
			repair ? (r->sb_rebuilt ? " (rewritten as rebuilt)" :
					       " (rewritten from the good copy)") :
			r->sb_rebuilt ? " (would rewrite it as rebuilt)" :
					" (would rewrite it from the good copy)");
		if (!ring) {
			/* A sequential zone is rewritten only after a reset:
			 * the repair's commits move the log there
			 * (store_dev.c, sd_put_ckpt). */
			r->log_move = true;
			if (repair)
				r->fixed++;
		} else if (repair) {
			rc = smr_sb_to_disk(&sb, buf, where[i]);
			if (!rc)
				rc = smr_dev_write(dev, buf, SMR_SB_SIZE, where[i]);
			if (rc)
				goto out;
			r->fixed++;
		}
	}

	/* The checkpoint records: valid ones, and the newest of them. */
	struct { uint64_t addr, gen; bool restored, empty; } *pl = NULL;
	size_t np = 0;

	if (ring) {
		pl = calloc(sb.ckpt_nr_slots ? sb.ckpt_nr_slots : 1, sizeof(*pl));
		if (!pl) {
			rc = -ENOMEM;
			goto out;
		}
		for (uint32_t i = 0; i < sb.ckpt_nr_slots; i++)
			pl[np++].addr = sb.ckpt_start + (uint64_t)i * sb.ckpt_len;
	} else {
		uint64_t per = (sb.zone_cap - SMR_SB_SIZE) / SMR_CKPT_SIZE;

		pl = calloc(2 * per + 1, sizeof(*pl));
		if (!pl) {
			rc = -ENOMEM;
			goto out;
		}
		for (uint32_t z = 0; z < 2; z++) {
			uint64_t start = smr_dev_zone_start(dev, z);
			uint64_t wp = smr_dev_zone_wp(dev, z);

			for (uint64_t a = start + SMR_SB_SIZE;
			     a + SMR_CKPT_SIZE <= wp; a += SMR_CKPT_SIZE)
				pl[np++].addr = a;
		}
	}
	for (size_t i = 0; i < np; i++) {
		struct smr_ckpt *ck = calloc(1, sizeof(*ck));

		if (!ck) {
			rc = -ENOMEM;
			goto out_pl;
		}
		rc = smr_dev_read(dev, buf, SMR_CKPT_SIZE, pl[i].addr);
		if (!rc) {
			struct smr_log_piece lp;
			struct smr_blk_id id;

			smr_blk_hdr_decode(buf, &id);
			if (cs_is_zero(buf, SMR_CKPT_SIZE)) {
				r->ckpt_empty++;
				pl[i].empty = true;
			} else if (id.magic == SMR_MAGIC_LOG) {
				/* An fsync log piece: replayed (or found
				 * stale) by open; one that does not verify
				 * was cut by a crash before its fsync
				 * returned. */
				if (!smr_log_piece_decode(buf, pl[i].addr,
							  sb.uuid, &lp))
					r->log_pieces++;
				else
					smr_warn("fsync log piece at byte %" PRIu64
						 " does not verify (cut by a crash "
						 "before its fsync returned; never "
						 "replayed)", pl[i].addr);
			} else if (!smr_ckpt_from_disk(buf, SMR_CKPT_SIZE,
						       pl[i].addr, sb.uuid,
						       ck)) {
				r->ckpt_valid++;
				pl[i].gen = ck->gen;
				if (ck->gen > r->newest_gen) {
					r->newest_gen = ck->gen;
					r->newest_addr = pl[i].addr;
				}
			} else if (nbad < SMR_ARRAY_SIZE(bad_at)) {
				/* Remember it; judged once the newest is
				 * known. */
				pl[i].gen = cs_raw_gen(buf);
				bad_at[nbad++] = i;
			}
		}
		free(ck);
		if (rc)
			goto out_pl;
	}
	/* Damaged records newer than every valid one: one flipped bit put
	 * back makes them valid, as for open (sd_restore_newer). Older ones
	 * are never read, and not worth the search. */
	newest_valid = r->newest_gen;
	for (uint32_t b = 0; b < nbad; b++) {
		size_t i = bad_at[b];

		if (pl[i].gen <= newest_valid)
			continue;
		rc = cs_restore(dev, buf, pl[i].addr, sb.uuid, &pl[i].gen);
		if (rc == -ENOMEM || rc == -EIO)
			goto out_pl;
		pl[i].restored = !rc;
		rc = 0;
		if (!pl[i].restored)
			continue;
		r->ckpt_valid++;
		if (pl[i].gen > r->newest_gen) {
			r->newest_gen = pl[i].gen;
			r->newest_addr = pl[i].addr;
		}
	}
	if (!r->ckpt_valid) {
		/* fsck rebuilds one from the trees on the device, if it finds
		 * any (smr_cow_opts.rebuild_ckpt). */
		smr_err("no valid checkpoint (%s from the trees found on the "
			"device)", repair ? "rebuilt" : "a repair rebuilds one");
		r->problems++;
	}
	for (uint32_t b = 0; b < nbad; b++) {
		size_t i = bad_at[b];
		bool newer = pl[i].gen > r->newest_gen;

		if (pl[i].restored) {
			/* In the ring it is written back; a sequential zone
			 * is not rewritten in place: the next commit
			 * supersedes the one in use (its predecessor is
			 * never read again). */
			if (!ring && pl[i].gen != r->newest_gen) {
				smr_warn("checkpoint record at byte %" PRIu64
					 " has one bit flipped (older than the "
					 "newest; dropped when the log wraps)",
					 pl[i].addr);
				continue;
			}
			r->problems++;
			r->lost_commit |= !ring;
			smr_err("checkpoint record at byte %" PRIu64 " has one "
				"bit flipped, restored from its checksum (%s)",
				pl[i].addr, ring ? (repair ? "rewritten" :
						    "would rewrite it") :
				repair ? "a new commit supersedes it" :
					 "a new commit would supersede it");
			if (!repair)
				continue;
			if (ring) {
				uint64_t gen;

				rc = cs_restore(dev, buf, pl[i].addr, sb.uuid,
						&gen);
				if (!rc)
					rc = smr_dev_write(dev, buf,
							   SMR_CKPT_SIZE,
							   pl[i].addr);
				if (rc)
					goto out_pl;
			}
			r->fixed++;
			continue;
		}
		r->ckpt_bad++;
		if (!ring && !newer) {
			/* An old record in the log: never read again once a
			 * newer one is valid, and dropped when the log wraps. */
			smr_warn("checkpoint record at byte %" PRIu64 " is damaged "
				 "(older than the newest, generation %" PRIu64
				 "; dropped when the log wraps)",
				 pl[i].addr, r->newest_gen);
			continue;
		}
		r->problems++;
		if (newer)
			r->lost_commit = true;
		smr_err("checkpoint record at byte %" PRIu64 " is damaged%s%s",
			pl[i].addr,
			newer ? " and newer than the one in use: the changes of "
				"its commit are lost" : "",
			!ring ? (repair ? " (a new commit supersedes it)" :
					  " (a new commit would supersede it)") :
			repair ? " (slot cleared)" : " (would clear the slot)");
		if (!repair)
			continue;
		if (ring) {
			memset(buf, 0, SMR_CKPT_SIZE);
			rc = smr_dev_write(dev, buf, SMR_CKPT_SIZE, pl[i].addr);
			if (rc)
				goto out_pl;
		}
		r->fixed++;
	}
	/* Zeros after the newest record in its log zone, below the write
	 * pointer, where only records and fsync log pieces are written: what
	 * was written there is lost (a device that lost acknowledged writes,
	 * or a tool that zeroed them), newer commits with it. Not in a full
	 * zone: a log zone is finished when the log moves on, and a power cut
	 * can leave the log in it. */
	uint32_t lzno = smr_dev_zone_no(dev, r->newest_addr);
	struct smr_zone lz;

	if (!ring && r->ckpt_valid && !smr_dev_zone(dev, lzno, &lz) &&
	    !smr_zone_is_full(&lz)) {
		uint64_t first = 0;
		uint32_t lost = 0;

		for (size_t i = 0; i < np; i++)
			if (pl[i].empty && pl[i].addr > r->newest_addr &&
			    smr_dev_zone_no(dev, pl[i].addr) == lzno && !lost++)
				first = pl[i].addr;
		if (lost) {
			r->problems++;
			r->lost_commit = true;
			smr_err("checkpoint log: %u slot%s from byte %" PRIu64
				" on, after the newest valid record (generation %"
				PRIu64 "), hold%s only zeros below the write "
				"pointer: what was written there is lost, and "
				"the commits it made with it (%s)", lost,
				lost == 1 ? "" : "s", first, r->newest_gen,
				lost == 1 ? "s" : "",
				repair ? "a new commit supersedes them" :
					 "a new commit would supersede them");
			if (repair)
				r->fixed++;
		}
	}
	if (repair && nbad)
		rc = smr_dev_flush(dev);
out_pl:
	free(pl);
out:
	smr_dev_buf_free(buf);
	return rc;
}

/* ========================================================================
 * Space
 * ======================================================================== */

static int xv_add(struct smr_extent **v, size_t *n, size_t *cap, uint64_t off,
		  uint64_t len)
{
	if (*n == *cap) {
		size_t nc = *cap ? 2 * *cap : 1024;
		struct smr_extent *p = realloc(*v, nc * sizeof(*p));

		if (!p)
			return -ENOMEM;
		*v = p;
		*cap = nc;
	}
	(*v)[*n].off = off;
	(*v)[(*n)++].len = len;
	return 0;
}

int smr_cow_check_space(struct smr_cow *c, const struct smr_data_extent *data,
			size_t nr_data, bool repair, struct smr_cow_space_check *r)
{
	struct smr_alloc_check ac;
	struct smr_extent *v = NULL;
	uint64_t *addrs = NULL;
	size_t n = 0, cap = 0, na = 0;
	int rc;

	memset(r, 0, sizeof(*r));
	if (!c->alloc)
		return -EOPNOTSUPP;
	pthread_rwlock_wrlock(&c->lock);
	rc = smr_bt_node_addrs_locked(c, &addrs, &na);
	if (rc)
		goto out;
	r->nodes = na;
	for (size_t i = 0; i < na && !rc; i++) {
		/* A node of the running transaction has no space yet. */
		if (!(addrs[i] & SMR_TMP_ADDR))
			rc = xv_add(&v, &n, &cap, addrs[i], c->ns);
	}
	for (size_t i = 0; i < c->free_prev.n && !rc; i++)
		rc = xv_add(&v, &n, &cap, c->free_prev.x[i].off,
			    c->free_prev.x[i].len);
	for (size_t i = 0; i < c->free_cur.n && !rc; i++)
		rc = xv_add(&v, &n, &cap, c->free_cur.x[i].off,
			    c->free_cur.x[i].len);
	for (size_t i = 0; i < nr_data && !rc; i++) {
		r->data_bytes += data[i].len;
		rc = xv_add(&v, &n, &cap, data[i].off, data[i].len);
	}
	if (rc)
		goto out;
	rc = smr_alloc_check(c->alloc, &c->alloc_ref, v, n, repair, &ac);
	if (rc)
		goto out;
	r->problems = ac.problems;
	r->fixed = ac.fixed;
	r->unfixable = ac.unfixable;
	r->low = ac.low;
	r->zones = ac.zones;
	r->bytes_referenced = ac.bytes_referenced;
	r->leaked = ac.leaked;
	r->finish = ac.finish;
	r->nr_finish = ac.nr_finish;
	if (repair && ac.fixed)
		c->changed = true; /* the fixed state goes out with the next
				    * commit */
out:
	pthread_rwlock_unlock(&c->lock);
	free(addrs);
	free(v);
	return rc;
}

int smr_cow_commit_forced(struct smr_cow *c)
{
	if (smr_cow_is_read_only(c))
		return -EROFS;
	pthread_rwlock_wrlock(&c->lock);
	c->changed = true;
	pthread_rwlock_unlock(&c->lock);
	return smr_cow_commit_now(c);
}

int smr_cow_salvage(struct smr_cow *c, struct smr_cow_salvage *r)
{
	int rc = 0;

	memset(r, 0, sizeof(*r));
	if (smr_cow_is_read_only(c))
		return -EROFS;
	pthread_rwlock_wrlock(&c->lock);
	for (uint32_t id = 1; id <= SMR_COW_MAX_TREE && !rc; id++) {
		uint64_t items, kept, bad, had = c->trees[id].nr_items;
		const char *name;
		char tb[16];

		if (!c->trees[id].addr)
			continue;
		rc = smr_bt_check(c, id, &items);
		/* -EINVAL: the tree has no type to salvage it by. A tree
		 * that reads whole only with flipped bits put back is
		 * rebuilt too: its damaged nodes go, nothing is lost. */
		if ((!rc && !__atomic_load_n(&c->trees[id].restored,
					     __ATOMIC_RELAXED)) ||
		    rc == -ENOMEM || rc == -EINVAL)
			continue;
		rc = smr_bt_salvage_locked(c, id, &kept, &bad);
		if (rc)
			break;
		r->trees++;
		r->bad_nodes += bad;
		r->kept += kept;
		name = smr_tree_name_locked(c, id, tb, sizeof(tb));
		/* A rebuilt checkpoint counted only the items it could read
		 * (smr_ckpt_from_scan): what was lost is not known. */
		if (c->ckpt_rebuilt) {
			r->lost_unknown = true;
			smr_warn("salvage: tree %s rebuilt with %" PRIu64
				 " items (how many the damaged nodes held is "
				 "not known: no checkpoint counted them)", name,
				 kept);
			continue;
		}
		r->lost += had > kept ? had - kept : 0;
		smr_warn("salvage: tree %s rebuilt with %" PRIu64 " items; %"
			 PRIu64 " of the %" PRIu64 " it held are lost", name,
			 kept, had > kept ? had - kept : 0, had);
	}
	pthread_rwlock_unlock(&c->lock);
	return rc;
}
