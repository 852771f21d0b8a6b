/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ns.h - the namespace layer of smrfs: inodes, directories, names, file
 * extent maps, symlinks, special files, extended attributes and the POSIX
 * rules for all of them, kept as items of the COW engine's FS tree.
 *
 * This is the one interface the FUSE adapter (and mkfs) uses. Inode numbers
 * are the FUSE node ids; the root directory is SMR_NS_ROOT_INO (1). Every
 * function takes the handle first and returns 0 (or a byte count where
 * stated) or a negative errno; the errors each may return are listed with it.
 * Besides those, any call that changes something may return -EROFS (the
 * engine is read-only), -ENOSPC, -EIO and -SMR_EFSCORRUPTED/-SMR_EFSBADCRC
 * from the engine.
 *
 * Permissions. The kernel checks permission bits (the daemon mounts with
 * default_permissions); the namespace applies the ownership rules that the
 * kernel leaves to the filesystem: only the owner or root may chmod or set
 * arbitrary timestamps; only root may change the owner; the owner may change
 * the group to one of their groups; setuid/setgid are cleared on write and
 * truncate by non-root and on chown; sticky directories restrict unlink and
 * rename to the owner of the entry or of the directory, or root. The caller's
 * credentials come in struct smr_ns_cred.
 *
 * Concurrency. One namespace lock (a mutex) is held for every call, so that
 * a call sees and leaves the trees consistent; reads and partial-block
 * writes hold it across their data I/O. A whole-block write drops it while
 * its data goes to new space (nothing references that space until the write
 * maps it under the lock). fsync and sync run without it (the engine commit
 * waits for running calls); statfs takes it only to read a counter. Engine
 * locks are taken inside the engine. Every call may come from any thread.
 */
#ifndef SMR_NAMESPACE_NS_H
#define SMR_NAMESPACE_NS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "util/smr.h"

struct smr_cow;
struct smr_ns;

#define SMR_NS_ROOT 1ULL
#define SMR_NS_NAME_MAX 255
#define SMR_NS_SYMLINK_MAX 4095
#define SMR_NS_XATTR_NAME_MAX 255
#define SMR_NS_XATTR_SIZE_MAX 65536
#define SMR_NS_LINK_MAX 65000

/*
 * Who is asking: gid and the supplementary groups, @ngroups of @groups, or,
 * where @groups is NULL and @get_groups is set, those it returns (their
 * number, and the list in *@groups) when a rule first needs them, to ask
 * about a group other than @gid. It may be called with the namespace lock
 * held, so it must not call the namespace; it may keep the groups in
 * @get_groups_arg for later calls.
 */
struct smr_ns_cred {
	uint32_t uid;
	uint32_t gid;
	const uint32_t *groups;
	unsigned int ngroups;
	int (*get_groups)(void *arg, const uint32_t **groups);
	void *get_groups_arg;
	/* Permission bits a new node does not get, where its directory has
	 * no default ACL (0: the caller masked the mode already). */
	uint32_t umask;
};

/* What getattr reports. */
struct smr_ns_attr {
	uint64_t ino;
	uint32_t mode;
	uint32_t uid;
	uint32_t gid;
	uint32_t nlink;
	uint64_t size;
	uint64_t blocks;   /* 512-byte units held by data extents */
	uint32_t blksize;  /* preferred I/O size */
	uint64_t rdev;
	uint64_t gen;
	struct timespec atime, mtime, ctime, crtime;
};

/*
 * When a read or a listing updates atime (the mount options of the same
 * names). relatime, the default: only when atime is not newer than mtime
 * and ctime, or is a day old, so that it still tells whether a file was
 * read since it changed without a write for every read. strictatime: at
 * every read that reaches the namespace.
 */
enum smr_ns_atime {
	SMR_NS_RELATIME = 0,
	SMR_NS_NOATIME,
	SMR_NS_STRICTATIME,
};

/* Zeroed = defaults. */
struct smr_ns_opts {
	/*
	 * Count kernel lookup references: each call that returns an entry
	 * (lookup, mknod, mkdir, symlink, link, create) adds one, forget drops
	 * them, and an unlinked inode lives until both its lookup count and
	 * its open count are zero. Off: only the open count keeps it.
	 */
	bool track_lookups;
	enum smr_ns_atime atime;
	bool nodiratime; /* listing a directory leaves its atime */
};

/*
 * Keep POSIX ACLs (the xattrs system.posix_acl_access and
 * system.posix_acl_default): on only where something checks permissions
 * against them (the kernel, with FUSE_POSIX_ACL); off (the default), their
 * names are -EOPNOTSUPP as other system.* names.
 */
void smr_ns_set_acl(struct smr_ns *ns, bool on);

/*
 * Create the namespace of a freshly formatted filesystem: the root directory
 * (mode 0755 | S_IFDIR, owned by @cr) and the namespace counters, then commit
 * through the engine's ordinary commit. Errors: -EEXIST if a namespace is
 * already there, engine errors.
 */
int smr_ns_mkfs(struct smr_cow *cow, const struct smr_ns_cred *cr);

/*
 * Open the namespace of @cow (which stays the caller's; close it after
 * smr_ns_close). Inodes left as orphans (unlinked while open when the
 * filesystem last went down) are reclaimed now unless the engine is
 * read-only. Errors: -EINVAL no namespace (not made by smr_ns_mkfs),
 * -SMR_EFSCORRUPTED a bad namespace record, -ENOMEM, engine errors.
 */
int smr_ns_open(struct smr_cow *cow, const struct smr_ns_opts *o,
		struct smr_ns **nsp);

/*
 * A remount: take the atime options of @o if given (its other fields are
 * the open's) and the commit interval @commit_secs if not 0
 * (smr_cow_set_commit_secs), then go read-only (@ro: everything committed
 * first, nothing written after; changes get -EROFS) or writable again
 * (smr_cow_set_read_only). The caller makes sure no write is under way
 * (the kernel remounts read-only only with no file open for writing).
 * Inodes unlinked and last closed while read-only are reclaimed at the
 * next mount. Returns smr_cow_set_read_only()'s result.
 */
int smr_ns_remount(struct smr_ns *ns, const struct smr_ns_opts *o,
		   unsigned int commit_secs, bool ro);

/* A remount's cleaner options: smr_cow_set_gc(), whose result it returns.
 * Made before smr_ns_remount(), so that a refusal changes nothing. */
int smr_ns_set_gc(struct smr_ns *ns, int policy, unsigned int low,
		  unsigned int high);

/*
 * Describe the FS tree to the engine (smr_cow_tree_register): its name,
 * the item types it holds and how its keys print. smr_ns_open and
 * smr_ns_mkfs do it; a front-end that checks or salvages the engine
 * before opening the namespace calls it first. 0 or -EEXIST.
 */
int smr_ns_register_trees(struct smr_cow *cow);

/* The checksum of one data block of @bs bytes, as an extent item stores it
 * (docs/FORMAT.md): seeded by the inode, the block's file offset and the
 * extent's generation, so that only the file's own block at that offset
 * verifies. */
uint64_t smr_ns_block_csum(const void *blk, uint32_t bs, uint64_t ino,
			   uint64_t foff, uint64_t gen);

/* A data block that fails smr_ns_block_csum() against @want: 0 with the
 * one flipped bit that explains it put back (smr_hash_fix_bit), else
 * -SMR_EFSBADCRC with @blk as it was. Costs a hash of the block per bit. */
int smr_ns_block_fix_bit(void *blk, uint32_t bs, uint64_t ino, uint64_t foff,
			 uint64_t gen, uint64_t want);

/* The hash of the @len bytes of @name that keys its DIRENT and XATTR items
 * (docs/FORMAT.md, "Namespace items"); a DIRENT key is the hash with its low
 * bits replaced by the collision slot. */
uint64_t smr_ns_name_hash(const char *name, size_t len);

/*
 * Free the handle. Inodes still open or referenced that have no links stay
 * orphans and are reclaimed at the next open. Does not commit: the caller
 * closes the engine (which commits). NULL is allowed.
 */
void smr_ns_close(struct smr_ns *ns);

/* Commit everything (sync). Engine errors. */
int smr_ns_sync(struct smr_ns *ns);

/* ------------------------------------------------------------------------
 * Names. @name is NUL-terminated. Every call below that creates an entry
 * fills *@attr (if not NULL) with the new entry's attributes and returns:
 * -ENOENT parent missing or unlinked, -ENOTDIR parent not a directory,
 * -ENAMETOOLONG name longer than 255 bytes, -EINVAL an empty name or one
 * with '/', -EEXIST name taken (also "." and "..").
 * ------------------------------------------------------------------------ */

/* -ENOENT no such name, -ENOTDIR, -ENAMETOOLONG. "." and ".." work. */
int smr_ns_lookup(struct smr_ns *ns, uint64_t parent, const char *name,
		  struct smr_ns_attr *attr);

/* -ENOENT (-ESTALE never: a gone inode is -ENOENT). */
int smr_ns_getattr(struct smr_ns *ns, uint64_t ino, struct smr_ns_attr *attr);

/* Bits of smr_ns_setattr.valid. */
#define SMR_NS_SET_MODE (1u << 0)
#define SMR_NS_SET_UID (1u << 1)
#define SMR_NS_SET_GID (1u << 2)
#define SMR_NS_SET_SIZE (1u << 3)
#define SMR_NS_SET_ATIME (1u << 4)     /* to .atime */
#define SMR_NS_SET_MTIME (1u << 5)     /* to .mtime */
#define SMR_NS_SET_ATIME_NOW (1u << 6)
#define SMR_NS_SET_MTIME_NOW (1u << 7)
#define SMR_NS_SET_CTIME (1u << 8)     /* to .ctime */
/* The times come from the kernel, which keeps them itself (FUSE's
 * writeback cache) and has checked the call: set them whoever the caller
 * is. */
#define SMR_NS_SET_KEPT_TIMES (1u << 9)

struct smr_ns_setattr {
	unsigned int valid;
	uint32_t mode; /* permission bits (07777); the type is kept */
	uint32_t uid;
	uint32_t gid;
	uint64_t size;
	struct timespec atime, mtime, ctime;
};

/*
 * Change attributes, all or nothing, and fill *@attr. Rules: mode and
 * explicit times by the owner or root only (-EPERM); a non-root chmod of a
 * file whose group the caller is not in drops S_ISGID; uid by root only
 * (-EPERM; setting it to the current owner is allowed to the owner); gid by
 * root or by the owner to one of their groups (-EPERM); a chown of a
 * non-directory clears S_ISUID and (if group-executable) S_ISGID; times "now"
 * by the owner, root or a caller with write permission (-EACCES). Size:
 * -EISDIR on a directory, -EINVAL on other non-regular files, -EFBIG beyond
 * 2^63-1; truncating down frees the extents past the end and zeroes
 * the tail of the last block; a non-root truncate clears S_ISUID/S_ISGID.
 * ctime is set to now on every change (or to .ctime).
 */
int smr_ns_setattr(struct smr_ns *ns, const struct smr_ns_cred *cr,
		   uint64_t ino, const struct smr_ns_setattr *sa,
		   struct smr_ns_attr *attr);

/*
 * Make a regular file, FIFO, socket or device node (@mode holds the type;
 * -EINVAL for a directory, symlink or unknown type). The group comes from a
 * setgid parent, else from @cr; S_ISGID is dropped when a non-root caller is
 * not in the file's group.
 */
int smr_ns_mknod(struct smr_ns *ns, const struct smr_ns_cred *cr,
		 uint64_t parent, const char *name, uint32_t mode,
		 uint64_t rdev, struct smr_ns_attr *attr);
/* Directories inherit S_ISGID from a setgid parent. -EMLINK parent full. */
int smr_ns_mkdir(struct smr_ns *ns, const struct smr_ns_cred *cr,
		 uint64_t parent, const char *name, uint32_t mode,
		 struct smr_ns_attr *attr);
/* Target 1..4095 bytes: -ENOENT empty, -ENAMETOOLONG longer. */
int smr_ns_symlink(struct smr_ns *ns, const struct smr_ns_cred *cr,
		   uint64_t parent, const char *name, const char *target,
		   struct smr_ns_attr *attr);
/* mknod of a regular file and open in one call (counts one open). */
int smr_ns_create(struct smr_ns *ns, const struct smr_ns_cred *cr,
		  uint64_t parent, const char *name, uint32_t mode,
		  struct smr_ns_attr *attr);

/*
 * A regular file with no name (O_TMPFILE), opened (counts one open): an
 * orphan, freed at its last release, or at the next read-write open after
 * a crash, unless smr_ns_link() names it first. It changes no directory;
 * @parent gives it its group and inherited ACL as smr_ns_create() would.
 */
int smr_ns_tmpfile(struct smr_ns *ns, const struct smr_ns_cred *cr,
		   uint64_t parent, uint32_t mode, struct smr_ns_attr *attr);

/* Copy up to @size bytes of the target (no NUL) to @buf; returns the
 * target's length. -EINVAL not a symlink, -ENOENT. */
int smr_ns_readlink(struct smr_ns *ns, uint64_t ino, char *buf, size_t size);

/* -EISDIR a directory, -ENOENT, -EPERM sticky directory not ours. */
int smr_ns_unlink(struct smr_ns *ns, const struct smr_ns_cred *cr,
		  uint64_t parent, const char *name);
/* -ENOTDIR not a directory, -ENOTEMPTY, -EINVAL ".", -ENOTEMPTY "..",
 * -EBUSY the root, -EPERM sticky. */
int smr_ns_rmdir(struct smr_ns *ns, const struct smr_ns_cred *cr,
		 uint64_t parent, const char *name);

#define SMR_NS_RENAME_NOREPLACE (1u << 0) /* = RENAME_NOREPLACE */
#define SMR_NS_RENAME_EXCHANGE (1u << 1)  /* = RENAME_EXCHANGE */
#define SMR_NS_RENAME_WHITEOUT (1u << 2)  /* = RENAME_WHITEOUT */

/*
 * Rename: -ENOENT source (or, exchanging, target) missing; -EEXIST target
 * exists with NOREPLACE; -EINVAL unknown flags, EXCHANGE with another, or
 * a directory moved into its own subtree; -ENOTDIR directory over a
 * non-directory; -EISDIR non-directory over a directory; -ENOTEMPTY target
 * directory not empty; -EMLINK; -EPERM sticky. Renaming onto another link
 * of the same inode does nothing. WHITEOUT leaves at the old name, in the
 * same transaction, a whiteout: a character device 0:0 of mode 0 owned by
 * @cr (for overlay filesystems).
 */
int smr_ns_rename(struct smr_ns *ns, const struct smr_ns_cred *cr,
		  uint64_t parent, const char *name, uint64_t newparent,
		  const char *newname, unsigned int flags);

/* -EPERM @ino is a directory, -EMLINK too many links, -ENOENT @ino has no
 * links (unless smr_ns_tmpfile() made it and it was not named yet). */
int smr_ns_link(struct smr_ns *ns, uint64_t ino, uint64_t newparent,
		const char *newname, struct smr_ns_attr *attr);

/* Drop @nlookup kernel lookup references (see smr_ns_opts). */
void smr_ns_forget(struct smr_ns *ns, uint64_t ino, uint64_t nlookup);

/* ------------------------------------------------------------------------
 * Files
 * ------------------------------------------------------------------------ */

/* Count an open. -ENOENT, -EISDIR a directory opened for writing
 * (O_WRONLY/O_RDWR in @flags). @atime_fresh (or NULL) is set to whether a
 * read now would leave the atime as it is (smr_ns_opts.atime), so that
 * data cached from before may serve it. */
int smr_ns_open_file(struct smr_ns *ns, uint64_t ino, int flags,
		     bool *atime_fresh);
/* Drop an open; the last one of an unlinked inode frees it. */
void smr_ns_release(struct smr_ns *ns, uint64_t ino);

/*
 * Read up to @size bytes at @off; returns the bytes read (0 at or past the
 * end). Holes read as zeros. Every block is checked against its checksum: a
 * mismatch is -EIO (logged with the inode and offset). -EISDIR, -EINVAL not
 * a regular file or a negative offset.
 */
ssize_t smr_ns_read(struct smr_ns *ns, uint64_t ino, uint64_t off,
		    size_t size, void *buf);
/*
 * Write @size bytes at @off to new space; returns @size. Extends the size,
 * sets mtime and ctime, and clears S_ISUID (and S_ISGID when group-executable)
 * if the caller is not root. -EFBIG past 2^63-1, -EISDIR, -EINVAL.
 */
ssize_t smr_ns_write(struct smr_ns *ns, const struct smr_ns_cred *cr,
		     uint64_t ino, uint64_t off, const void *buf, size_t size);
/*
 * The answer to a write: the bytes written, or a negative errno. @arg is
 * smr_ns_write_ack()'s.
 */
typedef void (*smr_ns_ack_fn)(void *arg, ssize_t result);
/*
 * smr_ns_write() that answers through @ack, called exactly once and before
 * this returns. A write is answered early; every later call of the
 * namespace (fsync too) sees the write, since it is mapped before the
 * namespace lock is let go:
 *  - as soon as the space for its data is held, when it is one piece, the
 *    only write being answered, and the device takes it without waiting
 *    (smr_cow_data_write_quick); a write inside blocks, once the blocks it
 *    changes are read. Should its data then fail to go out (a device
 *    error), the write is not made and the next smr_ns_fsync() or
 *    smr_ns_flush() of the inode returns the error, as after a failed
 *    writeback of a kernel filesystem;
 *  - else, for a write of whole blocks, as soon as its data is on the
 *    device and nothing but mapping it in memory is left;
 *  - else once it is made.
 * Should the mapping fail after either (no memory, a metadata read error),
 * the filesystem turns read-only and later fsyncs fail.
 * With @whole, the answer is never a short count: a write that could not
 * all be made (out of space part way) is answered with the error. The
 * kernel's writeback of cached pages takes any count as all written.
 */
void smr_ns_write_ack(struct smr_ns *ns, const struct smr_ns_cred *cr,
		      uint64_t ino, uint64_t off, const void *buf, size_t size,
		      bool whole, smr_ns_ack_fn ack, void *arg);
/* Make the file (and everything else) durable: a commit. But if a write
 * to the inode answered before its data went out failed (see
 * smr_ns_write_ack), return that error instead, once. */
int smr_ns_fsync(struct smr_ns *ns, uint64_t ino, bool datasync);
/* A file of the inode is closed: the error of a write to it answered
 * before it failed, once, or 0. Durability is fsync's. */
int smr_ns_flush(struct smr_ns *ns, uint64_t ino);

#define SMR_NS_FALLOC_KEEP_SIZE 0x01  /* = FALLOC_FL_KEEP_SIZE */
#define SMR_NS_FALLOC_PUNCH_HOLE 0x02 /* = FALLOC_FL_PUNCH_HOLE */
#define SMR_NS_FALLOC_ZERO_RANGE 0x10 /* = FALLOC_FL_ZERO_RANGE */

/*
 * PUNCH_HOLE|KEEP_SIZE drops the extents inside the range and zeroes the
 * partial blocks at its ends. ZERO_RANGE does the same and then, without
 * KEEP_SIZE, extends the size to the end of the range; unlike ext4 it
 * reserves no space for later writes into the range (see below). Mode 0
 * and KEEP_SIZE would have to reserve space for later copy-on-write
 * writes, which smrfs cannot promise: -EOPNOTSUPP, as for every other mode
 * (PUNCH_HOLE without KEEP_SIZE too). -ENOSPC no space to rewrite a
 * partial block (nothing changed), -EINVAL len 0 or a negative range,
 * -ENODEV not a regular file, -EISDIR a directory, -EFBIG past 2^63-1.
 */
int smr_ns_fallocate(struct smr_ns *ns, uint64_t ino, int mode, uint64_t off,
		     uint64_t len);

/* SEEK_DATA / SEEK_HOLE (other whences -EINVAL); -ENXIO at or past the end
 * or no data after @off. */
int smr_ns_lseek(struct smr_ns *ns, uint64_t ino, uint64_t off, int whence,
		 uint64_t *result);

/* ------------------------------------------------------------------------
 * Directories
 * ------------------------------------------------------------------------ */

/* -ENOTDIR, -ENOENT. */
int smr_ns_opendir(struct smr_ns *ns, uint64_t ino);

/*
 * Called for each entry: @next is the cookie that continues after it.
 * Return 0 to go on, 1 to stop (buffer full; the entry was NOT taken and
 * comes again next time), or a negative errno.
 */
typedef int (*smr_ns_filldir_fn)(void *arg, const char *name, size_t namelen,
				 uint64_t ino, uint32_t dtype, uint64_t next);
/*
 * List the entries of @ino after @cookie (0 = from the start: ".", "..",
 * then the entries in creation order). A cookie stays valid while the
 * directory changes: entries neither added nor removed meanwhile are listed
 * exactly once. -ENOTDIR, -ENOENT.
 */
int smr_ns_readdir(struct smr_ns *ns, uint64_t ino, uint64_t cookie,
		   smr_ns_filldir_fn fill, void *arg);

/* As smr_ns_filldir_fn, with the entry's attributes: NULL for "." and
 * "..", and for an entry that names no inode. */
typedef int (*smr_ns_filldir_plus_fn)(void *arg, const char *name,
				      size_t namelen, uint64_t ino,
				      uint32_t dtype,
				      const struct smr_ns_attr *attr,
				      uint64_t next);
/*
 * smr_ns_readdir() with each entry's attributes (FUSE's READDIRPLUS): every
 * entry with attributes that @fill takes counts one kernel lookup, as
 * smr_ns_lookup() does, so the kernel forgets it like any other.
 */
int smr_ns_readdir_plus(struct smr_ns *ns, uint64_t ino, uint64_t cookie,
			smr_ns_filldir_plus_fn fill, void *arg);

struct smr_ns_statfs {
	uint32_t bsize;
	uint64_t blocks; /* capacity the allocator manages, in bsize */
	uint64_t bfree;  /* free + reclaimable (comes back by commit/cleaning) */
	uint64_t bavail; /* what a writer can get: the same as bfree */
	uint64_t files;  /* inodes in use + ffree */
	uint64_t ffree;  /* an estimate: one inode per free block */
	uint32_t namemax;
};
/* Space and inodes as statfs reports them (from smr_cow_space). Always 0. */
int smr_ns_statfs(struct smr_ns *ns, struct smr_ns_statfs *st);

/* ------------------------------------------------------------------------
 * Extended attributes: "user.", "trusted." and "security." names, and
 * the two of POSIX ACLs where kept (smr_ns_set_acl; -EOPNOTSUPP others);
 * names 1..255 bytes (-ERANGE otherwise), values up to 64 KiB (-E2BIG).
 * trusted.* is root's only (-EPERM to set, hidden from others); user.*
 * only on regular files and directories (-EPERM). An ACL is set only by
 * the owner or root (-EPERM), none on a symlink (-EOPNOTSUPP), a default
 * one only on a directory (-EACCES), and must be valid (-EINVAL); an
 * access ACL sets the mode's permission bits.
 * ------------------------------------------------------------------------ */

#define SMR_NS_XATTR_CREATE 0x1  /* = XATTR_CREATE: -EEXIST if present */
#define SMR_NS_XATTR_REPLACE 0x2 /* = XATTR_REPLACE: -ENODATA if absent */

int smr_ns_setxattr(struct smr_ns *ns, const struct smr_ns_cred *cr,
		    uint64_t ino, const char *name, const void *value,
		    size_t size, int flags);
/* Returns the value's length; @size 0 asks only that; -ERANGE @size too
 * small, -ENODATA absent. */
ssize_t smr_ns_getxattr(struct smr_ns *ns, const struct smr_ns_cred *cr,
			uint64_t ino, const char *name, void *value,
			size_t size);
/* NUL-separated names; returns the list's length; @size 0 asks only that;
 * -ERANGE too small. */
ssize_t smr_ns_listxattr(struct smr_ns *ns, const struct smr_ns_cred *cr,
			 uint64_t ino, char *list, size_t size);
/* -ENODATA absent. */
int smr_ns_removexattr(struct smr_ns *ns, const struct smr_ns_cred *cr,
		       uint64_t ino, const char *name);

/* ------------------------------------------------------------------------
 * Audit
 * ------------------------------------------------------------------------ */

/*
 * Check the namespace's invariants over the whole tree: every name leads to
 * an inode of its type and the two items of each entry agree; link counts
 * equal the names (directories: 2 + subdirectories; parents agree); only
 * orphans have no links; extents are well formed, do not overlap in a file
 * or on the device, stay within the size and add up to the inode's bytes;
 * symlink parts add up to the size; the counters hold. Each problem is
 * logged (the first 100) with whether fsck.smrfs -y repairs it;
 * *@nr_problems (if not NULL) gets their number.
 * Returns 0, -SMR_EFSCORRUPTED if any was found, -ENOMEM, engine errors.
 * Holds the namespace lock throughout; memory grows with inodes, entries
 * and extents (tens of bytes each).
 */
int smr_ns_check(struct smr_ns *ns, uint64_t *nr_problems);

/*
 * fsck.smrfs -y: bring every stored POSIX ACL to what smr_ns_check()
 * wants of it, each in a transaction of its own: one on a node that can
 * have none, or that does not parse, goes; an access ACL out of step with
 * the mode is set from the mode, as a chmod would (and goes if it then
 * says no more than the mode). Adds the ACLs changed to *@fixed.
 */
int smr_ns_repair_acls(struct smr_ns *ns, uint64_t *fixed);

/*
 * Call @fn for every data extent the namespace references, in key order
 * (inode, then file offset), with the device range it maps; for fsck's
 * space audit. @fn runs under the engine's shared lock and must not call
 * the namespace or change the trees; it returns 0 to go on, 1 to stop, or
 * a negative errno that is returned. Returns 0, -SMR_EFSCORRUPTED, engine
 * errors.
 */
typedef int (*smr_ns_extent_fn)(void *arg, uint64_t ino, uint64_t file_off,
				uint64_t dev_off, uint64_t len);
int smr_ns_for_each_extent(struct smr_ns *ns, smr_ns_extent_fn fn, void *arg);

/* What smr_ns_check_rmap() found and did. */
struct smr_ns_rmap_check {
	uint64_t problems; /* each logged (the first 100) */
	uint64_t fixed;    /* of them, repaired by rebuilding the map */
	uint64_t entries;  /* entries of the map */
	uint64_t released; /* of them, of data in flight at the checkpoint,
			    * dropped by the next read-write open: expected
			    * after a crash, not problems */
};

/*
 * fsck: check the engine's reverse map of data extents against the extent
 * items, which are the truth: every entry names the extent item (inode,
 * file offset) that references its bytes, and every referenced byte has
 * exactly one entry. Reported: entries over bytes nothing references
 * (stale), entries naming another owner than the item that references
 * their bytes, entries that overlap, items that do not decode, and
 * referenced bytes without an entry (which the cleaner can never move,
 * so their zone is never reclaimed). With @repair, problems are counted
 * but not logged (a check before logged them) and, if there is any, the
 * map is rebuilt from the extent items, one entry per item, in a
 * transaction of its own (the caller commits). Holds the namespace lock.
 * Fills *@r; returns 0 (problems or not), -EOPNOTSUPP (an engine without
 * a reverse map), -ENOMEM, engine errors.
 */
int smr_ns_check_rmap(struct smr_ns *ns, bool repair,
		      struct smr_ns_rmap_check *r);

/* ------------------------------------------------------------------------
 * Figures (smrfsctl stat and zones, through the daemon): the engine's
 * structs of cow/cow.h, passed up unchanged.
 * ------------------------------------------------------------------------ */

struct smr_cow_fsstat;
struct smr_cow_zstat;

/* Fill *@st (smr_cow_fsstat) and *@nr_inodes (inodes in use, if not
 * NULL). Always 0. */
int smr_ns_fsstat(struct smr_ns *ns, struct smr_cow_fsstat *st,
		  uint64_t *nr_inodes);

/* Up to @n zones from @first (smr_cow_zstat): the number filled,
 * -EINVAL @first past the last zone, -EOPNOTSUPP not zoned. */
int smr_ns_zstat(struct smr_ns *ns, uint32_t first, uint32_t n,
		 struct smr_cow_zstat *out);

#endif /* SMR_NAMESPACE_NS_H */
