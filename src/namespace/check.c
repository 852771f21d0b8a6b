/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * check.c - an audit of the namespace's invariants (smr_ns_check), for the
 * tests and for fsck: every name leads to an inode and every inode's link
 * count is the number of its names (directories: 2 + subdirectories), the
 * two items of each entry agree, extents do not overlap in a file or on the
 * device and, with the tail block, add up to the inode's byte count, a
 * tail block's items are whole and no extent covers it, symlink parts add
 * up to the size, orphan records name unlinked inodes, and the counters hold.
 *
 * Two passes over the FS tree: the first collects the inodes (in key order,
 * so sorted by number), the second checks everything that refers to them.
 * Memory is a few dozen bytes per inode and 16 per extent.
 *
 * smr_ns_check_rmap compares the engine's reverse map of data extents
 * with the extent items (one pass over each, both sorted by device
 * offset; 32 bytes per extent and 48 per entry) and rebuilds it from
 * them on request.
 */
#include "namespace/ns_priv.h"

#include <endian.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define NS_CHECK_MAX_REPORTS 100

struct ck_inode {
	uint64_t ino;
	uint32_t mode, nlink;
	uint64_t size, bytes, next_seq, parent;
	uint64_t names;    /* DIRENT items naming it */
	uint64_t subdirs;  /* directories among its entries */
	uint64_t dirents, dirindex; /* its own entries, of each kind */
	uint64_t ext_bytes, ext_end, link_bytes;
	uint64_t tail;               /* the inode's tail block */
	uint32_t tail_len, tail_seen; /* its bytes, and those of its items */
	bool tail_bad;               /* misplaced, or an item or extent
				      * where none should be */
	bool orphan;
};

struct ck_range {
	uint64_t off, len, ino;
};

struct ck_pair {
	uint64_t dir, hkey, seq, ino;
};

struct ck_pairs {
	struct ck_pair *p;
	size_t n, cap;
};

struct ck {
	struct smr_ns *ns;
	struct ck_pairs pe, pi; /* from DIRENT and from DIRINDEX items */
	struct ck_inode *in;
	size_t nin, cin;
	struct ck_range *rg;
	size_t nrg, crg;
	uint64_t problems;
	bool meta;
	int err; /* -ENOMEM */
};

static void ck_report(struct ck *ck, bool fixed, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Count a problem in *@problems; log the first NS_CHECK_MAX_REPORTS at
 * @level, followed by @next (what becomes of it). */
static void ns_vreport(uint64_t *problems, enum smr_log_level level,
		       const char *next, const char *fmt, va_list ap)
{
	char msg[512];

	if ((*problems)++ >= NS_CHECK_MAX_REPORTS)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	smr_log(level, "%s (%s)", msg, next);
}

/*
 * A problem of the namespace. @fixed: fsck.smrfs repairs it from its own
 * walk (names, entry items that do not decode, link counts, directory
 * sizes, byte counts, inode flags, counters, items of missing inodes);
 * anything else is left as it is. The line says which.
 */
static void ck_report(struct ck *ck, bool fixed, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ns_vreport(&ck->problems, SMR_LOG_ERR,
		   fixed ? "fsck.smrfs -y repairs it" : "not repaired", fmt,
		   ap);
	va_end(ap);
}

static struct ck_inode *ck_find(struct ck *ck, uint64_t ino)
{
	size_t lo = 0, hi = ck->nin;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ck->in[mid].ino == ino)
			return &ck->in[mid];
		if (ck->in[mid].ino < ino)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Pass 1: the inodes. */
static int ck_inode_item(void *arg, const struct smr_key *k, const void *val,
			 size_t len)
{
	struct ck *ck = arg;
	struct smr_ns_inode_d d;
	struct ck_inode *ci;

	if (k->type != SMR_NS_T_INODE)
		return 0;
	if (len != sizeof(d)) {
		ck_report(ck, false, "inode %llu: item of %zu bytes",
			  (unsigned long long)k->objid, len);
		return 0;
	}
	if (ck->nin == ck->cin) {
		size_t n = ck->cin ? 2 * ck->cin : 1024;
		struct ck_inode *p = realloc(ck->in, n * sizeof(*p));

		if (!p) {
			ck->err = -ENOMEM;
			return -ENOMEM;
		}
		ck->in = p;
		ck->cin = n;
	}
	memcpy(&d, val, sizeof(d));
	ci = &ck->in[ck->nin++];
	memset(ci, 0, sizeof(*ci));
	ci->ino = k->objid;
	ci->mode = le32toh(d.mode);
	ci->nlink = le32toh(d.nlink);
	ci->size = le64toh(d.size);
	ci->bytes = le64toh(d.bytes);
	ci->next_seq = le64toh(d.next_seq);
	ci->parent = le64toh(d.parent);
	ci->tail = le64toh(d.tail);
	ci->tail_len = le32toh(d.tail_len);
	ci->tail_bad = !smr_ns_tail_fits(S_ISREG(ci->mode), ck->ns->version,
					 ck->ns->bsize, ci->size, ci->tail,
					 ci->tail_len);
	if (d.flags)
		ck_report(ck, true, "inode %llu: flags %#llx, none is defined",
			  (unsigned long long)k->objid,
			  (unsigned long long)le64toh(d.flags));
	return 0;
}

static int ck_add_range(struct ck *ck, uint64_t off, uint64_t len,
			uint64_t ino)
{
	if (ck->nrg == ck->crg) {
		size_t n = ck->crg ? 2 * ck->crg : 1024;
		struct ck_range *p = realloc(ck->rg, n * sizeof(*p));

		if (!p) {
			ck->err = -ENOMEM;
			return -ENOMEM;
		}
		ck->rg = p;
		ck->crg = n;
	}
	ck->rg[ck->nrg].off = off;
	ck->rg[ck->nrg].len = len;
	ck->rg[ck->nrg].ino = ino;
	ck->nrg++;
	return 0;
}

static void ck_add_pair(struct ck *ck, struct ck_pairs *ps, uint64_t dir,
			uint64_t hkey, uint64_t seq, uint64_t ino)
{
	if (ps->n == ps->cap) {
		size_t n = ps->cap ? 2 * ps->cap : 1024;
		struct ck_pair *p = realloc(ps->p, n * sizeof(*p));

		if (!p) {
			ck->err = -ENOMEM;
			return;
		}
		ps->p = p;
		ps->cap = n;
	}
	ps->p[ps->n].dir = dir;
	ps->p[ps->n].hkey = hkey;
	ps->p[ps->n].seq = seq;
	ps->p[ps->n].ino = ino;
	ps->n++;
}

static int ck_pair_cmp(const void *a, const void *b)
{
	const struct ck_pair *x = a, *y = b;

	if (x->dir != y->dir)
		return x->dir < y->dir ? -1 : 1;
	if (x->hkey != y->hkey)
		return x->hkey < y->hkey ? -1 : 1;
	return 0;
}

/* Each DIRENT item has exactly one DIRINDEX item that names it back. */
static void ck_pairs_match(struct ck *ck)
{
	size_t i = 0, j = 0;

	if (ck->pe.n > 1)
		qsort(ck->pe.p, ck->pe.n, sizeof(*ck->pe.p), ck_pair_cmp);
	if (ck->pi.n > 1)
		qsort(ck->pi.p, ck->pi.n, sizeof(*ck->pi.p), ck_pair_cmp);
	while (i < ck->pe.n || j < ck->pi.n) {
		const struct ck_pair *e = i < ck->pe.n ? &ck->pe.p[i] : NULL;
		const struct ck_pair *x = j < ck->pi.n ? &ck->pi.p[j] : NULL;
		int c = !e ? 1 : !x ? -1 : ck_pair_cmp(e, x);

		if (c < 0) {
			ck_report(ck, true, "dir %llu: entry %#llx has no readdir index item",
				  (unsigned long long)e->dir,
				  (unsigned long long)e->hkey);
			i++;
		} else if (c > 0) {
			ck_report(ck, true, "dir %llu: readdir index %llu names no entry",
				  (unsigned long long)x->dir,
				  (unsigned long long)x->seq);
			j++;
		} else {
			if (e->seq != x->seq || e->ino != x->ino)
				ck_report(ck, false, "dir %llu: entry %#llx and its readdir index disagree",
					  (unsigned long long)e->dir,
					  (unsigned long long)e->hkey);
			i++;
			j++;
		}
	}
}

static void ck_dirent(struct ck *ck, struct ck_inode *dir,
		      const struct smr_key *k, const void *val, size_t len)
{
	union {
		struct smr_ns_dirent_d d;
		uint8_t b[sizeof(struct smr_ns_dirent_d) + SMR_NS_NAME_MAX];
	} v;
	struct ck_inode *t;
	uint64_t ino, ref;
	size_t nlen;

	if (len < sizeof(v.d) || len > sizeof(v)) {
		ck_report(ck, true, "dir %llu: entry item of %zu bytes",
			  (unsigned long long)k->objid, len);
		return;
	}
	memcpy(&v, val, len);
	nlen = le16toh(v.d.name_len);
	ino = le64toh(v.d.ino);
	ref = le64toh(v.d.ref);
	if (nlen == 0 || len != sizeof(v.d) + nlen) {
		ck_report(ck, true, "dir %llu: entry with a name of %zu bytes",
			  (unsigned long long)k->objid, nlen);
		return;
	}
	if (!dir || !S_ISDIR(dir->mode)) {
		ck_report(ck, false, "inode %llu: entries but not a directory",
			  (unsigned long long)k->objid);
		return;
	}
	t = ck_find(ck, ino);
	if (!t) {
		ck_report(ck, true, "dir %llu: entry '%.*s' to missing inode %llu",
			  (unsigned long long)k->objid, (int)nlen,
			  (const char *)v.d.name, (unsigned long long)ino);
		return;
	}
	if (v.d.dtype != ((t->mode & S_IFMT) >> 12))
		ck_report(ck, false, "dir %llu: entry '%.*s' has the wrong type",
			  (unsigned long long)k->objid, (int)nlen,
			  (const char *)v.d.name);
	if (k->type == SMR_NS_T_DIRENT) {
		uint64_t h = smr_ns_name_hash((const char *)v.d.name, nlen);

		dir->dirents++;
		t->names++;
		if (S_ISDIR(t->mode)) {
			dir->subdirs++;
			if (t->parent != dir->ino)
				ck_report(ck, false, "dir %llu: parent %llu, but named in %llu",
					  (unsigned long long)t->ino,
					  (unsigned long long)t->parent,
					  (unsigned long long)dir->ino);
		}
		if ((h & ~0xffULL) != (k->offset & ~0xffULL))
			ck_report(ck, false, "dir %llu: entry '%.*s' under the wrong hash",
				  (unsigned long long)k->objid, (int)nlen,
				  (const char *)v.d.name);
		if (ref < SMR_NS_FIRST_SEQ || ref >= dir->next_seq)
			ck_report(ck, false, "dir %llu: entry '%.*s' with sequence %llu out of range",
				  (unsigned long long)k->objid, (int)nlen,
				  (const char *)v.d.name,
				  (unsigned long long)ref);
	} else {
		dir->dirindex++;
		if (k->offset < SMR_NS_FIRST_SEQ || k->offset >= dir->next_seq)
			ck_report(ck, false, "dir %llu: readdir index %llu out of range",
				  (unsigned long long)k->objid,
				  (unsigned long long)k->offset);
	}
	/* Both items of an entry: (dir, DIRENT key, sequence, inode). */
	ck_add_pair(ck, k->type == SMR_NS_T_DIRENT ? &ck->pe : &ck->pi,
		    k->objid, k->type == SMR_NS_T_DIRENT ? k->offset : ref,
		    k->type == SMR_NS_T_DIRENT ? ref : k->offset, ino);
}

/*
 * An ACL where a node may have one, and (if its value is all in the first
 * part, as every ACL of fewer than some 370 entries is) well formed and in
 * step with the mode.
 */
static void ck_acl(struct ck *ck, const struct ck_inode *ci,
		   const struct smr_key *k, const void *val, size_t len)
{
	const void *value;
	size_t size;
	int type = ns_acl_item(k, val, len, &value, &size);
	enum ns_acl_fault fault;

	if (!type)
		return;
	fault = ns_acl_fault(type, value, size, ci->mode);
	if (fault != NS_ACL_FINE)
		ck_report(ck, true, "inode %llu: %s %s",
			  (unsigned long long)ci->ino, ns_acl_name(type),
			  ns_acl_fault_str(fault));
}

/* A TAIL item: the parts of an inode's tail block in order, each as long
 * as it should be. */
static void ck_tail_item(struct ck *ck, const struct smr_key *k, size_t len)
{
	struct ck_inode *ci = ck_find(ck, k->offset >> 1);

	if (!ci)
		ck_report(ck, true, "tail item of missing inode %llu",
			  (unsigned long long)(k->offset >> 1));
	else if (smr_ns_tail_next(k->offset, len, ci->tail_seen, ci->tail_len))
		ci->tail_seen += (uint32_t)len;
	else
		ci->tail_bad = true;
}

/* Pass 2: everything that refers to inodes. */
static int ck_other_item(void *arg, const struct smr_key *k, const void *val,
			 size_t len)
{
	struct ck *ck = arg;
	struct ck_inode *ci;

	if (k->objid == SMR_NS_META_OBJID) {
		if (k->type == SMR_NS_T_META) {
			ck->meta = true;
		} else if (k->type == SMR_NS_T_ORPHAN) {
			ci = ck_find(ck, k->offset);
			if (!ci || ci->nlink)
				ck_report(ck, false, "orphan record of inode %llu, which %s",
					  (unsigned long long)k->offset,
					  ci ? "has links" : "is missing");
			else
				ci->orphan = true;
		} else if (k->type == SMR_NS_T_TAIL) {
			ck_tail_item(ck, k, len);
		} else {
			/* The FS tree's type refuses it too: a B-tree
			 * problem, which the repair's salvage drops. */
			ck_report(ck, true, "unknown item type %u of object 0",
				  k->type);
		}
		return 0;
	}
	ci = ck_find(ck, k->objid);
	switch (k->type) {
	case SMR_NS_T_INODE:
		return 0;
	case SMR_NS_T_DIRENT:
	case SMR_NS_T_DIRINDEX:
		ck_dirent(ck, ci, k, val, len);
		return ck->err;
	case SMR_NS_T_XATTR:
	case SMR_NS_T_SYMLINK:
	case SMR_NS_T_EXTENT:
		break;
	default:
		/* As above. */
		ck_report(ck, true, "inode %llu: unknown item type %u",
			  (unsigned long long)k->objid, k->type);
		return 0;
	}
	if (!ci) {
		ck_report(ck, true, "items of type %u for missing inode %llu",
			  k->type, (unsigned long long)k->objid);
		return 0;
	}
	if (k->type == SMR_NS_T_XATTR) {
		ck_acl(ck, ci, k, val, len);
	} else if (k->type == SMR_NS_T_SYMLINK) {
		ci->link_bytes += len;
	} else if (k->type == SMR_NS_T_EXTENT) {
		struct smr_ns_extent_d d;
		uint64_t elen, bs = ck->ns->bsize;

		if (len < sizeof(d)) {
			ck_report(ck, false, "inode %llu: extent item too short",
				  (unsigned long long)ci->ino);
			return 0;
		}
		memcpy(&d, val, sizeof(d));
		elen = le64toh(d.len);
		if (!S_ISREG(ci->mode) || elen == 0 || elen % bs ||
		    k->offset % bs ||
		    le32toh(d.nr_csums) != elen / bs ||
		    len != sizeof(d) + 8 * (size_t)(elen / bs))
			ck_report(ck, false, "inode %llu: bad extent at %llu",
				  (unsigned long long)ci->ino,
				  (unsigned long long)k->offset);
		if (k->offset < ci->ext_end)
			ck_report(ck, false, "inode %llu: extents overlap at %llu",
				  (unsigned long long)ci->ino,
				  (unsigned long long)k->offset);
		if (ci->tail_len && k->offset < ci->tail + bs &&
		    k->offset + elen > ci->tail)
			ci->tail_bad = true;
		/* The furthest end: an extent that reaches past the size or
		 * over later ones is seen whatever follows it. */
		ci->ext_end = SMR_MAX(ci->ext_end, k->offset + elen);
		ci->ext_bytes += elen;
		return ck_add_range(ck, le64toh(d.dev_off), elen, ci->ino);
	}
	return 0;
}

static int ck_range_cmp(const void *a, const void *b)
{
	const struct ck_range *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

static void ck_inodes(struct ck *ck)
{
	uint64_t bs = ck->ns->bsize;

	for (size_t i = 0; i < ck->nin; i++) {
		struct ck_inode *ci = &ck->in[i];
		unsigned long long ino = ci->ino;

		if (ci->ino >= ck->ns->next_ino)
			ck_report(ck, false, "inode %llu: at or past the next number %llu",
				  ino, (unsigned long long)ck->ns->next_ino);
		if (S_ISDIR(ci->mode)) {
			uint64_t want = ci->nlink ? 2 + ci->subdirs : 0;

			if (ci->nlink != want)
				ck_report(ck, true, "dir %llu: nlink %u, expected %llu",
					  ino, ci->nlink,
					  (unsigned long long)want);
			/* Sizes are not kept for directories (readdir
			 * offsets are sequence numbers, not bytes). */
			if (ci->size)
				ck_report(ck, true, "dir %llu: size %llu, directories keep 0",
					  ino, (unsigned long long)ci->size);
			if (ci->dirents != ci->dirindex)
				ck_report(ck, true, "dir %llu: %llu entries but %llu readdir index items",
					  ino,
					  (unsigned long long)ci->dirents,
					  (unsigned long long)ci->dirindex);
			if (ino != SMR_NS_ROOT_INO && ci->nlink &&
			    ci->names != 1)
				ck_report(ck, ci->names == 0, "dir %llu: %llu names",
					  ino, (unsigned long long)ci->names);
		} else if (ci->nlink != ci->names) {
			ck_report(ck, true, "inode %llu: nlink %u but %llu names",
				  ino, ci->nlink,
				  (unsigned long long)ci->names);
		}
		if (ci->nlink == 0 && !ci->orphan)
			ck_report(ck, true, "inode %llu: no links and no orphan record",
				  ino);
		if (ci->tail_bad || ci->tail_seen != ci->tail_len)
			ck_report(ck, true, "inode %llu: tail block of %u bytes "
				  "at %llu unusable (items for %u bytes, or "
				  "misplaced, or under an extent)", ino,
				  ci->tail_len, (unsigned long long)ci->tail,
				  ci->tail_seen);
		if (ci->ext_bytes + (ci->tail_len ? bs : 0) != ci->bytes)
			ck_report(ck, true, "inode %llu: extents hold %llu bytes, inode says %llu",
				  ino, (unsigned long long)(ci->ext_bytes +
				  (ci->tail_len ? bs : 0)),
				  (unsigned long long)ci->bytes);
		if (ci->ext_end > SMR_ROUND_UP(ci->size, bs))
			ck_report(ck, false, "inode %llu: extent past the size %llu",
				  ino, (unsigned long long)ci->size);
		if (S_ISLNK(ci->mode) && ci->link_bytes != ci->size)
			ck_report(ck, false, "symlink %llu: %llu target bytes, size %llu",
				  ino, (unsigned long long)ci->link_bytes,
				  (unsigned long long)ci->size);
	}
	if (ck->nin != ck->ns->nr_inodes)
		ck_report(ck, true, "%zu inodes, counter says %llu", ck->nin,
			  (unsigned long long)ck->ns->nr_inodes);
	if (ck->nrg > 1)
		qsort(ck->rg, ck->nrg, sizeof(*ck->rg), ck_range_cmp);
	for (size_t i = 1; i < ck->nrg; i++)
		if (ck->rg[i - 1].off + ck->rg[i - 1].len > ck->rg[i].off)
			ck_report(ck, false, "device bytes at %llu held by inodes %llu and %llu",
				  (unsigned long long)ck->rg[i].off,
				  (unsigned long long)ck->rg[i - 1].ino,
				  (unsigned long long)ck->rg[i].ino);
}

int smr_ns_check(struct smr_ns *ns, uint64_t *nr_problems)
{
	struct smr_key from = ns_key(0, 0, 0);
	struct smr_key to = ns_key(UINT64_MAX, UINT8_MAX, UINT64_MAX);
	struct ck ck = { .ns = ns };
	struct ck_inode *root;
	int rc;

	pthread_mutex_lock(&ns->lock);
	rc = smr_bt_iterate(ns->cow, SMR_TREE_FS, &from, &to, ck_inode_item,
			    &ck);
	if (!rc)
		rc = smr_bt_iterate(ns->cow, SMR_TREE_FS, &from, &to,
				    ck_other_item, &ck);
	if (!rc && ck.err)
		rc = ck.err;
	if (!rc) {
		if (!ck.meta)
			ck_report(&ck, false, "no namespace record");
		root = ck_find(&ck, SMR_NS_ROOT_INO);
		if (!root || !S_ISDIR(root->mode))
			ck_report(&ck, false, "no root directory");
		else if (root->names)
			ck_report(&ck, false, "the root directory has a name");
		ck_inodes(&ck);
		ck_pairs_match(&ck);
	}
	pthread_mutex_unlock(&ns->lock);
	free(ck.in);
	free(ck.rg);
	free(ck.pe.p);
	free(ck.pi.p);
	if (nr_problems)
		*nr_problems = ck.problems;
	if (rc)
		return rc;
	if (ck.problems > NS_CHECK_MAX_REPORTS)
		smr_err("... and %llu more namespace problems",
			(unsigned long long)(ck.problems - NS_CHECK_MAX_REPORTS));
	return ck.problems ? -SMR_EFSCORRUPTED : 0;
}

/* ========================================================================
 * Data extents, for the space audit of fsck
 * ======================================================================== */

struct ns_ext_walk {
	smr_ns_extent_fn fn;
	void *arg;
	int err;
};

static int ns_ext_walk_item(void *arg, const struct smr_key *k,
			    const void *val, size_t len)
{
	struct ns_ext_walk *w = arg;
	struct smr_ns_extent_d d;

	if (k->type != SMR_NS_T_EXTENT || k->objid == SMR_NS_META_OBJID)
		return 0;
	if (len < sizeof(d)) {
		w->err = smr_corrupt(UINT64_MAX, "extent item too short");
		return w->err;
	}
	memcpy(&d, val, sizeof(d));
	return w->fn(w->arg, k->objid, k->offset, le64toh(d.dev_off),
		     le64toh(d.len));
}

int smr_ns_for_each_extent(struct smr_ns *ns, smr_ns_extent_fn fn, void *arg)
{
	struct smr_key from = ns_key(0, 0, 0);
	struct smr_key to = ns_key(UINT64_MAX, UINT8_MAX, UINT64_MAX);
	struct ns_ext_walk w = { .fn = fn, .arg = arg };
	int rc;

	pthread_mutex_lock(&ns->lock);
	rc = smr_bt_iterate(ns->cow, SMR_TREE_FS, &from, &to,
			    ns_ext_walk_item, &w);
	pthread_mutex_unlock(&ns->lock);
	if (w.err)
		return w.err;
	return rc < 0 ? rc : 0;
}

/* ========================================================================
 * The engine's reverse map, against the extent items
 * ======================================================================== */

/* A data extent as an extent item references it. */
struct rm_ref {
	uint64_t off, len;  /* device range */
	uint64_t ino, foff; /* the item's key */
};

struct rm {
	struct smr_ns *ns;
	uint64_t data_start, capacity;
	struct rm_ref *ref;
	size_t nref, cref;
	struct smr_cow_rmap_entry *ent; /* not released, in device order */
	size_t nent, cent;
	struct smr_data_extent *cov;    /* what the entries cover, merged */
	size_t ncov, ccov;
	struct smr_ns_rmap_check *r;
	bool quiet; /* count only: a repair, after a check that logged */
};

static void rm_report(struct rm *rm, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void rm_report(struct rm *rm, const char *fmt, ...)
{
	va_list ap;

	if (rm->quiet) {
		rm->r->problems++;
		return;
	}
	va_start(ap, fmt);
	ns_vreport(&rm->r->problems, SMR_LOG_ERR,
		   "a repair rebuilds the map from the extent items", fmt, ap);
	va_end(ap);
}

/* The owner of an entry, for a message. */
static const char *rm_owner(char *buf, size_t size, const struct smr_key *k)
{
	if (k->type == SMR_NS_T_EXTENT)
		snprintf(buf, size, "inode %llu at file offset %llu",
			 (unsigned long long)k->objid,
			 (unsigned long long)k->offset);
	else
		snprintf(buf, size, "key (%llu, %u, %llu), not an extent item",
			 (unsigned long long)k->objid, k->type,
			 (unsigned long long)k->offset);
	return buf;
}

static int rm_extent_item(void *arg, const struct smr_key *k, const void *val,
			  size_t len)
{
	struct rm *rm = arg;
	struct smr_ns_extent_d d;
	uint64_t off, elen, bs = rm->ns->bsize;

	if (k->type != SMR_NS_T_EXTENT || k->objid == SMR_NS_META_OBJID ||
	    len < sizeof(d))
		return 0;
	memcpy(&d, val, sizeof(d));
	off = le64toh(d.dev_off);
	elen = le64toh(d.len);
	/* What the engine could never map (smr_ns_check and the space
	 * audit report it): left out of the comparison and the rebuild. */
	if (!elen || off % bs || elen % bs || off < rm->data_start ||
	    off > rm->capacity || elen > rm->capacity - off)
		return 0;
	if (smr_array_grow((void **)&rm->ref, &rm->cref, rm->nref,
			   sizeof(*rm->ref)))
		return -ENOMEM;
	rm->ref[rm->nref++] = (struct rm_ref){
		.off = off, .len = elen, .ino = k->objid, .foff = k->offset};
	return 0;
}

static int rm_entry(void *arg, const struct smr_cow_rmap_entry *e)
{
	struct rm *rm = arg;
	struct smr_data_extent *last;

	rm->r->entries++;
	if (e->released) {
		rm->r->released++;
		return 0;
	}
	if (smr_array_grow((void **)&rm->ent, &rm->cent, rm->nent,
			   sizeof(*rm->ent)))
		return -ENOMEM;
	rm->ent[rm->nent++] = *e;
	/* Entries come by start: extend the last covered range, or begin
	 * one. */
	last = rm->ncov ? &rm->cov[rm->ncov - 1] : NULL;
	if (last && e->off <= last->off + last->len) {
		last->len = SMR_MAX(last->len, e->off + e->len - last->off);
		return 0;
	}
	if (smr_array_grow((void **)&rm->cov, &rm->ccov, rm->ncov,
			   sizeof(*rm->cov)))
		return -ENOMEM;
	rm->cov[rm->ncov].off = e->off;
	rm->cov[rm->ncov++].len = e->len;
	return 0;
}

static int rm_ref_cmp(const void *a, const void *b)
{
	const struct rm_ref *x = a, *y = b;

	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/* Sort the references by device offset and cut what two items share
 * (smr_ns_check reports it) from the later one: one owner per byte. */
static void rm_sort_refs(struct rm *rm)
{
	uint64_t end = 0;
	size_t n = 0;

	if (rm->nref > 1)
		qsort(rm->ref, rm->nref, sizeof(*rm->ref), rm_ref_cmp);
	for (size_t i = 0; i < rm->nref; i++) {
		struct rm_ref x = rm->ref[i];

		if (x.off + x.len <= end)
			continue;
		if (x.off < end) {
			x.len -= end - x.off;
			x.foff += end - x.off;
			x.off = end;
		}
		end = x.off + x.len;
		rm->ref[n++] = x;
	}
	rm->nref = n;
}

/* The first reference that ends after @off (references do not overlap,
 * so their ends are in order too). */
static size_t rm_first_ref(const struct rm *rm, uint64_t off)
{
	size_t lo = 0, hi = rm->nref;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rm->ref[mid].off + rm->ref[mid].len <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Each entry: no overlap with an earlier one, every byte referenced, by
 * the item the entry names. */
static void rm_check_entries(struct rm *rm)
{
	uint64_t max_end = 0, max_at = 0;
	char who[96];

	for (size_t i = 0; i < rm->nent; i++) {
		const struct smr_cow_rmap_entry *e = &rm->ent[i];
		uint64_t end = e->off + e->len, pos = e->off;
		uint64_t stale = 0, stale_at = 0;
		bool wrong = false;

		rm_owner(who, sizeof(who), &e->owner);
		if (i && e->off < max_end)
			rm_report(rm, "reverse map: entries for device bytes "
				  "from %llu and from %llu overlap (this one "
				  "names %s)", (unsigned long long)max_at,
				  (unsigned long long)e->off, who);
		if (end > max_end) {
			max_end = end;
			max_at = e->off;
		}
		for (size_t j = rm_first_ref(rm, e->off);
		     j < rm->nref && rm->ref[j].off < end; j++) {
			const struct rm_ref *x = &rm->ref[j];
			uint64_t p = SMR_MAX(pos, x->off);

			if (x->off > pos) {
				if (!stale)
					stale_at = pos;
				stale += x->off - pos;
			}
			if (!wrong &&
			    (e->owner.type != SMR_NS_T_EXTENT ||
			     e->owner.objid != x->ino ||
			     e->owner.offset + (p - e->off) !=
				     x->foff + (p - x->off))) {
				wrong = true;
				rm_report(rm, "reverse map: the entry for device "
					  "bytes [%llu, %llu) names %s, but "
					  "byte %llu is inode %llu's at file "
					  "offset %llu",
					  (unsigned long long)e->off,
					  (unsigned long long)end, who,
					  (unsigned long long)p,
					  (unsigned long long)x->ino,
					  (unsigned long long)(x->foff + p -
							       x->off));
			}
			pos = SMR_MIN(end, x->off + x->len);
		}
		if (pos < end) {
			if (!stale)
				stale_at = pos;
			stale += end - pos;
		}
		if (stale)
			rm_report(rm, "reverse map: the entry for device bytes "
				  "[%llu, %llu) (%s) is stale: %llu bytes from "
				  "byte %llu are referenced by no extent item",
				  (unsigned long long)e->off,
				  (unsigned long long)end, who,
				  (unsigned long long)stale,
				  (unsigned long long)stale_at);
	}
}

/* Each referenced byte has an entry. */
static void rm_check_refs(struct rm *rm)
{
	size_t c = 0;

	for (size_t i = 0; i < rm->nref; i++) {
		const struct rm_ref *x = &rm->ref[i];
		uint64_t end = x->off + x->len, pos = x->off;
		uint64_t gap = 0, gap_at = 0;

		while (c < rm->ncov && rm->cov[c].off + rm->cov[c].len <= pos)
			c++;
		for (size_t j = c; j < rm->ncov && rm->cov[j].off < end; j++) {
			if (rm->cov[j].off > pos) {
				if (!gap)
					gap_at = pos;
				gap += rm->cov[j].off - pos;
			}
			pos = SMR_MIN(end, rm->cov[j].off + rm->cov[j].len);
		}
		if (pos < end) {
			if (!gap)
				gap_at = pos;
			gap += end - pos;
		}
		if (gap)
			rm_report(rm, "reverse map: inode %llu, file offset %llu, "
				  "device bytes [%llu, %llu): %llu bytes from "
				  "byte %llu have no entry (the cleaner cannot "
				  "move them)", (unsigned long long)x->ino,
				  (unsigned long long)x->foff,
				  (unsigned long long)x->off,
				  (unsigned long long)end,
				  (unsigned long long)gap,
				  (unsigned long long)gap_at);
	}
}

/* The map again from the extent items, one entry per item. */
static int rm_rebuild(struct rm *rm)
{
	struct smr_cow_rmap_entry *e;
	struct smr_txn *t;
	int rc;

	e = calloc(rm->nref ? rm->nref : 1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	for (size_t i = 0; i < rm->nref; i++) {
		e[i].off = rm->ref[i].off;
		e[i].len = rm->ref[i].len;
		e[i].owner = ns_key(rm->ref[i].ino, SMR_NS_T_EXTENT,
				    rm->ref[i].foff);
	}
	rc = smr_txn_begin(rm->ns->cow, &t);
	if (!rc) {
		rc = smr_cow_rmap_rebuild(t, e, rm->nref);
		smr_txn_end(t);
	}
	free(e);
	if (!rc)
		smr_info("reverse map rebuilt from the extent items: %zu "
			 "entries (%llu problems)", rm->nref,
			 (unsigned long long)rm->r->problems);
	return rc;
}

int smr_ns_check_rmap(struct smr_ns *ns, bool repair,
		      struct smr_ns_rmap_check *r)
{
	struct smr_key from = ns_key(0, 0, 0);
	struct smr_key to = ns_key(UINT64_MAX, UINT8_MAX, UINT64_MAX);
	struct smr_cow_info info;
	struct rm rm = { .ns = ns, .r = r, .quiet = repair };
	uint64_t bad = 0;
	int rc;

	memset(r, 0, sizeof(*r));
	smr_cow_info(ns->cow, &info);
	rm.data_start = info.data_start;
	rm.capacity = info.capacity;
	pthread_mutex_lock(&ns->lock);
	rc = smr_bt_iterate(ns->cow, SMR_TREE_FS, &from, &to, rm_extent_item,
			    &rm);
	if (!rc)
		rc = smr_cow_rmap_iterate(ns->cow, rm_entry, &rm, &bad);
	if (rc)
		goto out;
	rm_sort_refs(&rm);
	if (bad)
		rm_report(&rm, "reverse map: %llu items do not decode",
			  (unsigned long long)bad);
	rm_check_entries(&rm);
	rm_check_refs(&rm);
	if (!repair && r->problems > NS_CHECK_MAX_REPORTS)
		smr_err("... and %llu more reverse-map problems",
			(unsigned long long)(r->problems -
					     NS_CHECK_MAX_REPORTS));
	if (repair && r->problems) {
		rc = rm_rebuild(&rm);
		if (!rc)
			r->fixed = r->problems;
	}
out:
	pthread_mutex_unlock(&ns->lock);
	free(rm.ref);
	free(rm.ent);
	free(rm.cov);
	return rc;
}
