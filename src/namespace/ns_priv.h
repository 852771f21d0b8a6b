/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ns_priv.h - what the files of the namespace layer share: the handle, the
 * in-core inode, item helpers. Functions ending in _locked expect ns->lock
 * held and a transaction where they change something.
 */
#ifndef SMR_NAMESPACE_NS_PRIV_H
#define SMR_NAMESPACE_NS_PRIV_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "cow/cow.h"
#include "format/ondisk.h"
#include "namespace/ns.h"

struct ns_undo;

/* In-core form of struct smr_ns_inode_d (times in ns since the epoch). */
struct ns_inode {
	uint64_t ino;
	uint32_t mode, uid, gid, nlink;
	uint64_t size, bytes;
	int64_t atime, mtime, ctime, crtime;
	uint64_t rdev, gen, flags, next_seq, parent;
	uint64_t tail;     /* with tail_len: the block held in TAIL items */
	uint32_t tail_len; /* 0: none (file.c, "Tails") */
};

/*
 * References the kernel and open files hold on an inode, in an open
 * addressing table (16 bytes an entry, no allocation per inode: a walk of a
 * big tree makes the kernel hold millions). A count that reaches
 * UINT32_MAX stays there: the inode then lives until the next mount, which
 * reclaims it if it is unlinked, rather than go while still referenced.
 */
struct ns_ref {
	uint64_t ino;     /* 0: empty slot */
	uint32_t nlookup;
	uint32_t nopen;
};

/*
 * The table is NS_REF_SHARDS tables, chosen by the top bits of the hash,
 * each of which doubles past 3/4 full and halves below 1/8 on its own: a
 * resize holds the old and the new array of one of them at once, not of
 * the whole table (at 1,000,000 references, 16 and 32 MiB together).
 */
#define NS_REF_SHARD_BITS 6
#define NS_REF_SHARDS (1U << NS_REF_SHARD_BITS)
#define NS_REF_SLOTS_MIN 64 /* a shard's smallest table */

struct ns_ref_shard {
	struct ns_ref *refs;          /* nr_slots (a power of 2), or NULL */
	size_t nr_slots, nr_refs;
};

/* How often a call that got -ENOSPC cleans (smr_cow_clean_for_space) and
 * tries again before it gives up. */
#define NS_ENOSPC_RETRIES 8

/*
 * Out of space (-ENOSPC from a data write): clean (smr_cow_clean_for_space)
 * and, should that give nothing back while another writer has a piece out
 * (being written, or written and not mapped yet), wait until one is mapped
 * or given back: that frees the copy it replaced, or its own space. @own:
 * pieces the caller has out itself (0 or 1), which hold no space now.
 * Returns 0 when the caller should try again, else the error. Called
 * without the lock.
 */
int ns_clean_for_space(struct smr_ns *ns, uint32_t own);

/* What an FS tree item costs beside its value (key, item header, slack),
 * for ns_admit_meta_locked(). */
#define NS_META_ITEM_COST 64

/* A write answered before its data went out that then failed: reported
 * by the next fsync or flush of the inode (file.c, ns_werr_set_locked). */
#define NS_WERR_SLOTS 32

struct ns_werr {
	uint64_t ino;
	int err;
};

/* Recently written inodes whose last write the namespace remembers, to
 * tell hot data from cold (file.c, "Temperature"). */
#define NS_HEAT_BITS 12
#define NS_HEAT_SLOTS (1U << NS_HEAT_BITS)

struct ns_heat {
	uint64_t ino;   /* 0: empty */
	uint64_t clock; /* ns->heat_clock after the inode's last write */
};

/* Inodes known to hold no security.capability xattr, so that a write need
 * not look it up to drop it (what S_NOSEC is to the kernel): direct-mapped
 * by inode number, set when the lookup finds none, cleared by setxattr
 * (xattr.c). */
#define NS_NOCAPS_BITS 12
#define NS_NOCAPS_SLOTS (1U << NS_NOCAPS_BITS)

/* Inodes last read or written, direct-mapped by inode number (ns.c,
 * ns_inode_get): a write reads its inode twice and puts it once, each a
 * search of the FS tree. A slot answers only while the FS tree has taken
 * no change of the inode's items since (smr_cow_fs_changes), whoever made
 * it. */
#define NS_ICACHE_BITS 4
#define NS_ICACHE_SLOTS (1U << NS_ICACHE_BITS)

struct ns_icache {
	struct ns_inode in;  /* in.ino 0: empty */
	uint64_t stamp;      /* smr_cow_fs_changes when it was read or put */
};

struct smr_ns {
	struct smr_cow *cow;
	struct smr_ns_opts opts;
	bool acl;                     /* POSIX ACLs kept (smr_ns_set_acl) */
	uint32_t bsize;               /* data block size */
	uint32_t version;             /* smr_ns_meta_d.version */
	pthread_mutex_t lock;         /* the namespace lock; see ns.h */
	uint32_t acks_in;             /* smr_ns_write_ack() calls running
				       * (atomic, no lock) */
	uint32_t answered_out;        /* writes answered before their data
				       * went out and not ended yet (atomic;
				       * changed under the lock) */
	/* protected by lock: */
	/* Pieces written without the lock and not mapped or given back yet
	 * (file.c, ns_write_aligned): each holds new space while the copy
	 * it replaces is still live. pieces_done counts those that ended;
	 * piece_cv wakes a writer out of space once one did. */
	uint32_t pieces_out, piece_waiters;
	uint64_t pieces_done;
	pthread_cond_t piece_cv;
	/* Errors of writes answered before their data went out, for the
	 * next fsync or flush of the inode (file.c); nr_werr is also read
	 * without the lock. */
	uint32_t nr_werr;
	struct ns_werr werr[NS_WERR_SLOTS];
	uint64_t next_ino;
	uint64_t next_gen;
	uint64_t nr_inodes;
	struct ns_ref_shard refs[NS_REF_SHARDS];
	uint64_t *linkable;           /* O_TMPFILEs not named yet (ns.c) */
	size_t nr_linkable, cap_linkable;
	struct ns_undo *undo;         /* the running call's undo log */
	uint64_t heat_clock;          /* bytes written by users, this mount */
	uint64_t heat_window;         /* rewritten within this: hot */
	struct ns_heat heat[NS_HEAT_SLOTS]; /* by inode number */
	uint64_t nocaps[NS_NOCAPS_SLOTS];   /* inode numbers, 0: empty */
	struct ns_icache icache[NS_ICACHE_SLOTS];
};

static inline struct smr_key ns_key(uint64_t objid, uint8_t type,
				    uint64_t off)
{
	struct smr_key k = { .objid = objid, .type = type, .offset = off };

	return k;
}

int64_t ns_now(void);
struct timespec ns_ts(int64_t t);
int64_t ns_from_ts(const struct timespec *ts);

/* Inodes */
int ns_inode_get(struct smr_ns *ns, uint64_t ino, struct ns_inode *ip);
int ns_inode_put(struct smr_ns *ns, struct smr_txn *t,
		 const struct ns_inode *ip);
/* ns_inode_put of an inode read in this call as @was (ns_bt_put_was). */
int ns_inode_put_was(struct smr_ns *ns, struct smr_txn *t,
		     const struct ns_inode *ip, const struct ns_inode *was);
void ns_inode_attr(struct smr_ns *ns, const struct ns_inode *ip,
		   struct smr_ns_attr *attr);
int ns_meta_put(struct smr_ns *ns, struct smr_txn *t);
/*
 * May a call that adds @nitems items holding @bytes of values to the FS
 * tree (inodes, names, symlink targets, xattr values) go ahead? The nodes
 * that hold them count as used once committed, like data, so they may not
 * take users much past the size statfs reports either
 * (smr_cow_space_room_meta: an eighth of the reserve past it): the room
 * beyond it is the reserve the commits and the cleaner need, and names
 * and xattrs that took it made a commit fail for want of nodes and the
 * filesystem turn read-only. 0 or -ENOSPC. Namespace lock held.
 */
int ns_admit_meta_locked(struct smr_ns *ns, unsigned int nitems,
			 uint64_t bytes);
/* Free an unlinked inode and all it holds. */
int ns_inode_destroy_locked(struct smr_ns *ns, struct smr_txn *t,
			    const struct ns_inode *ip);
/* nlink reached 0: destroy now, or store it (nlink 0) with an orphan
 * record while references remain or while it maps too much to be freed
 * in one transaction (ns_free_in_parts); the caller then calls
 * ns_maybe_destroy_locked() once its own transaction has ended. */
int ns_inode_unlinked_locked(struct smr_ns *ns, struct smr_txn *t,
			     const struct ns_inode *ip);
bool ns_free_in_parts(const struct ns_inode *ip);
/* The orphan record of @ino: made, or deleted (-ENOENT if none). */
int ns_orphan_put(struct smr_ns *ns, struct smr_txn *t, uint64_t ino);
int ns_orphan_del(struct smr_ns *ns, struct smr_txn *t, uint64_t ino);
/* Files made without a name that smr_ns_link() may name: added (false:
 * no memory), asked about, dropped (no-op if not there). Lock held. */
bool ns_linkable_add(struct smr_ns *ns, uint64_t ino);
bool ns_linkable_has(const struct smr_ns *ns, uint64_t ino);
void ns_linkable_drop(struct smr_ns *ns, uint64_t ino);
/* If inode @ino has no links and no references left, free it, in parts
 * (a transaction each) if it maps much. No transaction open. Returns 0, or
 * the error that stopped it (logged; the orphan record stays). */
int ns_maybe_destroy_locked(struct smr_ns *ns, uint64_t ino);
/* Would a read at @now leave atime as it is (smr_ns_opts.atime)? */
bool ns_atime_fresh(const struct smr_ns *ns, const struct ns_inode *ip,
		    int64_t now);
/* Update atime as smr_ns_opts.atime says (best effort). */
void ns_touch_atime_locked(struct smr_ns *ns, struct ns_inode *ip);
bool ns_cred_in_group(const struct smr_ns_cred *cr, uint32_t gid);
/* May @cr write to @ip, by its ACL if it has one, else by its mode? */
bool ns_may_write(struct smr_ns *ns, const struct smr_ns_cred *cr,
		  const struct ns_inode *ip);

/* References */
struct ns_ref *ns_ref_find(struct smr_ns *ns, uint64_t ino, bool create);
void ns_ref_inc(uint32_t *count);
void ns_ref_drop_if_unused(struct smr_ns *ns, uint64_t ino);
void ns_lookup_ref(struct smr_ns *ns, uint64_t ino);

/* Files (file.c) */
int ns_truncate_locked(struct smr_ns *ns, struct smr_txn *t,
		       struct ns_inode *ip, uint64_t size);
int ns_extents_free_all_locked(struct smr_ns *ns, struct smr_txn *t,
			       struct ns_inode *ip);
/* Free the extents of @ip in the @part bytes of file from its first
 * extent on, and put the inode: 1, or 0 if it maps nothing, or an error. */
int ns_extents_free_part_locked(struct smr_ns *ns, struct smr_txn *t,
				struct ns_inode *ip, uint64_t part);
/* The error of a write to @ino answered before it failed, forgotten; or
 * 0 (ns_werr_set_locked). */
int ns_werr_take_locked(struct smr_ns *ns, uint64_t ino);
/* The engine's relocation hook (smr_cow_relocate_fn); takes ns->lock. */
int ns_relocate_hook(void *arg, const struct smr_key *owner, uint64_t old_off,
		     uint64_t new_off, uint64_t len);

/* Xattrs (xattr.c) */
int ns_xattr_free_all_locked(struct smr_ns *ns, struct smr_txn *t,
			     uint64_t ino);
/* An xattr's value in *@vp, malloc'd (the caller frees it): its length,
 * or -ENODATA absent, or an error. One lookup. */
ssize_t ns_xattr_dup_locked(struct smr_ns *ns, uint64_t ino, const char *name,
			    uint8_t **vp);
/* Remove an xattr: -ENODATA if there is none. */
int ns_xattr_remove_locked(struct smr_ns *ns, struct smr_txn *t,
			   uint64_t ino, const char *name);
/* Set an xattr, whether or not it exists. */
int ns_xattr_put_locked(struct smr_ns *ns, struct smr_txn *t, uint64_t ino,
			const char *name, const void *value, size_t size);
/* A write, truncate or chown of a file drops its capabilities (the
 * security.capability xattr), as Linux does; the FUSE adapter leaves that
 * to us (see fuse_ops.c). */
int ns_xattr_drop_caps_locked(struct smr_ns *ns, struct smr_txn *t,
			      uint64_t ino);

/* POSIX ACLs (acl.c) */
#define NS_ACL_ACCESS 1
#define NS_ACL_DEFAULT 2
/* NS_ACL_ACCESS or NS_ACL_DEFAULT for the xattr names of ACLs, else 0. */
int ns_acl_type(const char *name);
/* The xattr name of ACL type @type (NS_ACL_ACCESS or NS_ACL_DEFAULT). */
const char *ns_acl_name(int type);
/* An ACL @value (checked: -EINVAL) for @name of @ip: an access ACL sets
 * @ip's mode (the caller puts @ip); *@keep says whether to store it (one
 * that says no more than the mode, or an empty one, is removed). */
int ns_acl_set(const struct smr_ns_cred *cr, struct ns_inode *ip,
	       const char *name, const void *value, size_t size, bool *keep);
/* Does @ip's access ACL grant @cr the permissions @want (S_IROTH,
 * S_IWOTH, S_IXOTH bits)? 1 or 0; -ENODATA: it has none, the mode
 * decides. Not for root, whom the caller lets in first. */
int ns_acl_may_locked(struct smr_ns *ns, const struct smr_ns_cred *cr,
		      const struct ns_inode *ip, uint32_t want);
/* If (@k, @val, @len) is the first item of an ACL xattr: its NS_ACL_*
 * type, and in *@value and *@size its value if the item holds all of it
 * (else NULL). 0 for any other item. */
int ns_acl_item(const struct smr_key *k, const void *val, size_t len,
		const void **value, size_t *size);
/* What is wrong with a stored ACL of @type, @size bytes at @value, on an
 * inode of @mode (FORMAT.md, "POSIX ACLs"): the check reports it, the
 * repair mends it. @value NULL: its place only. */
enum ns_acl_fault {
	NS_ACL_FINE,
	NS_ACL_MISPLACED,   /* a symlink's, or a non-directory's default */
	NS_ACL_UNPARSED,
	NS_ACL_EMPTY,
	NS_ACL_OUT_OF_STEP, /* an access ACL the mode disagrees with */
	NS_ACL_REDUNDANT,   /* an access ACL that says no more than it */
};
enum ns_acl_fault ns_acl_fault(int type, const void *value, size_t size,
			       uint32_t mode);
const char *ns_acl_fault_str(enum ns_acl_fault f);
/* @ip's mode changed: its access ACL, if any, follows (also while ACLs
 * are off, so that they agree when they are on again). */
int ns_acl_chmod_locked(struct smr_ns *ns, struct smr_txn *t,
			const struct ns_inode *ip);
/* What a new node inherits from its directory's default ACL. */
struct ns_acl_new {
	uint8_t *def;   /* the default ACL (NULL: none) */
	uint8_t *acc;   /* the access ACL made from it */
	size_t len;     /* of each */
	bool store_acc; /* the access ACL says more than the mode */
	bool store_def; /* a directory: it inherits the default ACL too */
};
/* Before a node of *@mode is made in @dir: the permission bits of *@mode
 * masked by @dir's default ACL, or by @umask if it has none; *@an for
 * ns_acl_new_store() once the node is made, then ns_acl_new_free(). */
int ns_acl_new_prepare(struct smr_ns *ns, uint64_t dir, uint32_t *mode,
		       uint32_t umask, struct ns_acl_new *an);
int ns_acl_new_store(struct smr_ns *ns, struct smr_txn *t, uint64_t ino,
		     const struct ns_acl_new *an);
void ns_acl_new_free(struct ns_acl_new *an);

/*
 * Calls and their undo log (undo.c). Every changing call runs between
 * ns_txn_begin() and ns_txn_end(), with ns->lock held, and changes items
 * only through ns_bt_*(): when it ends with a negative @rc, everything it
 * changed is rolled back. Calls may nest; the outermost end decides.
 */
int ns_txn_begin(struct smr_ns *ns, struct smr_txn **tp);
int ns_txn_end(struct smr_ns *ns, struct smr_txn *t, int rc);
/* Roll back to a point of the running call (ns_undo_mark), so that a call
 * that keeps what it did before an error keeps nothing of the failing step.
 * False if the call grew too large to be undone (nothing was rolled back). */
size_t ns_undo_mark(struct smr_ns *ns);
bool ns_undo_to(struct smr_ns *ns, struct smr_txn *t, size_t mark);
void ns_undo_free(struct smr_ns *ns);
/* smr_bt_insert/update/put/delete of the FS tree, undoably. */
int ns_bt_insert(struct smr_ns *ns, struct smr_txn *t,
		 const struct smr_key *key, const void *val, size_t len);
int ns_bt_update(struct smr_ns *ns, struct smr_txn *t,
		 const struct smr_key *key, const void *val, size_t len);
int ns_bt_put(struct smr_ns *ns, struct smr_txn *t, const struct smr_key *key,
	      const void *val, size_t len);
int ns_bt_delete(struct smr_ns *ns, struct smr_txn *t,
		 const struct smr_key *key);
/* As ns_bt_put and ns_bt_delete, for a caller that has just read what
 * @key holds (@old, @old_len bytes; NULL: nothing) and changed nothing of
 * it since: the undo log keeps @old without looking the item up again. */
int ns_bt_put_was(struct smr_ns *ns, struct smr_txn *t,
		  const struct smr_key *key, const void *val, size_t len,
		  const void *old, size_t old_len);
int ns_bt_delete_was(struct smr_ns *ns, struct smr_txn *t,
		     const struct smr_key *key, const void *old,
		     size_t old_len);
/* Device space leaves the map: freed when the call succeeds. */
int ns_data_release(struct smr_ns *ns, struct smr_txn *t, uint64_t off,
		    uint64_t len);
/* New device space (smr_cow_data_write) the call maps in @t: settled with
 * the engine, and freed if the call rolls back. */
int ns_data_new(struct smr_ns *ns, struct smr_txn *t, uint64_t off,
		uint64_t len);

/* Delete every item of @objid with type @type. */
int ns_delete_all(struct smr_ns *ns, struct smr_txn *t, uint64_t objid,
		  uint8_t type);

#endif /* SMR_NAMESPACE_NS_PRIV_H */
