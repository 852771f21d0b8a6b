/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ns.c - the namespace handle, inodes and their attributes, references
 * (lookups and opens) and orphans, statfs.
 */
#include "namespace/ns_priv.h"

#include <endian.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "format/blk.h"

/* ========================================================================
 * Small helpers
 * ======================================================================== */

int64_t ns_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ns_from_ts(&ts);
}

struct timespec ns_ts(int64_t t)
{
	struct timespec ts;

	ts.tv_sec = t / 1000000000;
	ts.tv_nsec = t % 1000000000;
	if (ts.tv_nsec < 0) {
		ts.tv_nsec += 1000000000;
		ts.tv_sec--;
	}
	return ts;
}

int64_t ns_from_ts(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

uint64_t smr_ns_name_hash(const char *name, size_t len)
{
	return smr_hash64(name, len, SMR_NS_HASH_SEED);
}

bool ns_cred_in_group(const struct smr_ns_cred *cr, uint32_t gid)
{
	const uint32_t *g = cr->groups;
	int n = (int)cr->ngroups;

	if (cr->gid == gid)
		return true;
	if (!g && cr->get_groups)
		n = cr->get_groups(cr->get_groups_arg, &g);
	for (int i = 0; i < n; i++)
		if (g[i] == gid)
			return true;
	return false;
}

bool ns_may_write(struct smr_ns *ns, const struct smr_ns_cred *cr,
		  const struct ns_inode *ip)
{
	if (cr->uid == 0)
		return true;
	if (ns->acl) {
		int rc = ns_acl_may_locked(ns, cr, ip, S_IWOTH);

		if (rc != -ENODATA)
			return rc == 1;
	}
	if (cr->uid == ip->uid)
		return ip->mode & S_IWUSR;
	if (ns_cred_in_group(cr, ip->gid))
		return ip->mode & S_IWGRP;
	return ip->mode & S_IWOTH;
}

/* ========================================================================
 * Inode items
 * ======================================================================== */

/* One of the seven file types; a mode without one is corruption. */
static bool ns_mode_has_type(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
	case S_IFDIR:
	case S_IFLNK:
	case S_IFCHR:
	case S_IFBLK:
	case S_IFIFO:
	case S_IFSOCK:
		return true;
	default:
		return false;
	}
}

static void ns_inode_from_disk(struct ns_inode *ip, uint64_t ino,
			       const struct smr_ns_inode_d *d)
{
	ip->ino = ino;
	ip->mode = le32toh(d->mode);
	ip->uid = le32toh(d->uid);
	ip->gid = le32toh(d->gid);
	ip->nlink = le32toh(d->nlink);
	ip->size = le64toh(d->size);
	ip->bytes = le64toh(d->bytes);
	ip->atime = (int64_t)le64toh(d->atime);
	ip->mtime = (int64_t)le64toh(d->mtime);
	ip->ctime = (int64_t)le64toh(d->ctime);
	ip->crtime = (int64_t)le64toh(d->crtime);
	ip->rdev = le64toh(d->rdev);
	ip->gen = le64toh(d->gen);
	ip->flags = le64toh(d->flags);
	ip->next_seq = le64toh(d->next_seq);
	ip->parent = le64toh(d->parent);
	ip->tail = le64toh(d->tail);
	ip->tail_len = le32toh(d->tail_len);
}

static void ns_inode_to_disk(const struct ns_inode *ip,
			     struct smr_ns_inode_d *d)
{
	memset(d, 0, sizeof(*d));
	d->mode = htole32(ip->mode);
	d->uid = htole32(ip->uid);
	d->gid = htole32(ip->gid);
	d->nlink = htole32(ip->nlink);
	d->size = htole64(ip->size);
	d->bytes = htole64(ip->bytes);
	d->atime = htole64((uint64_t)ip->atime);
	d->mtime = htole64((uint64_t)ip->mtime);
	d->ctime = htole64((uint64_t)ip->ctime);
	d->crtime = htole64((uint64_t)ip->crtime);
	d->rdev = htole64(ip->rdev);
	d->gen = htole64(ip->gen);
	d->flags = htole64(ip->flags);
	d->next_seq = htole64(ip->next_seq);
	d->parent = htole64(ip->parent);
	d->tail = htole64(ip->tail);
	d->tail_len = htole32(ip->tail_len);
}

static struct ns_icache *ns_icache_slot(struct smr_ns *ns, uint64_t ino)
{
	return &ns->icache[(ino * 0x9e3779b97f4a7c15ULL) >>
			   (64 - NS_ICACHE_BITS)];
}

/* @ip is what the tree holds as of @stamp. */
static void ns_icache_set(struct smr_ns *ns, const struct ns_inode *ip,
			  uint64_t stamp)
{
	struct ns_icache *s = ns_icache_slot(ns, ip->ino);

	s->in = *ip;
	s->stamp = stamp;
}

int ns_inode_get(struct smr_ns *ns, uint64_t ino, struct ns_inode *ip)
{
	struct smr_key k = ns_key(ino, SMR_NS_T_INODE, 0);
	struct ns_icache *s = ns_icache_slot(ns, ino);
	uint64_t stamp = smr_cow_fs_changes(ns->cow, ino);
	struct smr_ns_inode_d d;
	size_t len = sizeof(d);
	int rc;

	if (ino == SMR_NS_META_OBJID || ino == 0)
		return -ENOENT;
	if (s->in.ino == ino && s->stamp == stamp) {
		*ip = s->in;
		return 0;
	}
	rc = smr_bt_lookup(ns->cow, SMR_TREE_FS, &k, &d, &len);
	if (rc)
		return rc;
	if (len != sizeof(d))
		return smr_corrupt(UINT64_MAX, "inode item of the wrong size");
	if (!ns_mode_has_type(le32toh(d.mode))) {
		/* Else the kernel refuses the attributes with a bare EIO and
		 * nothing says why. */
		smr_err("inode %" PRIu64 ": mode %#o has no file type", ino,
			le32toh(d.mode));
		return smr_corrupt(UINT64_MAX, "inode item without a file type");
	}
	ns_inode_from_disk(ip, ino, &d);
	ns_icache_set(ns, ip, stamp);
	return 0;
}

int ns_inode_put(struct smr_ns *ns, struct smr_txn *t,
		 const struct ns_inode *ip)
{
	struct smr_key k = ns_key(ip->ino, SMR_NS_T_INODE, 0);
	struct smr_ns_inode_d d;
	int rc;

	ns_inode_to_disk(ip, &d);
	rc = ns_bt_put(ns, t, &k, &d, sizeof(d));
	if (!rc)
		ns_icache_set(ns, ip, smr_cow_fs_changes(ns->cow, ip->ino));
	return rc;
}

int ns_inode_put_was(struct smr_ns *ns, struct smr_txn *t,
		     const struct ns_inode *ip, const struct ns_inode *was)
{
	struct smr_key k = ns_key(ip->ino, SMR_NS_T_INODE, 0);
	struct smr_ns_inode_d d, old;
	int rc;

	ns_inode_to_disk(ip, &d);
	ns_inode_to_disk(was, &old);
	rc = ns_bt_put_was(ns, t, &k, &d, sizeof(d), &old, sizeof(old));
	if (!rc)
		ns_icache_set(ns, ip, smr_cow_fs_changes(ns->cow, ip->ino));
	return rc;
}

void ns_inode_attr(struct smr_ns *ns, const struct ns_inode *ip,
		   struct smr_ns_attr *attr)
{
	if (!attr)
		return;
	memset(attr, 0, sizeof(*attr));
	attr->ino = ip->ino;
	attr->mode = ip->mode;
	attr->uid = ip->uid;
	attr->gid = ip->gid;
	attr->nlink = ip->nlink;
	attr->size = ip->size;
	attr->blocks = ip->bytes / 512;
	attr->blksize = ns->bsize;
	attr->rdev = ip->rdev;
	attr->gen = ip->gen;
	attr->atime = ns_ts(ip->atime);
	attr->mtime = ns_ts(ip->mtime);
	attr->ctime = ns_ts(ip->ctime);
	attr->crtime = ns_ts(ip->crtime);
}

int ns_meta_put(struct smr_ns *ns, struct smr_txn *t)
{
	struct smr_key k = ns_key(SMR_NS_META_OBJID, SMR_NS_T_META, 0);
	struct smr_ns_meta_d d;

	memset(&d, 0, sizeof(d));
	d.version = htole32(ns->version);
	d.next_ino = htole64(ns->next_ino);
	d.next_gen = htole64(ns->next_gen);
	d.nr_inodes = htole64(ns->nr_inodes);
	return ns_bt_put(ns, t, &k, &d, sizeof(d));
}

int ns_admit_meta_locked(struct smr_ns *ns, unsigned int nitems,
			 uint64_t bytes)
{
	/* A node that splits leaves two half full: count twice. */
	uint64_t need = 2 * (bytes + (uint64_t)nitems * NS_META_ITEM_COST);

	return smr_cow_space_room_meta(ns->cow) >= need ? 0 : -ENOSPC;
}

int ns_delete_all(struct smr_ns *ns, struct smr_txn *t, uint64_t objid,
		  uint8_t type)
{
	struct smr_key from = ns_key(objid, type, 0), found;
	size_t len;
	int rc;

	for (;;) {
		len = 0;
		rc = smr_bt_next(ns->cow, SMR_TREE_FS, &from, &found, NULL,
				 &len);
		if (rc == -ENOENT)
			return 0;
		if (rc)
			return rc;
		if (found.objid != objid || found.type != type)
			return 0;
		rc = ns_bt_delete(ns, t, &found);
		if (rc)
			return rc;
		from = found;
	}
}

int ns_inode_destroy_locked(struct smr_ns *ns, struct smr_txn *t,
			    const struct ns_inode *ip)
{
	struct ns_inode copy = *ip;
	struct smr_key k;
	int rc;

	if (S_ISREG(ip->mode)) {
		rc = ns_extents_free_all_locked(ns, t, &copy);
		if (rc)
			return rc;
	}
	rc = ns_xattr_free_all_locked(ns, t, ip->ino);
	if (!rc)
		rc = ns_delete_all(ns, t, ip->ino, SMR_NS_T_SYMLINK);
	if (rc)
		return rc;
	k = ns_key(ip->ino, SMR_NS_T_INODE, 0);
	rc = ns_bt_delete(ns, t, &k);
	if (rc)
		return rc;
	rc = ns_orphan_del(ns, t, ip->ino);
	if (rc && rc != -ENOENT)
		return rc;
	ns_linkable_drop(ns, ip->ino);
	if (ns->nr_inodes)
		ns->nr_inodes--;
	/* No fsync or close of it can come to take its write error. */
	(void)ns_werr_take_locked(ns, ip->ino);
	return ns_meta_put(ns, t);
}

/* ========================================================================
 * References: kernel lookups and opens keep an unlinked inode alive
 * ======================================================================== */

static uint64_t ns_ref_hash(uint64_t ino)
{
	return ino * 0x9e3779b97f4a7c15ULL;
}

static struct ns_ref_shard *ns_ref_shard(struct smr_ns *ns, uint64_t ino)
{
	return &ns->refs[ns_ref_hash(ino) >> (64 - NS_REF_SHARD_BITS)];
}

static size_t ns_ref_slot(const struct ns_ref_shard *sh, uint64_t ino)
{
	return (size_t)(ns_ref_hash(ino) >> 20) & (sh->nr_slots - 1);
}

/* Rebuild a shard with @n slots; on failure it stays as it is. */
static int ns_ref_resize(struct ns_ref_shard *sh, size_t n)
{
	struct ns_ref *old = sh->refs, *nt = calloc(n, sizeof(*nt));
	size_t old_n = sh->nr_slots;

	if (!nt)
		return -ENOMEM;
	sh->refs = nt;
	sh->nr_slots = n;
	for (size_t i = 0; i < old_n; i++) {
		size_t s;

		if (!old[i].ino)
			continue;
		for (s = ns_ref_slot(sh, old[i].ino); nt[s].ino;
		     s = (s + 1) & (n - 1))
			;
		nt[s] = old[i];
	}
	free(old);
	return 0;
}

/*
 * The reference entry of @ino, made (with zero counts) if @create. The
 * pointer is good until the next call that makes or drops an entry.
 */
struct ns_ref *ns_ref_find(struct smr_ns *ns, uint64_t ino, bool create)
{
	struct ns_ref_shard *sh = ns_ref_shard(ns, ino);
	size_t s;

	if (sh->nr_slots)
		for (s = ns_ref_slot(sh, ino); sh->refs[s].ino;
		     s = (s + 1) & (sh->nr_slots - 1))
			if (sh->refs[s].ino == ino)
				return &sh->refs[s];
	if (!create || !ino)
		return NULL;
	if ((sh->nr_refs + 1) * 4 > sh->nr_slots * 3 &&
	    ns_ref_resize(sh, sh->nr_slots ? 2 * sh->nr_slots
					   : NS_REF_SLOTS_MIN) &&
	    sh->nr_refs + 1 >= sh->nr_slots)
		return NULL; /* full, and no memory to grow */
	for (s = ns_ref_slot(sh, ino); sh->refs[s].ino;
	     s = (s + 1) & (sh->nr_slots - 1))
		;
	sh->refs[s] = (struct ns_ref){ .ino = ino };
	sh->nr_refs++;
	return &sh->refs[s];
}

void ns_ref_inc(uint32_t *count)
{
	if (*count != UINT32_MAX)
		(*count)++;
}

static void ns_ref_sub(uint32_t *count, uint64_t n)
{
	if (*count != UINT32_MAX)
		*count = *count > n ? (uint32_t)(*count - n) : 0;
}

void ns_ref_drop_if_unused(struct smr_ns *ns, uint64_t ino)
{
	struct ns_ref *r = ns_ref_find(ns, ino, false);
	struct ns_ref_shard *sh = ns_ref_shard(ns, ino);
	size_t mask = sh->nr_slots - 1, hole, s;

	if (!r || r->nlookup || r->nopen)
		return;
	/* Backward-shift deletion: move up each later entry of the run that
	 * may sit in the hole (its home slot is not between hole and it). */
	hole = (size_t)(r - sh->refs);
	for (s = (hole + 1) & mask; sh->refs[s].ino; s = (s + 1) & mask) {
		size_t home = ns_ref_slot(sh, sh->refs[s].ino);

		if (((s - home) & mask) >= ((s - hole) & mask)) {
			sh->refs[hole] = sh->refs[s];
			hole = s;
		}
	}
	sh->refs[hole].ino = 0;
	sh->nr_refs--;
	if (sh->nr_slots > NS_REF_SLOTS_MIN && sh->nr_refs * 8 < sh->nr_slots)
		ns_ref_resize(sh, sh->nr_slots / 2);
}

void ns_lookup_ref(struct smr_ns *ns, uint64_t ino)
{
	struct ns_ref *r;

	if (!ns->opts.track_lookups)
		return;
	r = ns_ref_find(ns, ino, true);
	if (r)
		ns_ref_inc(&r->nlookup);
	/* Out of memory: the inode may go at its last unlink while the
	 * kernel still knows it; it then answers -ENOENT, never wrong data. */
}

static bool ns_has_refs(struct smr_ns *ns, uint64_t ino)
{
	struct ns_ref *r = ns_ref_find(ns, ino, false);

	return r && (r->nlookup || r->nopen);
}

/*
 * A regular file that maps more than this is freed a part at a time, each
 * in a transaction of its own, once the call that unlinked it is done: in
 * one transaction the extent and reverse-map leaves of a file of 4 KiB
 * extents all turn dirty at once, and the undo log keeps every item, a
 * peak of about 150 MiB of daemon memory for a 1 GiB file. Between parts
 * the inode stays with its orphan record, so a crash leaves it to be
 * reclaimed at the next open.
 */
#define NS_FREE_PART (16u << 20)

bool ns_free_in_parts(const struct ns_inode *ip)
{
	return S_ISREG(ip->mode) && ip->bytes > NS_FREE_PART;
}

int ns_inode_unlinked_locked(struct smr_ns *ns, struct smr_txn *t,
			     const struct ns_inode *ip)
{
	int rc;

	if (!ns_has_refs(ns, ip->ino) && !ns_free_in_parts(ip))
		return ns_inode_destroy_locked(ns, t, ip);
	rc = ns_inode_put(ns, t, ip);
	return rc ? rc : ns_orphan_put(ns, t, ip->ino);
}

int ns_orphan_put(struct smr_ns *ns, struct smr_txn *t, uint64_t ino)
{
	static const uint8_t none;
	struct smr_key k = ns_key(SMR_NS_META_OBJID, SMR_NS_T_ORPHAN, ino);

	return ns_bt_put(ns, t, &k, &none, 0);
}

int ns_orphan_del(struct smr_ns *ns, struct smr_txn *t, uint64_t ino)
{
	struct smr_key k = ns_key(SMR_NS_META_OBJID, SMR_NS_T_ORPHAN, ino);

	return ns_bt_delete(ns, t, &k);
}

/*
 * The files smr_ns_tmpfile() made that have no name yet: smr_ns_link()
 * names only these of the unlinked inodes, as Linux links only an
 * O_TMPFILE (I_LINKABLE). Few at a time: a plain array.
 */
static size_t ns_linkable_at(const struct smr_ns *ns, uint64_t ino)
{
	size_t i = 0;

	while (i < ns->nr_linkable && ns->linkable[i] != ino)
		i++;
	return i;
}

bool ns_linkable_add(struct smr_ns *ns, uint64_t ino)
{
	if (smr_array_grow((void **)&ns->linkable, &ns->cap_linkable,
			   ns->nr_linkable, sizeof(*ns->linkable)))
		return false;
	ns->linkable[ns->nr_linkable++] = ino;
	return true;
}

bool ns_linkable_has(const struct smr_ns *ns, uint64_t ino)
{
	return ns_linkable_at(ns, ino) < ns->nr_linkable;
}

void ns_linkable_drop(struct smr_ns *ns, uint64_t ino)
{
	size_t i = ns_linkable_at(ns, ino);

	if (i < ns->nr_linkable)
		ns->linkable[i] = ns->linkable[--ns->nr_linkable];
}

int ns_maybe_destroy_locked(struct smr_ns *ns, uint64_t ino)
{
	struct ns_inode in;
	struct smr_txn *t;
	int rc, part;

	if (ns_has_refs(ns, ino))
		return 0;
	ns_ref_drop_if_unused(ns, ino);
	do {
		if (ns_inode_get(ns, ino, &in) || in.nlink)
			return 0;
		rc = ns_txn_begin(ns, &t);
		if (rc)
			return rc; /* read-only: reclaimed at the next open */
		part = ns_free_in_parts(&in) ?
			       ns_extents_free_part_locked(ns, t, &in,
							   NS_FREE_PART) :
			       0;
		if (part == 0)
			part = ns_inode_destroy_locked(ns, t, &in);
		rc = ns_txn_end(ns, t, part < 0 ? part : 0);
	} while (!rc && part > 0);
	if (rc)
		smr_warn("inode %llu: freeing the unlinked inode failed: %d",
			 (unsigned long long)ino, rc);
	return rc;
}

void smr_ns_forget(struct smr_ns *ns, uint64_t ino, uint64_t nlookup)
{
	struct ns_ref *r;

	pthread_mutex_lock(&ns->lock);
	r = ns_ref_find(ns, ino, false);
	if (r) {
		ns_ref_sub(&r->nlookup, nlookup);
		(void)ns_maybe_destroy_locked(ns, ino);
	}
	pthread_mutex_unlock(&ns->lock);
}

int smr_ns_open_file(struct smr_ns *ns, uint64_t ino, int flags,
		     bool *atime_fresh)
{
	struct ns_inode in;
	struct ns_ref *r;
	int rc;

	pthread_mutex_lock(&ns->lock);
	rc = ns_inode_get(ns, ino, &in);
	if (rc)
		goto out;
	if (S_ISDIR(in.mode) && (flags & O_ACCMODE) != O_RDONLY) {
		rc = -EISDIR;
		goto out;
	}
	r = ns_ref_find(ns, ino, true);
	if (!r) {
		rc = -ENOMEM;
		goto out;
	}
	ns_ref_inc(&r->nopen);
	if (atime_fresh)
		*atime_fresh = ns_atime_fresh(ns, &in, ns_now());
out:
	pthread_mutex_unlock(&ns->lock);
	return rc;
}

void smr_ns_release(struct smr_ns *ns, uint64_t ino)
{
	struct ns_ref *r;

	pthread_mutex_lock(&ns->lock);
	r = ns_ref_find(ns, ino, false);
	if (r && r->nopen) {
		ns_ref_sub(&r->nopen, 1);
		(void)ns_maybe_destroy_locked(ns, ino);
	}
	pthread_mutex_unlock(&ns->lock);
}

/* ========================================================================
 * Making, opening and closing the namespace
 * ======================================================================== */

/*
 * The namespace mutex spins a little before it sleeps: a write answered
 * early still holds it for a few microseconds of mapping when the caller's
 * next request arrives, and sleeping and waking for that costs more than
 * the wait.
 */
static void ns_lock_init(pthread_mutex_t *m)
{
	pthread_mutexattr_t a;

	/* None of these fails in glibc (a plain mutex would do anyway). */
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
	pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
}

static int ns_load_meta(struct smr_ns *ns)
{
	struct smr_key k = ns_key(SMR_NS_META_OBJID, SMR_NS_T_META, 0);
	struct smr_ns_meta_d d;
	size_t len = sizeof(d);
	int rc;

	rc = smr_bt_lookup(ns->cow, SMR_TREE_FS, &k, &d, &len);
	if (rc == -ENOENT) {
		smr_err("no namespace on this filesystem (mkfs did not finish)");
		return -EINVAL;
	}
	if (rc)
		return rc;
	if (len != sizeof(d))
		return smr_corrupt(UINT64_MAX, "namespace record of the wrong size");
	ns->version = le32toh(d.version);
	if (ns->version < SMR_NS_VERSION_MIN || ns->version > SMR_NS_VERSION) {
		smr_err("namespace version %u is not supported (%u to %u are)",
			ns->version, SMR_NS_VERSION_MIN, SMR_NS_VERSION);
		return -EOPNOTSUPP;
	}
	ns->next_ino = le64toh(d.next_ino);
	ns->next_gen = le64toh(d.next_gen);
	ns->nr_inodes = le64toh(d.nr_inodes);
	if (ns->next_ino <= SMR_NS_ROOT_INO)
		return smr_corrupt(UINT64_MAX, "namespace next inode below root");
	return 0;
}

static int ns_alloc(struct smr_cow *cow, const struct smr_ns_opts *o,
		    struct smr_ns **nsp)
{
	struct smr_cow_space sp;
	struct smr_ns *ns;

	ns = calloc(1, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	ns->cow = cow;
	if (o)
		ns->opts = *o;
	smr_cow_space(cow, &sp);
	ns->bsize = sp.block_size ? (uint32_t)sp.block_size : 4096;
	ns->heat_window = sp.capacity / 16;
	ns_lock_init(&ns->lock);
	pthread_cond_init(&ns->piece_cv, NULL);
	*nsp = ns;
	return 0;
}

/* ========================================================================
 * The FS tree, described to the engine
 * ======================================================================== */

static const char *const ns_item_names[] = {
	[SMR_NS_T_INODE] = "inode",     [SMR_NS_T_DIRENT] = "dirent",
	[SMR_NS_T_DIRINDEX] = "dirindex", [SMR_NS_T_XATTR] = "xattr",
	[SMR_NS_T_EXTENT] = "extent",   [SMR_NS_T_SYMLINK] = "symlink",
	[SMR_NS_T_ORPHAN] = "orphan",   [SMR_NS_T_META] = "meta",
	[SMR_NS_T_TAIL] = "tail",
};

static bool ns_item_type_known(uint8_t type)
{
	return type >= SMR_NS_T_INODE && type <= SMR_NS_T_TAIL;
}

/* The engine's check: an item type of the namespace. What a value holds
 * is smr_ns_check's to judge (and a repair's to mend). */
static const char *ns_check_item(const struct smr_key *k, const void *val,
				 size_t len)
{
	(void)val;
	(void)len;
	return ns_item_type_known(k->type) ? NULL :
					     "not a namespace item type";
}

static bool ns_key_str(const struct smr_key *k, char *buf, size_t len)
{
	if (!ns_item_type_known(k->type))
		return false;
	snprintf(buf, len, "(%" PRIu64 ", %s, %" PRIu64 ")", k->objid,
		 ns_item_names[k->type], k->offset);
	return true;
}

static const struct smr_tree_type ns_tree_type = {
	.id = SMR_TREE_FS,
	.name = "fs",
	.max_item = SMR_COW_MAX_ITEM,
	.check_item = ns_check_item,
	.key_str = ns_key_str,
};

int smr_ns_register_trees(struct smr_cow *cow)
{
	return smr_cow_tree_register(cow, &ns_tree_type);
}

int smr_ns_mkfs(struct smr_cow *cow, const struct smr_ns_cred *cr)
{
	struct smr_key k = ns_key(SMR_NS_META_OBJID, SMR_NS_T_META, 0);
	struct smr_ns *ns;
	struct ns_inode root;
	struct smr_txn *t;
	size_t len = 0;
	int rc;

	rc = smr_ns_register_trees(cow);
	if (rc)
		return rc;
	rc = smr_bt_lookup(cow, SMR_TREE_FS, &k, NULL, &len);
	if (rc == 0)
		return -EEXIST;
	if (rc != -ENOENT)
		return rc;
	rc = ns_alloc(cow, NULL, &ns);
	if (rc)
		return rc;
	ns->version = SMR_NS_VERSION;
	ns->next_ino = SMR_NS_ROOT_INO + 1;
	ns->next_gen = 2;
	ns->nr_inodes = 1;

	memset(&root, 0, sizeof(root));
	root.ino = SMR_NS_ROOT_INO;
	root.mode = S_IFDIR | 0755;
	root.uid = cr ? cr->uid : 0;
	root.gid = cr ? cr->gid : 0;
	root.nlink = 2;
	root.atime = root.mtime = root.ctime = root.crtime = ns_now();
	root.gen = 1;
	root.next_seq = SMR_NS_FIRST_SEQ;
	root.parent = SMR_NS_ROOT_INO;

	rc = ns_txn_begin(ns, &t);
	if (rc)
		goto out_free;
	rc = ns_inode_put(ns, t, &root);
	if (!rc)
		rc = ns_meta_put(ns, t);
	rc = ns_txn_end(ns, t, rc);
	if (!rc)
		rc = smr_cow_commit(cow);
out_free:
	smr_ns_close(ns);
	return rc;
}

/* Free the inodes that were unlinked while open when we last went down. */
static int ns_reclaim_orphans(struct smr_ns *ns)
{
	struct smr_key from = ns_key(SMR_NS_META_OBJID, SMR_NS_T_ORPHAN, 0);
	struct smr_key found;
	struct ns_inode in;
	struct smr_txn *t;
	unsigned long n = 0;
	size_t len;
	int rc;

	for (;;) {
		len = 0;
		rc = smr_bt_next(ns->cow, SMR_TREE_FS, &from, &found, NULL,
				 &len);
		if (rc == -ENOENT) {
			rc = 0;
			break;
		}
		if (rc)
			break;
		if (found.objid != SMR_NS_META_OBJID ||
		    found.type != SMR_NS_T_ORPHAN)
			break;
		rc = ns_inode_get(ns, found.offset, &in);
		if (rc == 0 && in.nlink == 0) {
			/* In parts, as at runtime: one transaction for a big
			 * file would take the memory of all its leaves. */
			rc = ns_maybe_destroy_locked(ns, in.ino);
		} else if (rc == 0 || rc == -ENOENT) {
			/* Relinked, or gone: only the record is left. */
			rc = ns_txn_begin(ns, &t);
			if (!rc)
				rc = ns_txn_end(ns, t,
						ns_bt_delete(ns, t, &found));
		}
		if (rc)
			break;
		n++;
		from = found;
		from.offset++;
	}
	if (n && !rc)
		smr_info("reclaimed %lu orphan inode%s", n, n == 1 ? "" : "s");
	return rc;
}

int smr_ns_open(struct smr_cow *cow, const struct smr_ns_opts *o,
		struct smr_ns **nsp)
{
	struct smr_ns *ns;
	struct ns_inode root;
	int rc;

	rc = smr_ns_register_trees(cow);
	if (rc)
		return rc;
	rc = ns_alloc(cow, o, &ns);
	if (rc)
		return rc;
	rc = ns_load_meta(ns);
	if (rc)
		goto out_free;
	rc = ns_inode_get(ns, SMR_NS_ROOT_INO, &root);
	if (rc == -ENOENT)
		rc = smr_corrupt(UINT64_MAX, "no root directory");
	else if (rc == 0 && !S_ISDIR(root.mode))
		rc = smr_corrupt(UINT64_MAX, "root is not a directory");
	if (rc)
		goto out_free;
	if (!smr_cow_is_read_only(cow)) {
		rc = ns_reclaim_orphans(ns);
		if (rc)
			goto out_free;
	}
	smr_cow_set_relocate_hook(cow, ns_relocate_hook, ns);
	*nsp = ns;
	return 0;
out_free:
	smr_ns_close(ns);
	return rc;
}

int smr_ns_remount(struct smr_ns *ns, const struct smr_ns_opts *o,
		   unsigned int commit_secs, bool ro)
{
	if (o) {
		pthread_mutex_lock(&ns->lock);
		ns->opts.atime = o->atime;
		ns->opts.nodiratime = o->nodiratime;
		pthread_mutex_unlock(&ns->lock);
	}
	if (commit_secs)
		smr_cow_set_commit_secs(ns->cow, commit_secs);
	return smr_cow_set_read_only(ns->cow, ro);
}

int smr_ns_set_gc(struct smr_ns *ns, int policy, unsigned int low,
		  unsigned int high)
{
	return smr_cow_set_gc(ns->cow, policy, low, high);
}

void smr_ns_close(struct smr_ns *ns)
{
	if (!ns)
		return;
	smr_cow_set_relocate_hook(ns->cow, NULL, NULL);
	ns_undo_free(ns);
	for (unsigned int i = 0; i < NS_REF_SHARDS; i++)
		free(ns->refs[i].refs);
	free(ns->linkable);
	pthread_cond_destroy(&ns->piece_cv);
	pthread_mutex_destroy(&ns->lock);
	free(ns);
}

int smr_ns_sync(struct smr_ns *ns)
{
	return smr_cow_commit(ns->cow);
}

/* ========================================================================
 * Attributes
 * ======================================================================== */

int smr_ns_getattr(struct smr_ns *ns, uint64_t ino, struct smr_ns_attr *attr)
{
	struct ns_inode in;
	int rc;

	pthread_mutex_lock(&ns->lock);
	rc = ns_inode_get(ns, ino, &in);
	if (!rc)
		ns_inode_attr(ns, &in, attr);
	pthread_mutex_unlock(&ns->lock);
	return rc;
}

/*
 * Does @mode only clear set-id bits of @old, at least one? The kernel asks for that on
 * behalf of a writer who is not the owner (FUSE leaves clearing them on
 * write, truncate and chown to a mode change): dropping a privilege is
 * always allowed.
 */
static bool ns_mode_drops_setid(uint32_t old, uint32_t mode)
{
	const uint32_t setid = S_ISUID | S_ISGID;

	return (mode & 07777 & ~setid) == (old & 07777 & ~setid) &&
	       !(mode & setid & ~old) && (old & setid & ~mode);
}

/* The checks of setattr, before anything changes. */
static int ns_setattr_check(struct smr_ns *ns, const struct smr_ns_cred *cr,
			    const struct ns_inode *ip,
			    const struct smr_ns_setattr *sa)
{
	bool root = cr->uid == 0, owner = cr->uid == ip->uid;

	if ((sa->valid & SMR_NS_SET_MODE) && !root && !owner &&
	    !ns_mode_drops_setid(ip->mode, sa->mode))
		return -EPERM;
	if ((sa->valid & SMR_NS_SET_UID) && !root &&
	    !(owner && sa->uid == ip->uid))
		return -EPERM;
	if ((sa->valid & SMR_NS_SET_GID) && !root &&
	    !(owner && (sa->gid == ip->gid || ns_cred_in_group(cr, sa->gid))))
		return -EPERM;
	if ((sa->valid & (SMR_NS_SET_ATIME | SMR_NS_SET_MTIME |
			  SMR_NS_SET_CTIME)) && !root && !owner &&
	    !(sa->valid & SMR_NS_SET_KEPT_TIMES))
		return -EPERM;
	if ((sa->valid & (SMR_NS_SET_ATIME_NOW | SMR_NS_SET_MTIME_NOW)) &&
	    !root && !owner && !ns_may_write(ns, cr, ip))
		return -EACCES;
	if (sa->valid & SMR_NS_SET_SIZE) {
		if (S_ISDIR(ip->mode))
			return -EISDIR;
		if (!S_ISREG(ip->mode))
			return -EINVAL;
		if (sa->size > (uint64_t)INT64_MAX)
			return -EFBIG;
	}
	return 0;
}

static int ns_setattr_once(struct smr_ns *ns, const struct smr_ns_cred *cr,
			   uint64_t ino, const struct smr_ns_setattr *sa,
			   struct smr_ns_attr *attr)
{
	struct ns_inode in;
	struct smr_txn *t;
	int64_t now = ns_now();
	int rc;

	pthread_mutex_lock(&ns->lock);
	rc = ns_inode_get(ns, ino, &in);
	if (rc)
		goto out_unlock;
	rc = ns_setattr_check(ns, cr, &in, sa);
	if (rc)
		goto out_unlock;
	rc = ns_txn_begin(ns, &t);
	if (rc)
		goto out_unlock;

	if (sa->valid & SMR_NS_SET_SIZE) {
		if (sa->size != in.size || !(sa->valid & SMR_NS_SET_MTIME))
			in.mtime = now;
		rc = ns_truncate_locked(ns, t, &in, sa->size);
		if (!rc)
			rc = ns_xattr_drop_caps_locked(ns, t, ino);
		if (rc)
			goto out_end;
		if (cr->uid != 0) {
			in.mode &= ~S_ISUID;
			if (in.mode & S_IXGRP)
				in.mode &= ~S_ISGID;
		}
	}
	if (sa->valid & SMR_NS_SET_MODE) {
		uint32_t mode = sa->mode & 07777;

		if (cr->uid != 0 && !ns_cred_in_group(cr, in.gid) &&
		    !((sa->valid & SMR_NS_SET_GID) &&
		      ns_cred_in_group(cr, sa->gid)))
			mode &= ~S_ISGID;
		in.mode = (in.mode & S_IFMT) | mode;
		rc = ns_acl_chmod_locked(ns, t, &in);
		if (rc)
			goto out_end;
	}
	if (sa->valid & (SMR_NS_SET_UID | SMR_NS_SET_GID)) {
		if (sa->valid & SMR_NS_SET_UID)
			in.uid = sa->uid;
		if (sa->valid & SMR_NS_SET_GID)
			in.gid = sa->gid;
		/* A chown (even to the same ids, as Linux does) of a
		 * non-directory drops the set-id bits, unless the same call
		 * sets the mode explicitly. */
		if (!S_ISDIR(in.mode) && !(sa->valid & SMR_NS_SET_MODE)) {
			in.mode &= ~S_ISUID;
			if (in.mode & S_IXGRP)
				in.mode &= ~S_ISGID;
		}
		if (!S_ISDIR(in.mode)) {
			rc = ns_xattr_drop_caps_locked(ns, t, ino);
			if (rc)
				goto out_end;
		}
	}
	if (sa->valid & SMR_NS_SET_ATIME)
		in.atime = ns_from_ts(&sa->atime);
	if (sa->valid & SMR_NS_SET_ATIME_NOW)
		in.atime = now;
	if (sa->valid & SMR_NS_SET_MTIME)
		in.mtime = ns_from_ts(&sa->mtime);
	if (sa->valid & SMR_NS_SET_MTIME_NOW)
		in.mtime = now;
	in.ctime = (sa->valid & SMR_NS_SET_CTIME) ? ns_from_ts(&sa->ctime) :
						     now;
	rc = ns_inode_put(ns, t, &in);
	if (!rc)
		ns_inode_attr(ns, &in, attr);
out_end:
	rc = ns_txn_end(ns, t, rc);
out_unlock:
	pthread_mutex_unlock(&ns->lock);
	return rc;
}

int smr_ns_setattr(struct smr_ns *ns, const struct smr_ns_cred *cr,
		   uint64_t ino, const struct smr_ns_setattr *sa,
		   struct smr_ns_attr *attr)
{
	int rc;

	smr_cow_clean_for_meta(ns->cow);
	rc = ns_setattr_once(ns, cr, ino, sa, attr);
	/* A truncate to within a block rewrites that block: out of space,
	 * clean and try again, as a write does (the call was undone). */
	for (int i = 0; rc == -ENOSPC && (sa->valid & SMR_NS_SET_SIZE) &&
			i < NS_ENOSPC_RETRIES; i++) {
		if (ns_clean_for_space(ns, 0))
			break;
		rc = ns_setattr_once(ns, cr, ino, sa, attr);
	}
	return rc;
}

/* ========================================================================
 * statfs
 * ======================================================================== */

int smr_ns_statfs(struct smr_ns *ns, struct smr_ns_statfs *st)
{
	struct smr_cow_space sp;
	uint64_t bs;

	smr_cow_space(ns->cow, &sp);
	bs = sp.block_size ? sp.block_size : ns->bsize;
	memset(st, 0, sizeof(*st));
	st->bsize = (uint32_t)bs;
	/* The size is what users can fill and keep overwriting; the reserve
	 * and the room the cleaner needs are not theirs (smr_cow_space). */
	st->blocks = smr_cow_space_size(&sp) / bs;
	st->bfree = smr_cow_space_avail(&sp) / bs;
	st->bavail = st->bfree;
	st->ffree = st->bfree;
	pthread_mutex_lock(&ns->lock);
	st->files = ns->nr_inodes + st->ffree;
	pthread_mutex_unlock(&ns->lock);
	st->namemax = SMR_NS_NAME_MAX;
	return 0;
}
