/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fsck.h - the checker behind fsck.smrfs, callable from tests.
 *
 * smr_fsck_run() checks a filesystem through the same library, codecs and
 * verifiers as the daemon, in three passes:
 *
 *   1. superblock copies and checkpoint records as they lie on the device
 *      (smr_cow_check_super);
 *   2. the engine opened read-only on the newest valid checkpoint: the
 *      trees' structure (smr_cow_check), the namespace (smr_ns_check plus
 *      fsck's own walk, which finds what a repair can do), the cleaner's
 *      reverse map against the extent items (smr_ns_check_rmap), the data
 *      extents' checksums with scrub, and the space audit (every referenced
 *      block once, the allocator agreeing: smr_cow_check_space);
 *   3. with repair, and only if every problem found is one fsck knows how
 *      to fix safely, the fixes in one transaction through the normal
 *      commit, and then pass 1 and 2 again, quietly, to decide the result.
 *
 * Exit codes are those of fsck(8).
 */
#ifndef SMR_FSCK_FSCK_H
#define SMR_FSCK_FSCK_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

struct smr_dev;

#define SMR_FSCK_OK 0          /* no errors */
#define SMR_FSCK_FIXED 1       /* errors corrected */
#define SMR_FSCK_REBOOT 2      /* corrected, reboot suggested (unused) */
#define SMR_FSCK_UNCORRECTED 4 /* errors left uncorrected */
#define SMR_FSCK_OPERROR 8     /* operational error */
#define SMR_FSCK_USAGE 16      /* usage or syntax error */
#define SMR_FSCK_CANCELED 32   /* cancelled by the user */

/* Zeroed = check only. */
struct smr_fsck_opts {
	const char *device;
	/* An open device to use instead of opening @device (tests: a fault
	 * device); it stays the caller's. @device still names it in messages. */
	struct smr_dev *dev;
	bool repair;  /* -y / -p: fix what is safe */
	bool scrub;   /* read every data block and verify its checksum */
	/*
	 * Progress of the check, for a progress bar; NULL = none. Called at
	 * the start and end of each phase and as the namespace walk goes
	 * (often: the callee limits its own rate). @phase is one of
	 * SMR_FSCK_NR_PHASES, numbered from 1 as fsck(8)'s passes, named by
	 * @name; @done of @total items (total 0: not known), or MiB under
	 * the name SMR_FSCK_SCAN (a rebuild's scan of all the written space,
	 * in the phase that needs it).
	 */
	void (*progress)(void *arg, unsigned int phase, const char *name,
			 uint64_t done, uint64_t total);
	void *progress_arg;
	/*
	 * Set (by a signal handler, or the progress callback) to stop: the
	 * check stops at the next phase or item, and a repair before its
	 * next commit, dropping what it has not committed; the result is
	 * SMR_FSCK_CANCELED. NULL = never.
	 */
	const volatile sig_atomic_t *cancel;
	/*
	 * Another filesystem's signature on the regular file or block device
	 * at @path (fsck.smrfs: libblkid): 1 and its name in @what, 0 for
	 * none, negative on error. Where neither superblock copy verifies, one
	 * is rebuilt only if this finds none (mkfs of another filesystem may
	 * leave an old smrfs's checkpoints behind). NULL = not looked for.
	 */
	int (*probe_other)(const char *path, char *what, size_t len);
	/*
	 * The filesystem's UUID, for a superblock rebuilt where no copy and no
	 * checkpoint record verify (16 bytes); NULL: the UUID of the B-tree
	 * nodes on the device, if they are of one filesystem
	 * (smr_cow_find_uuid). Unused where the UUID is known.
	 */
	const uint8_t *uuid;
};

/* The progress of a scan of all the written space for B-tree nodes. */
#define SMR_FSCK_SCAN "looking for B-tree nodes"

/* Phases of a check: superblocks and checkpoints, B-trees, namespace,
 * namespace walk (and scrub), space audit. A repair runs them again. */
#define SMR_FSCK_NR_PHASES 5

struct smr_fsck_result {
	int exit_code;
	uint64_t problems;  /* found by the check (the first pass) */
	uint64_t fixed;     /* repairs made */
	uint64_t remaining; /* problems found by the check after repairs */
	uint64_t orphans;   /* open-unlinked inodes (not errors) */
	/* What was checked. */
	uint64_t gen;       /* generation of the checkpoint in use */
	uint64_t ckpt_valid, ckpt_bad, sb_bad;
	uint64_t nodes, inodes, entries, extents, zones;
	uint64_t bad_nodes; /* B-tree problems: nodes that fail verification
			     * or break a rule (each with its subtree left
			     * out of the other checks) */
	uint64_t underfull_nodes; /* non-root nodes under a quarter full: no
				   * problem (splits leave them), a figure */
	uint64_t data_bytes, scrubbed_bytes, bad_data_blocks;
	uint64_t bytes_referenced, leaked;
	uint64_t rmap_entries;  /* entries of the cleaner's reverse map */
	uint64_t rmap_problems; /* of the problems, the reverse map's */
	char alloc[16];
};

/*
 * Check (and with o->repair, repair) the filesystem on o->device. Problems
 * and repairs are logged through smr_log as they are found. Fills *@r and
 * returns r->exit_code: SMR_FSCK_OK, SMR_FSCK_FIXED, SMR_FSCK_UNCORRECTED,
 * SMR_FSCK_CANCELED (o->cancel was set), or SMR_FSCK_OPERROR (the device cannot be opened, is in use -- logged as
 * "DEVICE is in use (mounted?)" --, is not smrfs, or an I/O or memory
 * error stopped the check).
 */
int smr_fsck_run(const struct smr_fsck_opts *o, struct smr_fsck_result *r);

#endif /* SMR_FSCK_FSCK_H */
