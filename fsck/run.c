/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * run.c - the checker of fsck.smrfs (fsck.h).
 *
 * The layers check their own invariants (smr_cow_check_super,
 * smr_cow_check, smr_ns_check, smr_cow_check_space); what is here is the
 * order, the counting, the scrub of data blocks, and the namespace repairs,
 * which fsck plans from its own walk of the FS tree's items (the layout is
 * docs/FORMAT.md, "Namespace items") and makes through the engine's item
 * API, committed once with the allocator's repairs:
 *
 *   - a missing namespace record is rebuilt from the items and a missing
 *     root directory made again, keeping its entries;
 *   - an entry whose inode is missing is dropped (both of its items), and
 *     so are the items of a missing inode (their data freed): the
 *     namespace writes an entry's items and an inode's items before the
 *     inode, so a change cut by an engine error leaves exactly this;
 *   - an entry that lost one of its two items gets it back from the other
 *     (an item that does not decode is dropped first);
 *   - an inode that no entry names (and that is not an orphan) is given a
 *     name "#INO" in /lost+found, made if missing;
 *   - link counts are set to the names counted (directories: 2 +
 *     subdirectories), after the repairs above;
 *   - an extent item whose blocks are not where it points is pointed at
 *     them where the reverse map has them (before the space audit, which
 *     would otherwise take the wrong bytes for it and free its own), and
 *     blocks found nowhere, those past their zone's write pointer among
 *     them (never written), become holes;
 *   - an inode's byte count is set to what its extent items hold;
 *   - inode flags are cleared (none is defined);
 *   - the namespace record's inode count is set to the inodes counted;
 *   - orphans (unlinked while open) are reclaimed by the namespace's own
 *     open, which is what the daemon does at mount.
 *
 * The cleaner's reverse map is checked against the extent items by the
 * namespace (smr_ns_check_rmap) and, if it disagrees, rebuilt from them
 * after the repairs above, in the same commit.
 *
 * A tree with a damaged node is salvaged first (smr_cow_salvage: rebuilt
 * from the items that can be read, in a commit of its own, or in the
 * repair's when no allocator state reads); the repairs above then reattach
 * or drop what the lost items left behind, and the space audit gives back
 * the blocks only they referenced.
 *
 * Anything else found (entries whose two items name different inodes, bad
 * or overlapping extents) is reported and left: fsck does not guess. Data is never moved and no zone is written except by the
 * normal commit. docs/design/fsck.md has the reasons.
 */
#include "fsck/fsck.h"

#include <endian.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cow/cow.h"
#include "dev/dev.h"
#include "format/blk.h"
#include "format/ondisk_ns.h"
#include "namespace/ns.h"

#define FK_LOST_FOUND "lost+found"

struct fk_inode {
	uint64_t ino;
	uint32_t mode, nlink;
	uint64_t parent, size;
	uint64_t bytes;     /* the inode's byte count */
	uint64_t flags;     /* none is defined (docs/FORMAT.md) */
	uint64_t ext_bytes; /* what its extent items hold */
	bool bad_ext;       /* one of them is malformed: its byte count is
			     * left as it is (smr_ns_check reports it) */
	uint64_t ext_end;   /* end of its extents so far, in the walk */
	uint64_t tail;      /* its tail block (docs/FORMAT.md) */
	uint32_t tail_len, tail_seen; /* its bytes; those its items hold */
	uint32_t tail_bs;   /* the block size, if it has a tail */
	bool tail_bad;      /* misplaced, or an item or extent where none
			     * should be: dropped by a repair */
	uint64_t names;   /* entries naming it (after planned drops) */
	uint64_t subdirs; /* directories among its entries */
	bool orphan;
};

struct fk_entry {
	uint64_t dir, hkey, seq, ino;
	char *name;
	bool dangling; /* its inode is missing */
	bool no_index; /* no readdir item names it back */
};

struct fk_index {
	uint64_t dir, seq, hkey, ino;
	bool dangling; /* its inode is missing */
	bool no_entry; /* no entry item names it back */
};

/* Which item an entry of fk_walk.ext is, for the data check. */
struct fk_xkey {
	uint64_t ino, foff;
	bool skip; /* not a well-formed extent of a regular file of its
		    * own (a stray, malformed, overlapping another of the
		    * file): reported by others, left out of the data check */
	long fix;  /* index in fk_walk.xf, or -1 */
};

/* An extent item that does not hold its data (fk_check_data): where each
 * of its blocks is found. */
struct fk_exfix {
	uint64_t ino, foff, dev_off, gen;
	uint32_t nblk;
	uint64_t *loc;  /* per block: the device offset, or FK_LOST */
	uint64_t *csum; /* per block, as the item stores them */
};

#define FK_LOST UINT64_MAX

/* An item of an inode that does not exist. */
struct fk_stray {
	uint64_t objid, offset;
	uint8_t type;
	uint64_t dev_off, len; /* EXTENT: its data */
};

/*
 * The write pointers of the sequential zones as fsck found them, before any
 * read-write open: such an open finishes a zone whose write pointer is
 * behind what the checkpoint references (the allocator trusts the device),
 * after which nothing tells the blocks never written from written ones.
 */
struct fk_wps {
	struct smr_dev *dev;
	uint64_t *wp; /* per zone; UINT64_MAX for a conventional one; NULL
		       * on a device without zones */
	uint32_t nz;
};

/* One walk of the FS tree. */
struct fk_walk {
	struct smr_cow *cow;
	const struct fk_wps *wps; /* NULL: data past them is not looked for */
	uint32_t bsize;
	bool scrub;
	struct fk_inode *in;
	size_t nin, cin;
	struct fk_entry *en;
	size_t nen, cen;
	struct fk_index *ix;
	size_t nix, cix;
	struct smr_data_extent *ext;
	size_t next, cext;
	struct fk_xkey *xk; /* one per ext */
	size_t cxk;
	struct fk_exfix *xf;
	size_t nxf, cxf;
	struct fk_stray *st;
	size_t nst, cst;
	struct smr_key *bad; /* entry and readdir items that do not decode */
	size_t nbad, cbad;
	struct {
		uint64_t offset; /* SMR_NS_TAIL_OFFSET */
		size_t len;
	} *tl;              /* TAIL items, looked at after the walk */
	size_t ntl, ctl;
	uint64_t cur_ino; /* the last INODE item seen: items follow it */
	uint64_t *orphan_recs;
	size_t norphan, corphan;
	bool meta;
	struct smr_ns_meta_d meta_d;
	/* For a namespace record rebuilt: the highest inode number and
	 * generation in use, and the root's highest readdir sequence. */
	uint64_t max_ino, max_gen, root_seq;
	void *blk;          /* scrub buffer, scrub_len bytes */
	uint64_t scrub_len;
	uint64_t scrubbed, bad_blocks;
	uint64_t fix_tries; /* blocks fk_scrub tried to put a bit back in */
	int err;
	const struct smr_fsck_opts *o; /* progress, or NULL */
	uint64_t seen, total;          /* items, for the progress */
};

/* Tell the caller's progress bar, if any, where the check is. */
static void fk_progress(const struct smr_fsck_opts *o, unsigned int phase,
			const char *name, uint64_t done, uint64_t total)
{
	if (o && o->progress)
		o->progress(o->progress_arg, phase, name, done, total);
}

/* Has the caller asked to stop (fsck.h, cancel)? */
static bool fk_cancelled(const struct smr_fsck_opts *o)
{
	return o && o->cancel && *o->cancel;
}

/* bsearch() comparators: the walk's arrays are in key order, as the tree
 * iteration filled them. A key is one or two u64s. */
static int fk_cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

static int fk_inode_cmp(const void *key, const void *elt)
{
	return fk_cmp_u64(*(const uint64_t *)key,
			  ((const struct fk_inode *)elt)->ino);
}

static int fk_index_cmp(const void *key, const void *elt)
{
	const uint64_t *k = key;
	const struct fk_index *x = elt;

	return fk_cmp_u64(k[0], x->dir) ?: fk_cmp_u64(k[1], x->seq);
}

static int fk_entry_cmp(const void *key, const void *elt)
{
	const uint64_t *k = key;
	const struct fk_entry *e = elt;

	return fk_cmp_u64(k[0], e->dir) ?: fk_cmp_u64(k[1], e->hkey);
}

static struct smr_key fk_key(uint64_t objid, uint8_t type, uint64_t off)
{
	struct smr_key k = { .objid = objid, .type = type, .offset = off };

	return k;
}

/* Take the write pointers of @dev's zones into *@z (nothing on a device
 * without zones). */
static int fk_wps_take(struct smr_dev *dev, struct fk_wps *z)
{
	uint32_t nz = smr_dev_info(dev)->nr_zones;

	free(z->wp);
	memset(z, 0, sizeof(*z));
	z->dev = dev;
	if (smr_dev_zone_no(dev, 0) == UINT32_MAX || !nz)
		return 0;
	z->wp = malloc(nz * sizeof(*z->wp));
	if (!z->wp)
		return -ENOMEM;
	z->nz = nz;
	for (uint32_t i = 0; i < nz; i++)
		z->wp[i] = smr_dev_zone_type(dev, i) == SMR_ZONE_TYPE_CNV ?
				   UINT64_MAX : smr_dev_zone_wp(dev, i);
	return 0;
}

/* Does a byte of [@off, @off + @len) lie at or past its zone's write
 * pointer in @z (never written: a zone file cut short, a device that lost
 * writes it had acknowledged)? */
static bool fk_unwritten(const struct fk_wps *z, uint64_t off, uint64_t len)
{
	uint64_t end = off + len;

	if (!z || !z->wp || !len)
		return false;
	while (off < end) {
		uint32_t zno = smr_dev_zone_no(z->dev, off);
		uint64_t zend;

		if (zno >= z->nz)
			return false; /* past the device: the audit says so */
		zend = smr_dev_zone_start(z->dev, zno) +
		       smr_dev_zone_len(z->dev, zno);
		if (SMR_MIN(end, zend) > z->wp[zno])
			return true;
		off = zend;
	}
	return false;
}

/* (bsearch() must not be given the NULL of an empty array.) */
static const struct fk_inode *fk_find_const(const struct fk_walk *w,
					    uint64_t ino)
{
	return w->nin ? bsearch(&ino, w->in, w->nin, sizeof(*w->in),
				fk_inode_cmp) :
			NULL;
}

static struct fk_inode *fk_find(struct fk_walk *w, uint64_t ino)
{
	return (struct fk_inode *)fk_find_const(w, ino);
}

static const struct fk_index *fk_find_index(const struct fk_walk *w,
					    uint64_t dir, uint64_t seq)
{
	const uint64_t key[2] = { dir, seq };

	return w->nix ? bsearch(key, w->ix, w->nix, sizeof(*w->ix),
				fk_index_cmp) :
			NULL;
}

static const struct fk_entry *fk_find_entry(const struct fk_walk *w,
					    uint64_t dir, uint64_t hkey)
{
	const uint64_t key[2] = { dir, hkey };

	return w->nen ? bsearch(key, w->en, w->nen, sizeof(*w->en),
				fk_entry_cmp) :
			NULL;
}

/* What a scrub reads at once: one request per block made a scrub of a
 * slow device (or of an emulated one) take minutes for a few hundred MiB. */
#define FK_SCRUB_CHUNK (1u << 20)

/* Data blocks failing their checksums that a scrub tries to explain by one
 * flipped bit. */
#define FK_FIX_TRIES 1024

/* The checksum of a data block of inode @ino at file offset @foff
 * (docs/FORMAT.md, "Extent"). */
static void fk_scrub(struct fk_walk *w, uint64_t ino, uint64_t foff,
		     const struct smr_ns_extent_d *d, const void *val,
		     size_t len)
{
	uint64_t dev_off = le64toh(d->dev_off), elen = le64toh(d->len);
	uint64_t gen = le64toh(d->gen), bs = w->bsize;
	const uint8_t *cs = (const uint8_t *)val + sizeof(*d);
	uint64_t chunk = 0, clen = 0; /* what w->blk holds */
	int crc = 0;

	if (len < sizeof(*d) + 8 * (elen / bs))
		return; /* smr_ns_check reports the item */
	for (uint64_t o = 0; o < elen; o += bs) {
		uint8_t *blk;
		uint64_t want;
		int rc;

		/* Never written: fk_check_data drops it. */
		if (fk_unwritten(w->wps, dev_off + o, bs))
			continue;
		if (o >= chunk + clen) {
			chunk = o;
			clen = SMR_MIN(w->scrub_len,
				       SMR_DIV_ROUND_UP(elen - o, bs) * bs);
			crc = smr_cow_data_read(w->cow, dev_off + o, w->blk,
						clen);
		}
		blk = (uint8_t *)w->blk + (o - chunk);
		/* A chunk that cannot be read whole: block by block, to
		 * tell which of its blocks are bad. */
		rc = crc ? smr_cow_data_read(w->cow, dev_off + o, w->blk, bs) :
			   0;
		if (crc)
			blk = w->blk;
		memcpy(&want, cs + 8 * (o / bs), 8);
		want = le64toh(want);
		w->scrubbed += bs;
		if (!rc &&
		    smr_ns_block_csum(blk, w->bsize, ino, foff + o, gen) == want)
			continue;
		w->bad_blocks++;
		/* One flipped bit: reads put it back, and so does this, for
		 * so many blocks (a few milliseconds each: a region of
		 * garbage would take minutes). */
		if (!rc && w->fix_tries++ < FK_FIX_TRIES &&
		    !smr_ns_block_fix_bit(blk, w->bsize, ino, foff + o, gen,
					  want)) {
			smr_err("inode %" PRIu64 ": data block at file offset "
				"%" PRIu64 " (device byte %" PRIu64 ") has one "
				"bit flipped (not repaired: reads put it back "
				"from its checksum, and writing the block "
				"again heals it)", ino, foff + o, dev_off + o);
			continue;
		}
		smr_err("inode %" PRIu64 ": data block at file offset %" PRIu64
			" (device byte %" PRIu64 ") %s (not repairable: the "
			"file reads -EIO there)",
			ino, foff + o, dev_off + o,
			rc ? "cannot be read" : "fails its checksum");
	}
}

/*
 * The TAIL items, after the walk: each is the next part of its inode's
 * tail block and as long as it should be, or it is a stray of a missing
 * inode (docs/FORMAT.md).
 */
static int fk_tail_items(struct fk_walk *w)
{
	for (size_t i = 0; i < w->ntl; i++) {
		uint64_t off = w->tl[i].offset;
		struct fk_inode *fi = fk_find(w, off >> 1);
		struct fk_stray *x;

		if (fi) {
			if (smr_ns_tail_next(off, w->tl[i].len, fi->tail_seen,
					     fi->tail_len))
				fi->tail_seen += (uint32_t)w->tl[i].len;
			else
				fi->tail_bad = true;
			continue;
		}
		if (smr_array_grow((void **)&w->st, &w->cst, w->nst,
				   sizeof(*w->st)))
			return -ENOMEM;
		x = &w->st[w->nst++];
		memset(x, 0, sizeof(*x));
		x->type = SMR_NS_T_TAIL;
		x->offset = off;
	}
	return 0;
}

static int fk_item(void *arg, const struct smr_key *k, const void *val,
		   size_t len)
{
	struct fk_walk *w = arg;

	fk_progress(w->o, 4, "namespace walk", ++w->seen, w->total);
	if (fk_cancelled(w->o))
		return w->err = -ECANCELED;
	if (k->objid == SMR_NS_META_OBJID) {
		if (k->type == SMR_NS_T_META && len == sizeof(w->meta_d)) {
			memcpy(&w->meta_d, val, len);
			w->meta = true;
		} else if (k->type == SMR_NS_T_ORPHAN) {
			if (smr_array_grow((void **)&w->orphan_recs,
					   &w->corphan, w->norphan,
					   sizeof(*w->orphan_recs)))
				return w->err = -ENOMEM;
			w->orphan_recs[w->norphan++] = k->offset;
			w->max_ino = SMR_MAX(w->max_ino, k->offset);
		} else if (k->type == SMR_NS_T_TAIL) {
			/* Before any inode: looked at after the walk. */
			if (smr_array_grow((void **)&w->tl, &w->ctl, w->ntl,
					   sizeof(*w->tl)))
				return w->err = -ENOMEM;
			w->tl[w->ntl].offset = k->offset;
			w->tl[w->ntl++].len = len;
		}
		return 0;
	}
	w->max_ino = SMR_MAX(w->max_ino, k->objid);
	if (k->type != SMR_NS_T_INODE && k->objid != w->cur_ino) {
		/* Items sort by object, the inode first: these have none. */
		struct fk_stray *x;

		if (smr_array_grow((void **)&w->st, &w->cst, w->nst,
				   sizeof(*w->st)))
			return w->err = -ENOMEM;
		x = &w->st[w->nst++];
		memset(x, 0, sizeof(*x));
		x->objid = k->objid;
		x->type = k->type;
		x->offset = k->offset;
		if (k->type == SMR_NS_T_EXTENT &&
		    len >= sizeof(struct smr_ns_extent_d)) {
			struct smr_ns_extent_d d;

			memcpy(&d, val, sizeof(d));
			x->dev_off = le64toh(d.dev_off);
			x->len = le64toh(d.len);
		}
	}
	switch (k->type) {
	case SMR_NS_T_INODE: {
		struct smr_ns_inode_d d;
		struct fk_inode *fi;

		if (len != sizeof(d))
			return 0;
		w->cur_ino = k->objid;
		if (smr_array_grow((void **)&w->in, &w->cin, w->nin,
				   sizeof(*w->in)))
			return w->err = -ENOMEM;
		memcpy(&d, val, sizeof(d));
		fi = &w->in[w->nin++];
		memset(fi, 0, sizeof(*fi));
		fi->ino = k->objid;
		fi->mode = le32toh(d.mode);
		fi->nlink = le32toh(d.nlink);
		fi->parent = le64toh(d.parent);
		fi->size = le64toh(d.size);
		fi->bytes = le64toh(d.bytes);
		fi->flags = le64toh(d.flags);
		fi->tail = le64toh(d.tail);
		fi->tail_len = le32toh(d.tail_len);
		fi->tail_bs = w->bsize;
		/* (A namespace record lost is made again at this version.) */
		fi->tail_bad = !smr_ns_tail_fits(
			S_ISREG(fi->mode),
			w->meta ? le32toh(w->meta_d.version) : SMR_NS_VERSION,
			w->bsize, fi->size, fi->tail, fi->tail_len);
		w->max_gen = SMR_MAX(w->max_gen, le64toh(d.gen));
		return 0;
	}
	case SMR_NS_T_DIRENT:
	case SMR_NS_T_DIRINDEX: {
		struct smr_ns_dirent_d d;
		size_t nlen;

		if (len >= sizeof(d))
			memcpy(&d, val, sizeof(d));
		nlen = len >= sizeof(d) ? le16toh(d.name_len) : 0;
		if (!nlen || nlen > SMR_NS_NAME_MAX || len != sizeof(d) + nlen) {
			/* Dropped by a repair; its other half, if whole,
			 * gives it back. */
			if (smr_array_grow((void **)&w->bad, &w->cbad, w->nbad,
					   sizeof(*w->bad)))
				return w->err = -ENOMEM;
			w->bad[w->nbad++] = *k;
			return 0;
		}
		w->max_ino = SMR_MAX(w->max_ino, le64toh(d.ino));
		if (k->type == SMR_NS_T_DIRINDEX && k->objid == SMR_NS_ROOT_INO)
			w->root_seq = SMR_MAX(w->root_seq, k->offset);
		if (k->type == SMR_NS_T_DIRINDEX) {
			if (smr_array_grow((void **)&w->ix, &w->cix, w->nix,
					   sizeof(*w->ix)))
				return w->err = -ENOMEM;
			w->ix[w->nix++] = (struct fk_index){
				.dir = k->objid, .seq = k->offset,
				.hkey = le64toh(d.ref), .ino = le64toh(d.ino) };
			return 0;
		}
		if (smr_array_grow((void **)&w->en, &w->cen, w->nen,
				   sizeof(*w->en)))
			return w->err = -ENOMEM;
		struct fk_entry *e = &w->en[w->nen];

		e->name = malloc(nlen + 1);
		if (!e->name)
			return w->err = -ENOMEM;
		memcpy(e->name, (const uint8_t *)val + sizeof(d), nlen);
		e->name[nlen] = 0;
		e->dir = k->objid;
		e->hkey = k->offset;
		e->seq = le64toh(d.ref);
		e->ino = le64toh(d.ino);
		e->dangling = false;
		w->nen++;
		return 0;
	}
	case SMR_NS_T_EXTENT: {
		struct smr_ns_extent_d d;

		if (len < sizeof(d))
			return 0;
		memcpy(&d, val, sizeof(d));
		w->max_gen = SMR_MAX(w->max_gen, le64toh(d.gen));
		if (smr_array_grow((void **)&w->ext, &w->cext, w->next,
				   sizeof(*w->ext)) ||
		    smr_array_grow((void **)&w->xk, &w->cxk, w->next,
				   sizeof(*w->xk)))
			return w->err = -ENOMEM;
		struct fk_xkey *xk = &w->xk[w->next];
		uint64_t elen = le64toh(d.len);

		*xk = (struct fk_xkey){ .ino = k->objid, .foff = k->offset,
					.skip = true, .fix = -1 };
		w->ext[w->next].off = le64toh(d.dev_off);
		w->ext[w->next++].len = elen;
		/* Items follow their inode, the last one added. */
		if (w->nin && w->in[w->nin - 1].ino == k->objid) {
			struct fk_inode *fi = &w->in[w->nin - 1];
			bool bad = !elen || elen % w->bsize ||
				   k->offset % w->bsize ||
				   elen / w->bsize > SMR_NS_EXTENT_MAX_BLOCKS ||
				   le32toh(d.nr_csums) != elen / w->bsize ||
				   len != sizeof(d) + 8 * (elen / w->bsize);

			fi->ext_bytes += elen;
			fi->bad_ext |= bad;
			fi->tail_bad |= fi->tail_len &&
					k->offset < fi->tail + w->bsize &&
					k->offset + elen > fi->tail;
			xk->skip = bad || !S_ISREG(fi->mode) ||
				   k->offset < fi->ext_end;
			fi->ext_end = SMR_MAX(fi->ext_end, k->offset + elen);
		}
		if (w->scrub)
			fk_scrub(w, k->objid, k->offset, &d, val, len);
		return 0;
	}
	default:
		return 0;
	}
}

static void fk_walk_free(struct fk_walk *w)
{
	for (size_t i = 0; i < w->nen; i++)
		free(w->en[i].name);
	free(w->in);
	free(w->en);
	free(w->ix);
	free(w->ext);
	free(w->xk);
	for (size_t i = 0; i < w->nxf; i++) {
		free(w->xf[i].loc);
		free(w->xf[i].csum);
	}
	free(w->xf);
	free(w->st);
	free(w->bad);
	free(w->orphan_recs);
	free(w->tl);
	smr_cow_buf_free(w->blk);
	memset(w, 0, sizeof(*w));
}

/* Walk the FS tree and count names: fills @w. With @o, report progress. */
static int fk_walk_progress(struct smr_cow *cow, bool scrub,
			    const struct smr_fsck_opts *o,
			    const struct fk_wps *wps, struct fk_walk *w)
{
	struct smr_key from = { 0, 0, 0 };
	struct smr_key to = { UINT64_MAX, UINT8_MAX, UINT64_MAX };
	struct smr_cow_info info;
	int rc;

	memset(w, 0, sizeof(*w));
	smr_cow_info(cow, &info);
	w->cow = cow;
	w->wps = wps;
	w->bsize = info.block_size;
	w->scrub = scrub;
	w->o = o;
	w->total = info.fs_items;
	if (scrub) {
		w->scrub_len = SMR_MAX(FK_SCRUB_CHUNK / info.block_size, 1) *
			       (uint64_t)info.block_size;
		w->blk = smr_cow_buf_alloc(w->scrub_len);
		if (!w->blk)
			return -ENOMEM;
	}
	rc = smr_bt_iterate(cow, SMR_TREE_FS, &from, &to, fk_item, w);
	if (!rc && w->err)
		rc = w->err;
	if (rc)
		return rc;
	for (size_t i = 0; i < w->norphan; i++) {
		struct fk_inode *fi = fk_find(w, w->orphan_recs[i]);

		if (fi && !fi->nlink)
			fi->orphan = true;
	}
	rc = fk_tail_items(w);
	if (rc)
		return rc;
	/* The two items of each entry: entries are in (dir, hash key)
	 * order and readdir items in (dir, sequence) order, as iterated. */
	for (size_t i = 0; i < w->nen; i++) {
		struct fk_entry *e = &w->en[i];
		const struct fk_index *x = fk_find_index(w, e->dir, e->seq);

		e->no_index = !x || x->hkey != e->hkey;
	}
	for (size_t i = 0; i < w->nix; i++) {
		struct fk_index *x = &w->ix[i];
		const struct fk_entry *e = fk_find_entry(w, x->dir, x->hkey);

		x->no_entry = !e || e->seq != x->seq;
		x->dangling = !fk_find(w, x->ino);
		if (x->no_entry && !x->dangling && !e) {
			/* A repair restores the entry from this item: count
			 * the name it gives. */
			struct fk_inode *t = fk_find(w, x->ino), *d;

			t->names++;
			d = fk_find(w, x->dir);
			if (d && S_ISDIR(t->mode))
				d->subdirs++;
		}
	}
	for (size_t i = 0; i < w->nen; i++) {
		struct fk_entry *e = &w->en[i];
		struct fk_inode *t = fk_find(w, e->ino), *d;

		if (!t) {
			e->dangling = true;
			continue;
		}
		t->names++;
		d = fk_find(w, e->dir);
		if (d && S_ISDIR(t->mode))
			d->subdirs++;
	}
	return 0;
}

static int fk_walk(struct smr_cow *cow, bool scrub, struct fk_walk *w)
{
	return fk_walk_progress(cow, scrub, NULL, NULL, w);
}

static uint32_t fk_want_nlink(const struct fk_inode *fi)
{
	if (S_ISDIR(fi->mode))
		return (uint32_t)(2 + fi->subdirs);
	return (uint32_t)fi->names;
}

/* Is @fi's tail block whole and in its place? */
static bool fk_tail_ok(const struct fk_inode *fi)
{
	return fi->tail_len && !fi->tail_bad &&
	       fi->tail_seen == fi->tail_len;
}

/* Does @fi have a tail block, or items of one, that a repair drops? */
static bool fk_tail_wrong(const struct fk_inode *fi)
{
	return (fi->tail_len || fi->tail_bad) && !fk_tail_ok(fi);
}

/* What @fi's byte count should be: its extents and a tail block kept. */
static uint64_t fk_want_bytes(const struct fk_inode *fi)
{
	return fi->ext_bytes + (fk_tail_ok(fi) ? fi->tail_bs : 0);
}

/* Does @fi's byte count differ from what its (well-formed) extents hold? */
static bool fk_bytes_wrong(const struct fk_inode *fi)
{
	return !fi->bad_ext && fi->bytes != fk_want_bytes(fi);
}

/* Is @fi an inode no entry names, that is not the root nor an orphan? */
static bool fk_nameless(const struct fk_inode *fi)
{
	return fi->ino != SMR_NS_ROOT_INO && !fi->names && !fi->orphan;
}

/* ========================================================================
 * Extents that do not hold their data
 *
 * An extent item whose device offset went wrong points at free space,
 * past a write pointer or at another file's data. Taking that space for
 * it (the space audit's repair of "referenced but free") would give the
 * file bytes that are not its own and free the bytes that are. The
 * reverse map says where each extent was written: an extent that the map
 * does not name at its device range has its blocks verified there
 * against the item's checksums, and a block that fails is looked for
 * where the map puts that file offset. The item is pointed at the blocks
 * found; a block found nowhere is dropped (a hole) when the map names
 * another place for it or another owner at its own place, and left as it
 * is (a scrub reports it) when the map knows nothing of either. Nothing
 * is freed: the bytes an item wrongly named are another owner's or free.
 * ======================================================================== */

/* The reverse map's entries in device order, and by owner. */
struct fk_rmap {
	struct smr_cow_rmap_entry *e;
	size_t n, c;
	const struct smr_cow_rmap_entry **own; /* extent owners, by (ino,
						* file offset) */
	size_t nown;
};

static int fk_rmap_add(void *arg, const struct smr_cow_rmap_entry *e)
{
	struct fk_rmap *m = arg;

	if (e->released)
		return 0;
	if (smr_array_grow((void **)&m->e, &m->c, m->n, sizeof(*m->e)))
		return -ENOMEM;
	m->e[m->n++] = *e;
	return 0;
}

static int fk_own_cmp(const void *a, const void *b)
{
	const struct smr_cow_rmap_entry *x = *(const void *const *)a;
	const struct smr_cow_rmap_entry *y = *(const void *const *)b;

	return fk_cmp_u64(x->owner.objid, y->owner.objid) ?:
		       fk_cmp_u64(x->owner.offset, y->owner.offset);
}

/* The entry whose device range holds @dev, or NULL. */
static const struct smr_cow_rmap_entry *fk_rmap_at(const struct fk_rmap *m,
						   uint64_t dev)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) { /* the first entry starting past @dev */
		size_t mid = lo + (hi - lo) / 2;

		if (m->e[mid].off <= dev)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || dev >= m->e[lo - 1].off + m->e[lo - 1].len)
		return NULL;
	return &m->e[lo - 1];
}

/* The entry naming file offset @foff of inode @ino, or NULL. */
static const struct smr_cow_rmap_entry *fk_rmap_of(const struct fk_rmap *m,
						   uint64_t ino, uint64_t foff)
{
	size_t lo = 0, hi = m->nown;
	const struct smr_cow_rmap_entry *e;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		e = m->own[mid];
		if (e->owner.objid < ino ||
		    (e->owner.objid == ino && e->owner.offset <= foff))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	e = m->own[lo - 1];
	return e->owner.objid == ino && foff - e->owner.offset < e->len ? e :
									  NULL;
}

/* Does the map name the item (@ino, @foff) at every byte of its device
 * range [@off, @off + @len)? */
static bool fk_rmap_names(const struct fk_rmap *m, uint64_t ino,
			  uint64_t foff, uint64_t off, uint64_t len)
{
	for (uint64_t x = off; x < off + len;) {
		const struct smr_cow_rmap_entry *e = fk_rmap_at(m, x);

		if (!e || e->owner.type != SMR_NS_T_EXTENT ||
		    e->owner.objid != ino ||
		    e->owner.offset + (x - e->off) != foff + (x - off))
			return false;
		x = e->off + e->len;
	}
	return true;
}

/* Does the block at device offset @dev hold file offset @foff of @ino? */
static bool fk_block_ok(struct smr_cow *cow, void *buf, uint32_t bs,
			uint64_t ino, uint64_t foff, uint64_t gen,
			uint64_t want, uint64_t dev)
{
	return !smr_cow_data_read(cow, dev, buf, bs) &&
	       smr_ns_block_csum(buf, bs, ino, foff, gen) == want;
}

/* Length in blocks of the run of found blocks that starts at block @b of
 * @x, contiguous on the device (0: block @b is lost). */
static uint32_t fk_run(const struct fk_exfix *x, uint32_t b, uint32_t bs)
{
	uint32_t n = 0;

	while (b + n < x->nblk && x->loc[b + n] != FK_LOST &&
	       x->loc[b + n] == x->loc[b] + (uint64_t)n * bs)
		n++;
	return n;
}

/* Where the blocks of extent @i of @w are (it is not named by the map
 * at its range): added to w->xf if some are elsewhere or nowhere. */
static int fk_locate(struct fk_walk *w, const struct fk_rmap *m, size_t i,
		     void *buf, bool report)
{
	union {
		struct smr_ns_extent_d d;
		uint8_t b[sizeof(struct smr_ns_extent_d) +
			  8 * SMR_NS_EXTENT_MAX_BLOCKS];
	} v;
	struct fk_xkey *xk = &w->xk[i];
	struct smr_key k = fk_key(xk->ino, SMR_NS_T_EXTENT, xk->foff);
	uint32_t bs = w->bsize, moved = 0, lost = 0;
	size_t len = sizeof(v);
	struct fk_exfix x;
	int rc;

	rc = smr_bt_lookup(w->cow, SMR_TREE_FS, &k, &v, &len);
	if (rc)
		return rc;
	memset(&x, 0, sizeof(x));
	x.ino = xk->ino;
	x.foff = xk->foff;
	x.dev_off = le64toh(v.d.dev_off);
	x.gen = le64toh(v.d.gen);
	x.nblk = le32toh(v.d.nr_csums); /* checked by the walk */
	x.loc = calloc(x.nblk, sizeof(*x.loc));
	x.csum = calloc(x.nblk, sizeof(*x.csum));
	if (!x.loc || !x.csum) {
		rc = -ENOMEM;
		goto out;
	}
	memcpy(x.csum, v.b + sizeof(v.d), 8 * (size_t)x.nblk);
	for (uint32_t b = 0; b < x.nblk; b++) {
		uint64_t o = x.foff + (uint64_t)b * bs, at = x.dev_off + o - x.foff;
		uint64_t want = le64toh(x.csum[b]);
		const struct smr_cow_rmap_entry *e;

		x.loc[b] = at;
		if (fk_block_ok(w->cow, buf, bs, x.ino, o, x.gen, want, at))
			continue;
		e = fk_rmap_of(m, x.ino, o);
		if (e) {
			uint64_t there = e->off + (o - e->owner.offset);

			if (there != at && fk_block_ok(w->cow, buf, bs, x.ino,
						       o, x.gen, want, there)) {
				x.loc[b] = there;
				moved++;
				continue;
			}
		}
		/* Found nowhere: a hole, unless the map knows nothing of
		 * this block, which then stays as it is. */
		if (e || fk_rmap_at(m, at)) {
			x.loc[b] = FK_LOST;
			lost++;
		}
	}
	if (!moved && !lost)
		goto out; /* the map is what is wrong: rebuilt from the items */
	if (smr_array_grow((void **)&w->xf, &w->cxf, w->nxf, sizeof(*w->xf))) {
		rc = -ENOMEM;
		goto out;
	}
	if (report)
		smr_err("inode %" PRIu64 ": the extent at file offset %" PRIu64
			" (%" PRIu64 " bytes at device byte %" PRIu64 ") does "
			"not hold its data: %u of its blocks are where the "
			"reverse map has them, %u are found nowhere%s (would "
			"point it at the blocks found%s)", x.ino, x.foff,
			(uint64_t)x.nblk * bs, x.dev_off, moved, lost,
			fk_unwritten(w->wps, x.dev_off, (uint64_t)x.nblk * bs) ?
				", it lies past its zone's write pointer "
				"(never written)" : "",
			lost ? " and drop the rest: the file reads zeros there" :
			       "");
	xk->fix = (long)w->nxf;
	w->xf[w->nxf++] = x;
	return 0;
out:
	free(x.loc);
	free(x.csum);
	return rc;
}

/* Find the extent items that do not hold their data (in w->xf). */
static int fk_check_data(struct fk_walk *w, bool report)
{
	struct fk_rmap m = { 0 };
	uint64_t nr_bad = 0;
	void *buf = NULL;
	int rc;

	rc = smr_cow_rmap_iterate(w->cow, fk_rmap_add, &m, &nr_bad);
	if (rc == -EOPNOTSUPP) {
		rc = 0; /* no map: nothing says where data belongs */
		goto out;
	}
	if (rc)
		goto out;
	m.own = calloc(m.n ? m.n : 1, sizeof(*m.own));
	buf = smr_cow_buf_alloc(w->bsize);
	if (!m.own || !buf) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < m.n; i++)
		if (m.e[i].owner.type == SMR_NS_T_EXTENT)
			m.own[m.nown++] = &m.e[i];
	qsort(m.own, m.nown, sizeof(*m.own), fk_own_cmp);
	for (size_t i = 0; i < w->next && !rc; i++) {
		if (w->xk[i].skip)
			continue;
		/* The map names it where it is: its data is there, unless
		 * the zone's write pointer says it was never written. */
		if (fk_rmap_names(&m, w->xk[i].ino, w->xk[i].foff,
				  w->ext[i].off, w->ext[i].len) &&
		    !fk_unwritten(w->wps, w->ext[i].off, w->ext[i].len))
			continue;
		rc = fk_locate(w, &m, i, buf, report);
	}
out:
	smr_cow_buf_free(buf);
	free(m.own);
	free(m.e);
	return rc;
}

/* Do bytes [@off, @off + @len) belong to an extent of an inode that
 * exists? (The extents of missing inodes are the walk's strays.) */
static bool fk_data_in_use(const struct fk_walk *w, uint64_t off,
			   uint64_t len)
{
	for (size_t i = 0; i < w->next; i++)
		if (fk_find_const(w, w->xk[i].ino) && w->ext[i].off < off + len &&
		    off < w->ext[i].off + w->ext[i].len)
			return true;
	return false;
}

/* The data extents the items will reference once w->xf is applied, for
 * the space audit: in *@v (to free), *@n of them. */
static int fk_planned_ext(const struct fk_walk *w, struct smr_data_extent **v,
			  size_t *n)
{
	size_t c = 0;

	*v = NULL;
	*n = 0;
	for (size_t i = 0; i < w->next; i++) {
		const struct fk_exfix *x;

		/* An extent of a missing inode over bytes an existing file
		 * references: dropped, the bytes left to that file. */
		if (!fk_find_const(w, w->xk[i].ino) &&
		    fk_data_in_use(w, w->ext[i].off, w->ext[i].len))
			continue;
		if (w->xk[i].fix < 0) {
			if (smr_array_grow((void **)v, &c, *n, sizeof(**v)))
				return -ENOMEM;
			(*v)[(*n)++] = w->ext[i];
			continue;
		}
		x = &w->xf[w->xk[i].fix];
		for (uint32_t b = 0, r; b < x->nblk; b += r ? r : 1) {
			r = fk_run(x, b, w->bsize);
			if (!r)
				continue;
			if (smr_array_grow((void **)v, &c, *n, sizeof(**v)))
				return -ENOMEM;
			(*v)[*n].off = x->loc[b];
			(*v)[(*n)++].len = (uint64_t)r * w->bsize;
		}
	}
	return 0;
}

/* Point each item of w->xf at its blocks: the item is replaced by one per
 * run of blocks found, with their checksums; lost blocks become holes. */
static int fk_fix_extents(struct smr_cow *cow, struct smr_txn *t,
			  const struct fk_walk *w, uint64_t *fixed)
{
	union {
		struct smr_ns_extent_d d;
		uint8_t b[sizeof(struct smr_ns_extent_d) +
			  8 * SMR_NS_EXTENT_MAX_BLOCKS];
	} v;
	uint32_t bs = w->bsize;
	int rc = 0;

	(void)cow;
	for (size_t i = 0; i < w->nxf && !rc; i++) {
		const struct fk_exfix *x = &w->xf[i];
		struct smr_key k = fk_key(x->ino, SMR_NS_T_EXTENT, x->foff);
		uint64_t kept = 0;

		rc = smr_bt_delete(t, SMR_TREE_FS, &k);
		for (uint32_t b = 0, r; b < x->nblk && !rc; b += r ? r : 1) {
			r = fk_run(x, b, bs);
			if (!r)
				continue;
			memset(&v.d, 0, sizeof(v.d));
			v.d.dev_off = htole64(x->loc[b]);
			v.d.len = htole64((uint64_t)r * bs);
			v.d.gen = htole64(x->gen);
			v.d.nr_csums = htole32(r);
			memcpy(v.b + sizeof(v.d), &x->csum[b], 8 * (size_t)r);
			k = fk_key(x->ino, SMR_NS_T_EXTENT,
				   x->foff + (uint64_t)b * bs);
			rc = smr_bt_insert(t, SMR_TREE_FS, &k, &v,
					   sizeof(v.d) + 8 * (size_t)r);
			kept += r;
		}
		if (rc)
			break;
		smr_info("inode %" PRIu64 ": the extent at file offset %" PRIu64
			 " now names the %" PRIu64 " blocks found, %" PRIu64
			 " dropped", x->ino, x->foff, kept, x->nblk - kept);
		(*fixed)++;
	}
	return rc;
}

/* ========================================================================
 * Planning (reported in both modes)
 * ======================================================================== */

struct fk_plan {
	uint64_t drops, halves, moves, nlinks, counters, orphans, strays;
	uint64_t dirsizes, bytes, flags, bad, tails;
};

static void fk_plan(struct fk_walk *w, bool repair, struct fk_plan *p)
{
	const char *will = repair ? "" : "would ";
	size_t nin;

	memset(p, 0, sizeof(*p));
	if (!w->meta) {
		p->counters++;
		smr_err("no namespace record (%srebuild it from the items)",
			will);
	}
	if (!fk_find(w, SMR_NS_ROOT_INO)) {
		p->counters++;
		smr_err("no root directory inode (%smake one, mode 0755, "
			"owned by root, keeping the entries under it)", will);
	}
	for (size_t i = 0; i < w->nen; i++) {
		struct fk_entry *e = &w->en[i];

		if (e->dangling) {
			p->drops++;
			smr_err("dir %" PRIu64 ": entry '%s' names missing inode %"
				PRIu64 " (%sdrop the entry)", e->dir, e->name,
				e->ino, will);
		} else if (e->no_index && fk_find(w, e->dir)) {
			p->halves++;
			smr_err("dir %" PRIu64 ": entry '%s' has no readdir item "
				"(%sadd it from the entry)", e->dir, e->name, will);
		}
	}
	for (size_t i = 0; i < w->nbad; i++) {
		p->bad++;
		smr_err("dir %" PRIu64 ": %s item %#" PRIx64 " does not decode "
			"(%sdrop it)", w->bad[i].objid,
			w->bad[i].type == SMR_NS_T_DIRENT ? "entry" : "readdir",
			w->bad[i].offset, will);
	}
	for (size_t i = 0; i < w->nst; i++) {
		size_t j = i;

		while (j + 1 < w->nst && w->st[j + 1].objid == w->st[i].objid)
			j++;
		if (w->st[i].objid == SMR_NS_ROOT_INO) {
			i = j; /* kept: the root is made again */
			continue;
		}
		if (w->st[i].type == SMR_NS_T_TAIL) {
			/* The namespace's own (object 0): one at a time. */
			p->strays++;
			smr_err("tail item of missing inode %" PRIu64
				" (%sdrop it)", w->st[i].offset >> 1, will);
			continue;
		}
		p->strays += j - i + 1;
		smr_err("inode %" PRIu64 " is missing but has %zu items "
			"(%sdrop them and free their data)", w->st[i].objid,
			j - i + 1, will);
		i = j;
	}
	for (size_t i = 0; i < w->nix; i++) {
		struct fk_index *x = &w->ix[i];

		if (!x->no_entry || !fk_find(w, x->dir))
			continue;
		p->halves++;
		smr_err("dir %" PRIu64 ": readdir item %" PRIu64 " names no entry "
			"(%s%s)", x->dir, x->seq, will,
			x->dangling ? "drop it: its inode is missing" :
				      "add the entry from it");
	}
	for (size_t i = 0; i < w->nin; i++) {
		struct fk_inode *fi = &w->in[i];

		if (fi->orphan) {
			p->orphans++;
			smr_warn("inode %" PRIu64 ": unlinked while open (an orphan), "
				 "will be reclaimed%s", fi->ino,
				 repair ? " now" : " at the next read-write open");
			continue;
		}
		if (fk_nameless(fi)) {
			p->moves++;
			smr_err("inode %" PRIu64 ": no directory entry names it "
				"(%smove it to /%s as #%" PRIu64 ")",
				fi->ino, will, FK_LOST_FOUND, fi->ino);
			continue;
		}
		if (fi->nlink != fk_want_nlink(fi)) {
			p->nlinks++;
			smr_err("inode %" PRIu64 ": link count %u, %u counted "
				"(%sset it)", fi->ino, fi->nlink,
				fk_want_nlink(fi), will);
		}
		if (S_ISDIR(fi->mode) && fi->size) {
			p->dirsizes++;
			smr_err("dir %" PRIu64 ": size %" PRIu64 ", directories "
				"keep 0 (%sset it to 0)", fi->ino, fi->size, will);
		}
		if (fi->flags) {
			p->flags++;
			smr_err("inode %" PRIu64 ": flags %#" PRIx64 ", none is "
				"defined (%sclear them)", fi->ino, fi->flags,
				will);
		}
		if (fk_tail_wrong(fi)) {
			p->tails++;
			smr_err("inode %" PRIu64 ": tail block of %u bytes at %"
				PRIu64 " unusable, its items hold %u (%sdrop it: "
				"those bytes read as zeros)", fi->ino,
				fi->tail_len, fi->tail, fi->tail_seen, will);
		}
		if (fk_bytes_wrong(fi)) {
			p->bytes++;
			smr_err("inode %" PRIu64 ": byte count %" PRIu64 ", its "
				"extents hold %" PRIu64 " (%sset it)", fi->ino,
				fi->bytes, fk_want_bytes(fi), will);
		}
	}
	/* A root made again counts too. */
	nin = w->nin + !fk_find(w, SMR_NS_ROOT_INO);
	if (w->meta && le64toh(w->meta_d.nr_inodes) != nin) {
		p->counters++;
		smr_err("namespace record counts %" PRIu64 " inodes, %zu found "
			"(%sset it)", (uint64_t)le64toh(w->meta_d.nr_inodes),
			nin, will);
	}
}

/* ========================================================================
 * Repairs
 * ======================================================================== */

static int fk_inode_rw(struct smr_cow *cow, struct smr_txn *t, uint64_t ino,
		       struct smr_ns_inode_d *d, bool write)
{
	struct smr_key k = fk_key(ino, SMR_NS_T_INODE, 0);
	size_t len = sizeof(*d);

	if (write)
		return smr_bt_update(t, SMR_TREE_FS, &k, d, sizeof(*d));
	int rc = smr_bt_lookup(cow, SMR_TREE_FS, &k, d, &len);

	if (!rc && len != sizeof(*d))
		rc = -SMR_EFSCORRUPTED;
	return rc;
}

static int fk_drop_entry(struct smr_cow *cow, struct smr_txn *t,
			 const struct fk_walk *w, const struct fk_entry *e)
{
	struct smr_key k = fk_key(e->dir, SMR_NS_T_DIRENT, e->hkey);
	int rc;

	(void)cow;
	rc = smr_bt_delete(t, SMR_TREE_FS, &k);
	if (rc)
		return rc;
	/* Its readdir item, if it names the same entry. */
	for (size_t i = 0; i < w->nix; i++) {
		const struct fk_index *x = &w->ix[i];

		if (x->dir == e->dir && x->seq == e->seq &&
		    x->hkey == e->hkey) {
			k = fk_key(e->dir, SMR_NS_T_DIRINDEX, e->seq);
			return smr_bt_delete(t, SMR_TREE_FS, &k);
		}
	}
	return 0;
}

union fk_dirent_buf {
	struct smr_ns_dirent_d d;
	uint8_t b[sizeof(struct smr_ns_dirent_d) + SMR_NS_NAME_MAX];
};

/* Raise directory @dir's next sequence number above @seq if needed. */
static int fk_seq_above(struct smr_cow *cow, struct smr_txn *t, uint64_t dir,
			uint64_t seq)
{
	struct smr_ns_inode_d d;
	int rc = fk_inode_rw(cow, t, dir, &d, false);

	if (rc || le64toh(d.next_seq) > seq)
		return rc;
	d.next_seq = htole64(seq + 1);
	return fk_inode_rw(cow, t, dir, &d, true);
}

/* An entry without its readdir item: add the item from the entry. */
static int fk_add_index(struct smr_cow *cow, struct smr_txn *t,
			const struct fk_entry *e, uint64_t *fixed)
{
	struct smr_key k = fk_key(e->dir, SMR_NS_T_DIRENT, e->hkey);
	union fk_dirent_buf v;
	size_t len = sizeof(v);
	int rc;

	rc = smr_bt_lookup(cow, SMR_TREE_FS, &k, &v, &len);
	if (rc)
		return rc;
	k = fk_key(e->dir, SMR_NS_T_DIRINDEX, e->seq);
	if (!smr_bt_lookup(cow, SMR_TREE_FS, &k, NULL, NULL)) {
		smr_err("dir %" PRIu64 ": readdir item %" PRIu64 " belongs to "
			"another entry: '%s' left without one", e->dir, e->seq,
			e->name);
		return 0;
	}
	v.d.ref = htole64(e->hkey);
	rc = smr_bt_insert(t, SMR_TREE_FS, &k, &v, len);
	if (!rc)
		rc = fk_seq_above(cow, t, e->dir, e->seq);
	if (!rc) {
		smr_info("dir %" PRIu64 ": readdir item %" PRIu64 " added for '%s'",
			 e->dir, e->seq, e->name);
		(*fixed)++;
	}
	return rc;
}

/* A readdir item without its entry: add the entry from the item, or drop
 * the item when its inode is missing or the entry's key is taken. */
static int fk_fix_index(struct smr_cow *cow, struct smr_txn *t,
			const struct fk_index *x, uint64_t *fixed)
{
	struct smr_key ki = fk_key(x->dir, SMR_NS_T_DIRINDEX, x->seq);
	struct smr_key ke = fk_key(x->dir, SMR_NS_T_DIRENT, x->hkey);
	union fk_dirent_buf v;
	size_t len = sizeof(v);
	int rc;

	if (!x->dangling &&
	    smr_bt_lookup(cow, SMR_TREE_FS, &ke, NULL, NULL) == -ENOENT) {
		rc = smr_bt_lookup(cow, SMR_TREE_FS, &ki, &v, &len);
		if (rc)
			return rc;
		v.d.ref = htole64(x->seq);
		rc = smr_bt_insert(t, SMR_TREE_FS, &ke, &v, len);
		if (!rc) {
			smr_info("dir %" PRIu64 ": entry added from readdir item %"
				 PRIu64, x->dir, x->seq);
			(*fixed)++;
		}
		return rc;
	}
	rc = smr_bt_delete(t, SMR_TREE_FS, &ki);
	if (!rc) {
		smr_info("dir %" PRIu64 ": readdir item %" PRIu64 " dropped",
			 x->dir, x->seq);
		(*fixed)++;
	}
	return rc;
}

/* An item of a missing inode: dropped, and an extent's data freed unless
 * a file that exists references it too (the item's address is wrong, and
 * the bytes are that file's). */
static int fk_drop_stray(struct smr_cow *cow, struct smr_txn *t,
			 const struct fk_walk *w, const struct fk_stray *x,
			 uint64_t *fixed)
{
	struct smr_key k = fk_key(x->objid, x->type, x->offset);
	int rc;

	(void)cow;
	rc = smr_bt_delete(t, SMR_TREE_FS, &k);
	if (rc == -ENOENT)
		return 0; /* gone with a dangling entry already */
	if (!rc && x->type == SMR_NS_T_EXTENT && x->len) {
		if (fk_data_in_use(w, x->dev_off, x->len))
			smr_warn("inode %" PRIu64 ": the data of its extent at "
				 "%" PRIu64 " is another file's too: not freed",
				 x->objid, x->offset);
		else
			rc = smr_cow_data_free(t, x->dev_off, x->len);
	}
	if (!rc) {
		smr_info("inode %" PRIu64 ": item of type %u at %" PRIu64
			 " dropped", x->objid, x->type, x->offset);
		(*fixed)++;
	}
	return rc;
}

/* Give @fi the name "#INO" in directory @lf. */
static int fk_link_into(struct smr_cow *cow, struct smr_txn *t, uint64_t lf,
			const struct fk_inode *fi)
{
	union {
		struct smr_ns_dirent_d d;
		uint8_t b[sizeof(struct smr_ns_dirent_d) + 32];
	} v;
	struct smr_ns_inode_d dir, in;
	char name[32];
	size_t nlen;
	uint64_t h, seq, slot;
	struct smr_key k;
	int rc;

	nlen = (size_t)snprintf(name, sizeof(name), "#%" PRIu64, fi->ino);
	rc = fk_inode_rw(cow, t, lf, &dir, false);
	if (rc)
		return rc;
	h = smr_ns_name_hash(name, nlen) &
	    ~((uint64_t)SMR_NS_DIRENT_SLOTS - 1);
	for (slot = 0; slot < SMR_NS_DIRENT_SLOTS; slot++) {
		k = fk_key(lf, SMR_NS_T_DIRENT, h | slot);
		rc = smr_bt_lookup(cow, SMR_TREE_FS, &k, NULL, NULL);
		if (rc == -ENOENT)
			break;
		if (rc)
			return rc;
	}
	if (slot == SMR_NS_DIRENT_SLOTS)
		return -ENOSPC;
	seq = le64toh(dir.next_seq);
	if (seq < SMR_NS_FIRST_SEQ)
		seq = SMR_NS_FIRST_SEQ;
	memset(&v, 0, sizeof(v));
	v.d.ino = htole64(fi->ino);
	v.d.dtype = (uint8_t)((fi->mode & S_IFMT) >> 12);
	v.d.name_len = htole16((uint16_t)nlen);
	memcpy(v.b + sizeof(v.d), name, nlen);
	v.d.ref = htole64(seq);
	k = fk_key(lf, SMR_NS_T_DIRENT, h | slot);
	rc = smr_bt_insert(t, SMR_TREE_FS, &k, &v, sizeof(v.d) + nlen);
	if (rc)
		return rc;
	v.d.ref = htole64(h | slot);
	k = fk_key(lf, SMR_NS_T_DIRINDEX, seq);
	rc = smr_bt_insert(t, SMR_TREE_FS, &k, &v, sizeof(v.d) + nlen);
	if (rc)
		return rc;
	dir.next_seq = htole64(seq + 1);
	rc = fk_inode_rw(cow, t, lf, &dir, true);
	if (rc || !S_ISDIR(fi->mode))
		return rc;
	rc = fk_inode_rw(cow, t, fi->ino, &in, false);
	if (rc)
		return rc;
	in.parent = htole64(lf);
	return fk_inode_rw(cow, t, fi->ino, &in, true);
}

/* Delete the TAIL items of @ino. */
static int fk_drop_tail(struct smr_txn *t, uint64_t ino)
{
	for (uint32_t p = 0; p < 2; p++) {
		struct smr_key k = fk_key(SMR_NS_META_OBJID, SMR_NS_T_TAIL,
					  SMR_NS_TAIL_OFFSET(ino, p));
		int rc = smr_bt_delete(t, SMR_TREE_FS, &k);

		if (rc && rc != -ENOENT)
			return rc;
	}
	return 0;
}

/* Links, directory sizes and the inode counter, from a fresh walk. */
static int fk_fix_counts(struct smr_cow *cow, struct smr_txn *t,
			 struct fk_walk *w, uint64_t *fixed)
{
	int rc;

	for (size_t i = 0; i < w->nin; i++) {
		struct fk_inode *fi = &w->in[i];
		struct smr_ns_inode_d d;

		bool nlink, size = S_ISDIR(fi->mode) && fi->size;
		bool bytes = fk_bytes_wrong(fi), flags = fi->flags;
		bool tail = fk_tail_wrong(fi);

		nlink = !fi->orphan && !fk_nameless(fi) &&
			fi->nlink != fk_want_nlink(fi);
		if (!nlink && !size && !bytes && !flags && !tail)
			continue;
		rc = fk_inode_rw(cow, t, fi->ino, &d, false);
		if (!rc && tail) {
			rc = fk_drop_tail(t, fi->ino);
			d.tail = 0;
			d.tail_len = 0;
		}
		if (rc)
			return rc;
		if (nlink)
			d.nlink = htole32(fk_want_nlink(fi));
		if (size)
			d.size = 0;
		if (bytes)
			d.bytes = htole64(fk_want_bytes(fi));
		d.flags = 0;
		rc = fk_inode_rw(cow, t, fi->ino, &d, true);
		if (rc)
			return rc;
		if (nlink)
			smr_info("inode %" PRIu64 ": link count set to %u",
				 fi->ino, fk_want_nlink(fi));
		if (size)
			smr_info("dir %" PRIu64 ": size set to 0", fi->ino);
		if (bytes)
			smr_info("inode %" PRIu64 ": byte count set to %" PRIu64,
				 fi->ino, fk_want_bytes(fi));
		if (tail)
			smr_info("inode %" PRIu64 ": tail block dropped",
				 fi->ino);
		if (flags)
			smr_info("inode %" PRIu64 ": flags cleared", fi->ino);
		*fixed += nlink + size + bytes + flags + tail;
	}
	if (w->meta && le64toh(w->meta_d.nr_inodes) != w->nin) {
		struct smr_key k = fk_key(SMR_NS_META_OBJID, SMR_NS_T_META, 0);

		w->meta_d.nr_inodes = htole64(w->nin);
		rc = smr_bt_update(t, SMR_TREE_FS, &k, &w->meta_d,
				   sizeof(w->meta_d));
		if (rc)
			return rc;
		(*fixed)++;
	}
	return 0;
}

/*
 * A namespace record or a root directory that is missing (a salvage that
 * dropped the first leaf loses both): the namespace cannot open without
 * them. The record is rebuilt from the items (numbers above every inode
 * number and generation in use), the root made as mkfs makes it, with a
 * readdir sequence above its entries', which are kept; the repairs after
 * this count its links and take care of the rest.
 */
static int fk_rebuild_ns(struct smr_cow *cow, uint64_t *fixed)
{
	struct smr_key km = fk_key(SMR_NS_META_OBJID, SMR_NS_T_META, 0);
	struct smr_txn *t;
	struct fk_walk w;
	uint64_t next_gen;
	bool root;
	int rc;

	rc = fk_walk(cow, false, &w);
	if (rc)
		goto out;
	root = fk_find(&w, SMR_NS_ROOT_INO) != NULL;
	if (w.meta && root)
		goto out;
	rc = smr_txn_begin(cow, &t);
	if (rc)
		goto out;
	next_gen = w.meta ? le64toh(w.meta_d.next_gen) : w.max_gen + 1;
	next_gen = SMR_MAX(next_gen, 2);
	if (!root) {
		struct smr_key kr = fk_key(SMR_NS_ROOT_INO, SMR_NS_T_INODE, 0);
		struct smr_ns_inode_d d;
		struct timespec ts;
		int64_t now;

		clock_gettime(CLOCK_REALTIME, &ts);
		now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
		memset(&d, 0, sizeof(d));
		d.mode = htole32(S_IFDIR | 0755);
		d.nlink = htole32(2);
		d.atime = d.mtime = d.ctime = d.crtime = htole64((uint64_t)now);
		d.gen = htole64(next_gen++);
		d.next_seq = htole64(SMR_MAX(w.root_seq + 1, SMR_NS_FIRST_SEQ));
		d.parent = htole64(SMR_NS_ROOT_INO);
		rc = smr_bt_insert(t, SMR_TREE_FS, &kr, &d, sizeof(d));
		if (!rc) {
			smr_info("made a root directory (inode 1)");
			(*fixed)++;
		}
	}
	if (!rc && !w.meta) {
		memset(&w.meta_d, 0, sizeof(w.meta_d));
		w.meta_d.version = htole32(SMR_NS_VERSION);
		w.meta_d.next_ino = htole64(SMR_MAX(w.max_ino + 1,
						    SMR_NS_ROOT_INO + 1));
		w.meta_d.next_gen = htole64(next_gen);
		w.meta_d.nr_inodes = htole64(w.nin + !root);
		rc = smr_bt_insert(t, SMR_TREE_FS, &km, &w.meta_d,
				   sizeof(w.meta_d));
		if (!rc) {
			smr_info("namespace record rebuilt: next inode %" PRIu64
				 ", next generation %" PRIu64,
				 (uint64_t)le64toh(w.meta_d.next_ino), next_gen);
			(*fixed)++;
		}
	} else if (!rc) {
		w.meta_d.next_gen = htole64(next_gen);
		rc = smr_bt_update(t, SMR_TREE_FS, &km, &w.meta_d,
				   sizeof(w.meta_d));
	}
	smr_txn_end(t);
out:
	fk_walk_free(&w);
	return rc;
}

/* The namespace repairs, on an engine open read-write. */
static int fk_repair_ns(struct smr_cow *cow, struct smr_fsck_result *r)
{
	static const struct smr_ns_cred root_cred = { .uid = 0 };
	struct smr_ns *ns = NULL;
	struct smr_ns_attr attr;
	struct smr_txn *t = NULL;
	struct fk_walk w;
	uint64_t lf = 0;
	bool need_lf = false;
	int rc;

	rc = fk_rebuild_ns(cow, &r->fixed);
	if (rc)
		return rc;
	/* Opening read-write reclaims the orphans. */
	rc = smr_ns_open(cow, NULL, &ns);
	if (rc)
		return rc;
	r->fixed += r->orphans;
	rc = smr_ns_repair_acls(ns, &r->fixed);
	if (rc) {
		smr_ns_close(ns);
		return rc;
	}

	/* 1. Entries: dangling ones dropped, missing halves restored. */
	rc = fk_walk(cow, false, &w);
	if (rc)
		goto out_walk;
	rc = smr_txn_begin(cow, &t);
	if (rc)
		goto out_walk;
	/* Items that do not decode go first: the entry they belonged to is
	 * then one that lost that item, and is rebuilt from the other. */
	for (size_t i = 0; i < w.nbad && !rc; i++) {
		rc = smr_bt_delete(t, SMR_TREE_FS, &w.bad[i]);
		if (!rc) {
			smr_info("dir %" PRIu64 ": item %#" PRIx64 " that does "
				 "not decode dropped", w.bad[i].objid,
				 w.bad[i].offset);
			r->fixed++;
		}
	}
	for (size_t i = 0; i < w.nen && !rc; i++) {
		struct fk_entry *e = &w.en[i];

		if (e->dangling) {
			rc = fk_drop_entry(cow, t, &w, e);
			if (!rc) {
				smr_info("dir %" PRIu64 ": dropped entry '%s'",
					 e->dir, e->name);
				r->fixed++;
			}
		} else if (e->no_index && fk_find(&w, e->dir)) {
			rc = fk_add_index(cow, t, e, &r->fixed);
		}
	}
	for (size_t i = 0; i < w.nix && !rc; i++)
		if (w.ix[i].no_entry && fk_find(&w, w.ix[i].dir))
			rc = fk_fix_index(cow, t, &w.ix[i], &r->fixed);
	for (size_t i = 0; i < w.nst && !rc; i++)
		rc = fk_drop_stray(cow, t, &w, &w.st[i], &r->fixed);
	smr_txn_end(t);
	if (rc)
		goto out_walk;

	/* 2. Inodes no entry names: into /lost+found. */
	fk_walk_free(&w);
	rc = fk_walk(cow, false, &w);
	if (rc)
		goto out_walk;
	for (size_t i = 0; i < w.nin; i++)
		if (fk_nameless(&w.in[i]))
			need_lf = true;
	if (need_lf) {
		rc = smr_ns_lookup(ns, SMR_NS_ROOT, FK_LOST_FOUND, &attr);
		if (rc == -ENOENT) {
			rc = smr_ns_mkdir(ns, &root_cred, SMR_NS_ROOT,
					  FK_LOST_FOUND, 0700, &attr);
			if (!rc)
				smr_info("made /%s (inode %" PRIu64 ")",
					 FK_LOST_FOUND, attr.ino);
		}
		if (!rc && !S_ISDIR(attr.mode))
			rc = -ENOTDIR;
		if (rc) {
			smr_err("cannot make /%s: %s", FK_LOST_FOUND,
				strerror(-rc));
			goto out_walk;
		}
		lf = attr.ino;
		/* The namespace keeps its counters in memory: closed before
		 * fsck changes items behind it. */
		smr_ns_close(ns);
		ns = NULL;
		fk_walk_free(&w);
		rc = fk_walk(cow, false, &w);
		if (rc)
			goto out_walk;
		rc = smr_txn_begin(cow, &t);
		if (rc)
			goto out_walk;
		for (size_t i = 0; i < w.nin && !rc; i++) {
			if (!fk_nameless(&w.in[i]) || w.in[i].ino == lf)
				continue;
			rc = fk_link_into(cow, t, lf, &w.in[i]);
			if (!rc) {
				smr_info("inode %" PRIu64 ": now /%s/#%" PRIu64,
					 w.in[i].ino, FK_LOST_FOUND,
					 w.in[i].ino);
				r->fixed++;
			}
		}
		smr_txn_end(t);
		if (rc)
			goto out_walk;
	}
	smr_ns_close(ns);
	ns = NULL;

	/* 3. Link counts and the inode counter, counted again. */
	fk_walk_free(&w);
	rc = fk_walk(cow, false, &w);
	if (rc)
		goto out_walk;
	rc = smr_txn_begin(cow, &t);
	if (rc)
		goto out_walk;
	rc = fk_fix_counts(cow, t, &w, &r->fixed);
	smr_txn_end(t);
out_walk:
	fk_walk_free(&w);
	smr_ns_close(ns);
	return rc;
}

/* ========================================================================
 * The passes
 * ======================================================================== */

/* Where a rebuild's scan of all the written space is, as progress of
 * phase @phase. */
struct fk_scan {
	const struct smr_fsck_opts *o;
	unsigned int phase;
};

static void fk_scan_progress(void *arg, uint64_t done, uint64_t total)
{
	const struct fk_scan *s = arg;

	fk_progress(s->o, s->phase, SMR_FSCK_SCAN, done >> 20,
		    SMR_DIV_ROUND_UP(total, 1 << 20));
}

/* The scans of the engine opened with @co: progress and cancel as @s
 * says, which must last as long as the engine. */
static void fk_scan_opts(struct smr_cow_opts *co, struct fk_scan *s)
{
	co->scan_progress = fk_scan_progress;
	co->scan_arg = s;
	co->cancel = s->o->cancel;
}

/* Open the engine on @dev with the namespace's tree described to it, so
 * that its checks and salvage know the FS tree's items and keys; its
 * scans, if any, report to @scan, which must last as long as it. */
static int fk_open_engine(struct smr_dev *dev, const uint8_t *uuid,
			  struct fk_scan *scan, const struct smr_cow_opts *co,
			  struct smr_cow **cowp)
{
	/* Where neither superblock copy verifies, the one the superblock
	 * pass rebuilt (until the repair writes it), with @uuid where no
	 * checkpoint record gives one (fk_find_uuid). */
	struct smr_cow_opts o = *co;
	int rc;

	o.rebuild_sb = true;
	o.sb_uuid = uuid;
	/* Where no checkpoint record verifies, one rebuilt from the trees
	 * (until the repair commits it). */
	o.rebuild_ckpt = true;
	fk_scan_opts(&o, scan);
	rc = smr_cow_open(dev, &o, cowp);
	if (rc)
		return rc;
	rc = smr_ns_register_trees(*cowp);
	if (rc) {
		smr_cow_close(*cowp);
		*cowp = NULL;
	}
	return rc;
}

struct fk_found {
	uint64_t problems;  /* all */
	uint64_t unfixable; /* of them, beyond fsck's repairs */
	bool fatal;         /* the trees cannot be read: no repair at all */
	const char *why;    /* what made it fatal, for the summary */
	bool rebuild_alloc; /* a zone counts fewer live bytes than the trees
			     * reference: a repair rebuilds the allocator
			     * state from the device (rebuild_alloc_always) */
	bool commit_anew;   /* the newest valid checkpoint is not the one
			     * open uses, or its allocator state was read
			     * with a flipped bit put back: a repair
			     * commits anew */
	bool salvage;       /* a tree has a damaged node: a repair rebuilds
			     * it from what can be read (smr_cow_salvage) */
	bool ckpt_rebuilt;  /* no checkpoint record verified: the open
			     * rebuilt one and the allocator state, so a
			     * salvage waits for the audit (fk_repair) */
	uint32_t log_pending; /* fsync log records after the checkpoint: a
			       * repair replays them first */
	uint32_t *finish;   /* zones whose write pointer lies inside a
			     * referenced node: a repair finishes them
			     * first (smr_alloc_check) */
	uint32_t nr_finish;
	uint8_t uuid_buf[16];
	const uint8_t *uuid; /* neither a superblock copy nor a checkpoint
			      * record verifies: the UUID of the B-tree
			      * nodes on the device (fk_find_uuid) */
	uint8_t fs_uuid[16]; /* the UUID the engine opened with */
};

static void fk_count(struct fk_found *f, uint64_t problems, uint64_t unfixable)
{
	f->problems += problems;
	f->unfixable += unfixable;
}

/* A check could not run to its end: one problem, not repairable, and no
 * commit at all. @what says what failed. */
static void fk_fatal(struct fk_found *f, const char *what, int rc)
{
	smr_err("%s: %s", what, strerror(-rc));
	fk_count(f, 1, 1);
	f->fatal = true;
	f->why = what;
}

/* A phase after the B-trees failed: fatal, unless a damaged node the
 * salvage drops explains it (the check runs again after the salvage). */
static void fk_phase_failed(struct fk_found *f, const char *what, int rc)
{
	if (f->salvage && (rc == -SMR_EFSCORRUPTED || rc == -SMR_EFSBADCRC)) {
		smr_err("%s: %s (through a damaged node: the rest of it is "
			"checked after the salvage)", what, strerror(-rc));
		return;
	}
	fk_fatal(f, what, rc);
}

static int fk_any_item(void *arg, const struct smr_key *k, const void *val,
		       size_t len)
{
	(void)k;
	(void)val;
	(void)len;
	*(bool *)arg = true;
	return 1; /* one is enough */
}

/* Can a single item of the FS tree be read (past damaged nodes)? If not,
 * a salvage has nothing to rebuild it from. */
static bool fk_fs_readable(struct smr_cow *cow)
{
	struct smr_key from = { 0, 0, 0 };
	struct smr_key to = { UINT64_MAX, UINT8_MAX, UINT64_MAX };
	bool any = false;

	smr_bt_iterate(cow, SMR_TREE_FS, &from, &to, fk_any_item, &any);
	return any;
}

/* Does the namespace lack its record or its root inode, which a repair
 * makes again (fk_rebuild_ns)? */
static bool fk_ns_rebuildable(struct smr_cow *cow)
{
	struct smr_key km = fk_key(SMR_NS_META_OBJID, SMR_NS_T_META, 0);
	struct smr_key kr = fk_key(SMR_NS_ROOT_INO, SMR_NS_T_INODE, 0);

	return smr_bt_lookup(cow, SMR_TREE_FS, &km, NULL, NULL) == -ENOENT ||
	       smr_bt_lookup(cow, SMR_TREE_FS, &kr, NULL, NULL) == -ENOENT;
}

/*
 * One full check of the filesystem on @dev: everything but the superblock
 * pass, with the engine read-only. Fills @r's counts and @f.
 */
static int fk_check_engine(struct smr_dev *dev, const struct smr_fsck_opts *o,
			   const struct fk_wps *wps, struct smr_fsck_result *r,
			   struct fk_found *f)
{
	/* Reads go on past damaged nodes: everything else is checked. */
	struct smr_cow_opts co = { .read_only = true, .rebuild_alloc = true,
				   .skip_damaged = true };
	struct fk_scan scan = { .o = o, .phase = 1 };
	struct smr_cow_space_check sc;
	struct smr_ns_rmap_check rm;
	struct smr_cow_info info;
	struct smr_cow *cow;
	struct smr_ns *ns = NULL;
	struct smr_data_extent *planned = NULL;
	size_t nplanned = 0;
	struct fk_walk w;
	struct fk_plan p;
	uint64_t nsp = 0, bad = 0, restored;
	int rc;

	rc = fk_open_engine(dev, f->uuid, &scan, &co, &cow);
	if (rc == -ECANCELED)
		return rc;
	if (rc) {
		if (rc == -ENOMEM || rc == -EIO) {
			smr_err("cannot open the filesystem: %s", strerror(-rc));
			return rc;
		}
		fk_fatal(f, "cannot open the filesystem", rc);
		return 0;
	}
	smr_cow_info(cow, &info);
	r->gen = info.gen;
	memcpy(f->fs_uuid, info.uuid, sizeof(f->fs_uuid));
	f->log_pending = info.log_pending;
	if (info.log_pending)
		smr_warn("%u fsync log record%s after generation %" PRIu64
			 " pending (not damage): checked here is the state of "
			 "the checkpoint; a read-write mount or a repair "
			 "replays them", info.log_pending,
			 info.log_pending == 1 ? "" : "s", info.gen);
	if (info.log_replayed)
		smr_info("%u fsync log record%s replayed and committed",
			 info.log_replayed, info.log_replayed == 1 ? "" : "s");
	if (info.skipped_gen) {
		smr_err("checkpoint of generation %" PRIu64 " cannot be used "
			"(a tree root or its allocator state is damaged): "
			"generation %" PRIu64 " is used, the changes of the "
			"newer commit are lost (a repair commits anew)",
			info.skipped_gen, info.gen);
		fk_count(f, 1, 0);
		f->commit_anew = true;
	}
	if (info.alloc_restored) {
		smr_err("allocator state of generation %" PRIu64 ": one bit "
			"flipped, restored from its checksum (a repair "
			"commits anew to write it again)", info.gen);
		fk_count(f, 1, 0);
		f->commit_anew = true;
	}
	snprintf(r->alloc, sizeof(r->alloc), "%s", info.alloc);
	if (info.ckpt_rebuilt) {
		/* Counted by the superblock pass. */
		f->ckpt_rebuilt = true;
		f->commit_anew = true;
	}

	/* The trees' structure: each damaged node is reported, and the
	 * phases below read past it (what it held is missing to them). */
	fk_progress(o, 2, "B-trees", 0, 0);
	if (fk_cancelled(o))
		goto out_cancel;
	rc = smr_cow_check_all(cow, &bad, &r->underfull_nodes);
	if (rc) {
		fk_fatal(f, "B-tree check failed (not repairable)", rc);
		goto out_cow;
	}
	restored = smr_cow_nodes_restored(cow);
	if (restored) {
		smr_err("B-trees: %" PRIu64 " node%s read only with a flipped "
			"bit put back (named above; a repair rebuilds their "
			"trees with every item)", restored,
			restored == 1 ? "" : "s");
		fk_count(f, restored, 0);
		f->salvage = true;
	}
	r->bad_nodes = bad + restored;
	if (r->underfull_nodes)
		smr_info("B-trees: %" PRIu64 " node%s less than a quarter full "
			 "(left by splits that append; no problem)",
			 r->underfull_nodes, r->underfull_nodes == 1 ? "" : "s");
	if (bad) {
		smr_err("B-trees: %" PRIu64 " problem%s (a repair rebuilds each "
			"damaged tree from the items it can read, dropping the "
			"damaged nodes and what lies below them; the checks "
			"below leave them out)", bad, bad == 1 ? "" : "s");
		fk_count(f, bad, 0);
		f->salvage = true;
	}
	fk_progress(o, 3, "namespace", 0, 0);
	if (fk_cancelled(o))
		goto out_cancel;
	rc = smr_ns_open(cow, NULL, &ns);
	if (rc && f->salvage && !fk_fs_readable(cow)) {
		/* Its leaves are most likely on the device still: the
		 * salvage finds them by a scan (smr_cow_salvage). */
		smr_err("the namespace tree: none of its %" PRIu64 " items can "
			"be read through it (its root node is damaged in the "
			"checkpoint in use and in the one before it): a repair "
			"rebuilds it from the tree's leaves found on the device, "
			"then checks the namespace; the filesystem cannot be "
			"mounted until then", info.fs_items);
		fk_count(f, 1, 0);
		goto out_cow;
	}
	if (rc && fk_ns_rebuildable(cow)) {
		/* The walk plans making them; the rest is checked after. */
		smr_warn("the namespace's own checks run after the repair");
		goto walk;
	}
	if (rc) {
		fk_phase_failed(f, "cannot open the namespace", rc);
		goto out_cow;
	}
	rc = smr_ns_check(ns, &nsp);
	if (rc && rc != -SMR_EFSCORRUPTED) {
		smr_ns_close(ns);
		fk_phase_failed(f, "namespace check failed", rc);
		goto out_cow;
	}
	/* The cleaner's reverse map against the extent items: a repair
	 * rebuilds it from them. */
	rc = smr_ns_check_rmap(ns, false, &rm);
	smr_ns_close(ns);
	if (rc && rc != -EOPNOTSUPP) {
		fk_phase_failed(f, "reverse map check failed", rc);
		goto out_cow;
	}
	r->rmap_entries = rm.entries;
	r->rmap_problems = rm.problems;
	fk_count(f, rm.problems, 0);
	if (rm.problems)
		smr_err("reverse map: %" PRIu64 " problems (a repair rebuilds "
			"it from the extent items)", rm.problems);
	if (rm.released)
		smr_warn("reverse map: %" PRIu64 " entries of data in flight "
			 "at the checkpoint, dropped at the next read-write "
			 "open", rm.released);
walk:
	rc = fk_walk_progress(cow, o->scrub, o, wps, &w);
	if (rc == -ECANCELED)
		goto out_walk;
	if (rc) {
		fk_phase_failed(f, "walking the namespace failed", rc);
		goto out_walk;
	}
	r->inodes = w.nin;
	r->entries = w.nen;
	r->extents = w.next;
	r->scrubbed_bytes = w.scrubbed;
	r->bad_data_blocks = w.bad_blocks;
	fk_plan(&w, false, &p);
	r->orphans = p.orphans;
	{
		uint64_t fixable = p.drops + p.halves + p.moves + p.nlinks +
				   p.counters + p.strays + p.dirsizes +
				   p.bytes + p.flags + p.bad + p.tails;

		/* smr_ns_check counts the same things once each (an nlink
		 * that is off because of a dangling entry once more, which is
		 * fixed with it); what it finds beyond them is not fsck's to
		 * fix. */
		fk_count(f, SMR_MAX(nsp, fixable),
			 nsp > fixable + p.drops ? nsp - fixable - p.drops : 0);
	}
	fk_count(f, w.bad_blocks, w.bad_blocks);
	/* Extents that do not hold their data: the space audit sees them as
	 * the repair will leave them. */
	rc = fk_check_data(&w, true);
	if (rc) {
		fk_phase_failed(f, "checking the extents' data failed", rc);
		goto out_walk;
	}
	fk_count(f, w.nxf, 0);
	rc = fk_planned_ext(&w, &planned, &nplanned);
	if (rc)
		goto out_walk;

	fk_progress(o, 5, "space audit", 0, 0);
	if (fk_cancelled(o)) {
		rc = -ECANCELED;
		goto out_walk;
	}
	rc = smr_cow_check_space(cow, planned, nplanned, false, &sc);
	if (rc) {
		fk_phase_failed(f, "space audit failed", rc);
		goto out_walk;
	}
	r->nodes = sc.nodes;
	r->zones = sc.zones;
	r->data_bytes = sc.data_bytes;
	r->bytes_referenced = sc.bytes_referenced;
	r->leaked = sc.leaked;
	fk_count(f, sc.problems, sc.unfixable);
	/* The allocator could hand out, or a commit reset, space that is
	 * referenced: no commit at all, not even for other repairs. */
	if (sc.unfixable) {
		f->fatal = true;
		f->why = "referenced data lies where the allocator could hand "
			 "it out or reset it (see above)";
	}
	f->rebuild_alloc = sc.low > 0;
	free(f->finish);
	f->finish = sc.finish;
	f->nr_finish = sc.nr_finish;
out_walk:
	free(planned);
	fk_walk_free(&w);
out_cow:
	smr_cow_close(cow);
	return rc == -ENOMEM || rc == -EIO || rc == -ECANCELED ? rc : 0;
out_cancel:
	smr_cow_close(cow);
	return -ECANCELED;
}

/* Say what smr_cow_salvage() did, and count it. */
static void fk_salvaged(const struct smr_cow_salvage *s,
			struct smr_fsck_result *r)
{
	if (s->lost_unknown)
		smr_info("salvaged %u tree(s): %" PRIu64 " damaged node(s) "
			 "dropped, %" PRIu64 " items kept", s->trees,
			 s->bad_nodes, s->kept);
	else
		smr_info("salvaged %u tree(s): %" PRIu64 " damaged node(s) "
			 "dropped, %" PRIu64 " items kept, %" PRIu64 " lost",
			 s->trees, s->bad_nodes, s->kept, s->lost);
	r->fixed += s->trees;
}

/*
 * The first repair when a tree has a damaged node: rebuild the trees from
 * what can be read and commit, before anything else is looked at (the
 * namespace and space checks need whole trees). That needs a usable
 * allocator state: where neither recoverable checkpoint has one, *@later
 * is set and the repair salvages (fk_repair), on a state it rebuilds and
 * audits before anything is allocated.
 */
static int fk_salvage(struct smr_dev *dev, const uint8_t *uuid,
		      const struct smr_fsck_opts *o, struct smr_fsck_result *r,
		      bool *later)
{
	struct smr_cow_opts co = { .commit_secs = 3600, .gc_off = true,
				   .salvage = true };
	struct fk_scan scan = { .o = o, .phase = 5 };
	struct smr_cow_salvage s;
	struct smr_cow *cow;
	int rc, rc2;

	rc = fk_open_engine(dev, uuid, &scan, &co, &cow);
	if (rc == -SMR_EFSCORRUPTED || rc == -SMR_EFSBADCRC) {
		smr_info("no usable allocator state: the trees are salvaged "
			 "with the other repairs, on a state rebuilt from the "
			 "device");
		*later = true;
		return 0;
	}
	if (rc) {
		if (rc != -ECANCELED)
			smr_err("cannot open the filesystem to salvage its "
				"trees: %s", strerror(-rc));
		return rc;
	}
	rc = smr_cow_salvage(cow, &s);
	if (rc) {
		/* Nothing of it is written: the device stays as it was. */
		if (rc != -ECANCELED)
			smr_err("salvaging the trees failed: %s",
				strerror(-rc));
		smr_cow_close_discard(cow);
		return rc;
	}
	rc = smr_cow_commit_forced(cow);
	if (rc)
		smr_err("salvaging the trees failed: %s", strerror(-rc));
	else
		fk_salvaged(&s, r);
	rc2 = smr_cow_close(cow);
	return rc ? rc : rc2;
}

/*
 * The reverse map, after the namespace repairs (which free the data of
 * the items they drop): rebuilt from the extent items if it disagrees.
 */
static int fk_repair_rmap(struct smr_cow *cow, struct smr_fsck_result *r)
{
	struct smr_ns_rmap_check rm;
	struct smr_ns *ns;
	int rc;

	rc = smr_ns_open(cow, NULL, &ns);
	if (rc)
		return rc;
	rc = smr_ns_check_rmap(ns, true, &rm);
	smr_ns_close(ns);
	if (rc == -EOPNOTSUPP)
		return 0;
	if (!rc)
		r->fixed += rm.fixed;
	return rc;
}

static int fk_repair(struct smr_dev *dev, const uint8_t *uuid,
		     const struct smr_fsck_opts *o,
		     const struct fk_wps *wps, bool commit_anew,
		     bool rebuild_alloc, bool log_move, bool salvage,
		     struct smr_fsck_result *r)
{
	/* No timer commit and no cleaning in the middle of the repairs. */
	struct smr_cow_opts co = { .rebuild_alloc = true, .commit_secs = 3600,
				   .rebuild_alloc_always = rebuild_alloc,
				   .gc_off = true, .salvage = salvage };
	struct fk_scan scan = { .o = o, .phase = 5 };
	uint64_t fixed = r->fixed;
	struct smr_data_extent *planned = NULL;
	size_t nplanned = 0;
	struct smr_cow_space_check sc;
	struct smr_cow *cow;
	struct fk_walk w;
	int rc;

	rc = fk_open_engine(dev, uuid, &scan, &co, &cow);
	if (rc == -ECANCELED)
		return rc;
	if (rc) {
		smr_err("cannot open the filesystem read-write: %s",
			strerror(-rc));
		return rc;
	}
	/* A salvage fk_salvage could not make goes first, in memory: its
	 * nodes take space only at the commit, after the audit below. */
	if (salvage) {
		struct smr_cow_salvage s;

		rc = smr_cow_salvage(cow, &s);
		if (rc) {
			if (rc != -ECANCELED)
				smr_err("salvaging the trees failed: %s",
					strerror(-rc));
			smr_cow_close_discard(cow);
			return rc;
		}
		fk_salvaged(&s, r);
	}
	/* The allocator first, before anything allocates: after a rebuild
	 * it holds everything free until the referenced blocks are out. */
	/* The write pointers as found: the open may have finished zones. */
	rc = fk_walk_progress(cow, false, NULL, wps, &w);
	if (!rc)
		rc = fk_check_data(&w, false);
	if (!rc)
		rc = fk_planned_ext(&w, &planned, &nplanned);
	if (!rc)
		rc = smr_cow_check_space(cow, planned, nplanned, true, &sc);
	free(planned);
	if (rc) {
		fk_walk_free(&w);
		smr_err("space repair failed: %s", strerror(-rc));
		goto out;
	}
	free(sc.finish); /* none with repair: the zones were finished */
	r->fixed += sc.fixed;
	/* Then the extents that do not hold their data, as audited. */
	if (w.nxf) {
		struct smr_txn *t;

		rc = smr_txn_begin(cow, &t);
		if (!rc) {
			rc = fk_fix_extents(cow, t, &w, &r->fixed);
			smr_txn_end(t);
		}
	}
	fk_walk_free(&w);
	if (rc) {
		smr_err("extent repair failed: %s", strerror(-rc));
		goto out;
	}
	rc = fk_repair_ns(cow, r);
	if (rc) {
		smr_err("namespace repair failed: %s", strerror(-rc));
		goto out;
	}
	rc = fk_repair_rmap(cow, r);
	if (rc) {
		smr_err("reverse map repair failed: %s", strerror(-rc));
		goto out;
	}
	/* The last moment to stop: nothing of this pass is written yet. */
	fk_progress(o, 5, "repairs", 2, 3);
	if (fk_cancelled(o)) {
		smr_cow_close_discard(cow);
		r->fixed = fixed;
		return -ECANCELED;
	}
	/* One commit for all; a damaged newer checkpoint is superseded. A
	 * damaged superblock copy of the checkpoint log takes a second one:
	 * the first moves the log to the other zone, the second back (each
	 * move resets the zone and writes the copy first). */
	rc = commit_anew || sc.fixed || log_move ? smr_cow_commit_forced(cow) :
						   smr_cow_commit(cow);
	if (!rc && log_move)
		rc = smr_cow_commit_forced(cow);
	if (rc)
		smr_err("committing the repairs failed: %s", strerror(-rc));
out:
	{
		int rc2 = smr_cow_close(cow);

		if (!rc)
			rc = rc2;
	}
	return rc;
}

/*
 * A repair replays the fsync log before anything else: a read-write open
 * replays and commits it. Repairs that rebuild the allocator ignore the
 * log (their commits would then drop it), so it goes first, and without
 * it the repairs go on over the checkpoint's state.
 */
static void fk_replay_log(struct smr_dev *dev, const uint8_t *uuid,
			  const struct smr_fsck_opts *o)
{
	struct smr_cow_opts co = { .commit_secs = 3600, .gc_off = true };
	struct fk_scan scan = { .o = o, .phase = 5 };
	struct smr_cow *cow;
	int rc;

	rc = fk_open_engine(dev, uuid, &scan, &co, &cow);
	if (!rc)
		rc = smr_cow_close(cow);
	if (rc)
		smr_warn("the fsync log could not be replayed (%s): the repairs "
			 "go on without what it held", strerror(-rc));
}

/*
 * Does another filesystem or a partition table lie on @dev (o->probe_other)?
 * A superblock is rebuilt only where none does: mkfs of another filesystem
 * may leave an old smrfs's checkpoint records behind, and writing a
 * superblock would then destroy that filesystem's. Regular files and block
 * devices only (no other filesystem formats a zoned loop directory).
 */
static bool fk_other_fs(const struct smr_fsck_opts *o, struct smr_dev *dev)
{
	enum smr_dev_kind kind = smr_dev_info(dev)->kind;
	char what[160];
	int rc;

	if (!o->probe_other ||
	    (kind != SMR_DEV_KIND_FILE && kind != SMR_DEV_KIND_BDEV &&
	     kind != SMR_DEV_KIND_ZBD))
		return false;
	rc = o->probe_other(smr_dev_path(dev), what, sizeof(what));
	if (rc < 0) {
		smr_err("%s: probing for other filesystems: %s",
			smr_dev_path(dev), strerror(-rc));
		return true;
	}
	if (rc)
		smr_err("%s holds %s: no smrfs superblock is rebuilt over it",
			smr_dev_path(dev), what);
	return rc != 0;
}

/*
 * Neither a superblock copy nor a checkpoint record verifies (@sup): the
 * device is smrfs if B-tree nodes on it say so, and they name its UUID,
 * the one field of the superblock the device does not give (the start of
 * a file or disk wiped, where the superblock copies and the ring lie),
 * unless the caller gives it (o->uuid).
 * Not where another filesystem lies. With the UUID in f->uuid, *@sup is
 * the superblock pass again, on the superblock rebuilt with it.
 */
static int fk_find_uuid(const struct smr_fsck_opts *o, struct smr_dev *dev,
			struct fk_found *f, struct smr_cow_super_check *sup)
{
	int rc;

	if (fk_other_fs(o, dev))
		return 0;
	if (o->uuid) {
		char u[SMR_UUID_STR_LEN];

		smr_info("%s: no superblock copy and no checkpoint record "
			 "verify: rebuilding with the UUID given, %s",
			 smr_dev_path(dev), smr_uuid_format(o->uuid, u));
		memcpy(f->uuid_buf, o->uuid, sizeof(f->uuid_buf));
	} else {
		struct fk_scan scan = { .o = o, .phase = 1 };
		struct smr_cow_opts co = { 0 };

		smr_info("%s: no superblock copy and no checkpoint record "
			 "verify: looking for smrfs B-tree nodes (this reads "
			 "all the written space)", smr_dev_path(dev));
		fk_scan_opts(&co, &scan);
		rc = smr_cow_find_uuid(dev, &co, f->uuid_buf);
		if (rc == -EEXIST)
			smr_err("%s: give the filesystem's UUID (--uuid) to "
				"rebuild it", smr_dev_path(dev));
		if (rc == -EINVAL || rc == -EEXIST)
			return 0;
		if (rc)
			return rc;
	}
	f->uuid = f->uuid_buf;
	return smr_cow_check_super(dev, false, f->uuid, sup);
}

int smr_fsck_run(const struct smr_fsck_opts *o, struct smr_fsck_result *r)
{
	struct smr_dev_opts dopts = { .read_only = !o->repair,
				      .busy_wait = SMR_DEV_BUSY_WAIT };
	struct smr_cow_super_check sup;
	struct fk_found f = { 0 };
	struct fk_wps wps = { 0 };
	bool salvage_later = false;
	struct smr_dev *dev;
	int rc;

	memset(r, 0, sizeof(*r));
	dev = o->dev;
	rc = dev ? 0 : smr_dev_open(o->device, &dopts, &dev);
	if (rc) {
		if (rc == -EBUSY)
			smr_err("%s is in use (mounted?)", o->device);
		else
			smr_err("%s: cannot open: %s", o->device, strerror(-rc));
		return r->exit_code = SMR_FSCK_OPERROR;
	}
	rc = fk_wps_take(dev, &wps);
	if (rc)
		goto out_operr;
	fk_progress(o, 1, "superblocks", 0, 0);
	rc = smr_cow_check_super(dev, false, NULL, &sup);
	if (!rc && sup.no_sb && !sup.sb_bad)
		rc = fk_find_uuid(o, dev, &f, &sup);
	if (rc == -ECANCELED)
		goto out_cancel;
	if (rc)
		goto out_operr;
	r->ckpt_valid = sup.ckpt_valid;
	r->ckpt_bad = sup.ckpt_bad;
	r->sb_bad = sup.sb_bad;
	if (sup.ckpt_valid)
		smr_info("newest checkpoint: generation %" PRIu64 " at byte %"
			 PRIu64 " (%u valid, %u damaged; %u of %u superblock "
			 "copies damaged)", sup.newest_gen, sup.newest_addr,
			 sup.ckpt_valid, sup.ckpt_bad, sup.sb_bad,
			 sup.sb_copies);
	fk_count(&f, sup.problems, sup.unfixable);
	if (sup.sb_rebuilt && !f.uuid && fk_other_fs(o, dev)) {
		/* Old smrfs checkpoints under a newer filesystem. */
		sup.no_sb = true;
		sup.sb_bad = 0;
	}
	if (sup.no_sb && !sup.sb_bad) {
		/* Not smrfs at all, rather than damaged smrfs. */
		smr_err("%s: no smrfs superblock", smr_dev_path(dev));
		goto out_operr;
	}
	if (fk_cancelled(o))
		goto out_cancel;
	if (sup.no_sb) {
		f.fatal = true;
	} else {
		rc = fk_check_engine(dev, o, &wps, r, &f);
		if (rc == -ECANCELED)
			goto out_cancel;
		if (rc)
			goto out_operr;
		if (o->uuid && !f.uuid && !f.fatal &&
		    memcmp(o->uuid, f.fs_uuid, sizeof(f.fs_uuid))) {
			char u[SMR_UUID_STR_LEN], g[SMR_UUID_STR_LEN];

			smr_warn("%s: the UUID given (%s) is not the "
				 "filesystem's (%s): unused, since the "
				 "superblock or a checkpoint record names it",
				 smr_dev_path(dev), smr_uuid_format(o->uuid, g),
				 smr_uuid_format(f.fs_uuid, u));
		}
		if (o->repair && f.log_pending)
			fk_replay_log(dev, f.uuid, o);
	}
	r->problems = f.problems;
	if (!f.problems) {
		r->exit_code = SMR_FSCK_OK;
		if (!o->repair || !r->orphans)
			goto out;
	} else if (!o->repair) {
		/* Nothing repaired: all of them remain. */
		r->remaining = f.problems;
		r->exit_code = SMR_FSCK_UNCORRECTED;
		goto out;
	}
	if (f.fatal) {
		smr_err("nothing repaired: %s", f.why ? f.why :
			"no valid superblock");
		r->remaining = f.problems;
		r->exit_code = SMR_FSCK_UNCORRECTED;
		goto out;
	}

	/* Repair: the device first, then through the engine. */
	fk_progress(o, 5, "repairs", 0, 3);
	if (fk_cancelled(o))
		goto out_cancel;
	rc = smr_cow_check_super(dev, true, f.uuid, &sup);
	if (rc)
		goto out_operr;
	r->fixed += sup.fixed;
	/* A zone whose write pointer lies inside a node that reads whole
	 * (it lost its tail, zeros there) is finished before anything could
	 * be written over the node. */
	for (uint32_t i = 0; i < f.nr_finish; i++) {
		rc = smr_dev_zone_finish(dev, f.finish[i]);
		if (rc) {
			smr_err("zone %u: cannot finish it: %s", f.finish[i],
				strerror(-rc));
			goto out_uncorrected;
		}
		smr_info("zone %u finished: its write pointer lay inside a "
			 "node", f.finish[i]);
		r->fixed++;
	}
	/* On an allocator state rebuilt with the checkpoint, nothing may be
	 * allocated before the audit: the salvage goes with the repairs. */
	salvage_later = f.salvage && f.ckpt_rebuilt;
	if (f.salvage && !salvage_later) {
		if (fk_cancelled(o))
			goto out_cancel;
		rc = fk_salvage(dev, f.uuid, o, r, &salvage_later);
		if (rc == -ECANCELED)
			goto out_cancel;
		if (rc)
			goto out_uncorrected;
	}
	fk_progress(o, 5, "repairs", 1, 3);
	if (fk_cancelled(o))
		goto out_cancel;
	rc = fk_repair(dev, f.uuid, o, &wps, sup.lost_commit || f.commit_anew,
		       f.rebuild_alloc, sup.log_move, salvage_later, r);
	if (rc == -ECANCELED)
		goto out_cancel;
	if (rc)
		goto out_uncorrected;
	fk_progress(o, 5, "repairs", 3, 3);
	r->fixed += f.commit_anew;

	/* And check again. */
	smr_info("checking again after the repairs");
	{
		struct smr_fsck_result again;
		struct fk_found f2 = { 0 };

		memset(&again, 0, sizeof(again));
		fk_progress(o, 1, "superblocks", 0, 0);
		f2.uuid = f.uuid;
		rc = smr_cow_check_super(dev, false, f.uuid, &sup);
		if (rc)
			goto out_operr;
		fk_count(&f2, sup.problems, sup.unfixable);
		rc = fk_wps_take(dev, &wps);
		if (!rc)
			rc = fk_check_engine(dev, o, &wps, &again, &f2);
		free(f2.finish);
		if (rc == -ECANCELED)
			goto out_cancel;
		if (rc)
			goto out_operr;
		r->remaining = f2.problems;
	}
	r->exit_code = r->remaining ? SMR_FSCK_UNCORRECTED :
		       r->fixed ? SMR_FSCK_FIXED : SMR_FSCK_OK;
	goto out;
out_uncorrected:
	r->remaining = r->problems;
	r->exit_code = SMR_FSCK_UNCORRECTED;
	goto out;
out_cancel:
	/* Between phases, or before a commit: never half a repair. */
	if (r->fixed)
		smr_err("cancelled: %" PRIu64 " repairs made and committed, "
			"the rest not made", r->fixed);
	else
		smr_err("cancelled: nothing was written");
	r->problems = f.problems;
	r->remaining = f.problems;
	r->exit_code = SMR_FSCK_CANCELED;
	goto out;
out_operr:
	smr_err("check stopped: %s", strerror(-rc ? -rc : EINVAL));
	r->exit_code = SMR_FSCK_OPERROR;
out:
	free(f.finish);
	free(wps.wp);
	if (!o->dev)
		smr_dev_close(dev);
	return r->exit_code;
}
