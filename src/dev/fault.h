/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fault.h - the fault device: a stacking backend for crash and error tests,
 * in the spirit of dm-log-writes and dm-flakey.
 *
 * smr_fault_open() puts a fault device on top of any open device (the
 * "lower" device) and returns an ordinary struct smr_dev that every layer
 * above can use. Everything done through it goes to the lower device, and:
 *
 *  - Recording. Every write that reaches the lower device (with a copy of
 *    its data), every flush, discard and zone reset/finish/open/close is
 *    appended to an in-memory log, in the order the lower device saw them.
 *    Reads are not recorded. Recording is on from the open; it can be paused
 *    (smr_fault_set_recording()) and the log emptied (smr_fault_log_reset()),
 *    e.g. to start recording after mkfs.
 *
 *  - Faults. A rule armed with smr_fault_arm() makes the device fail writes,
 *    drop them (acknowledge but never persist: a power cut), tear one (persist
 *    its first k blocks, then cut the power), fail reads, or fail zone resets,
 *    after the first N operations of that kind have passed.
 *
 *  - Replay. smr_fault_replay() rebuilds on another device (a fresh device of
 *    the same geometry, in the state the lower device had when recording
 *    started) the state after any prefix of the log, as a crash at that point
 *    could have left it: with the writes not followed by a flush kept, dropped,
 *    dropped at random whole (on zoned devices only ever a suffix of each
 *    zone's writes, so that no hole is left before a write pointer), or lost
 *    block by block as a volatile write cache loses them, and optionally
 *    with the last write torn at a block boundary.
 *
 * The power cut. Once a DROP_WRITES or TEAR_WRITE rule fires, the device is
 * "cut": every later write, flush, discard and zone operation is acknowledged
 * but does not reach the lower device and is not recorded. Reads still see
 * what was acknowledged (the lost data is kept in memory, like a volatile
 * write cache), so the layers above carry on consistently until the test
 * closes the fault device. The lower device then holds exactly what a power
 * cut would have left: reopen it (or stack a new fault device on it) to run
 * recovery. The cut lasts until the fault device is closed; other rules do
 * not fire while it is cut.
 *
 * Block size: the device's logical block size (info->block_size) is the unit
 * a write is torn at, the atomic unit of the media.
 *
 * Thread safety: the fault device serialises every operation on it with one
 * lock (held across the call to the lower device, so that the log order is
 * the order the lower device executed). The smr_fault_* functions may be
 * called from any thread.
 */
#ifndef SMR_DEV_FAULT_H
#define SMR_DEV_FAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dev/dev.h"

struct smr_fault;

/*
 * Stack a fault device on @lower. Returns 0 with the control handle in *@fp
 * and the device in *@devp, or -ENOMEM, or -EINVAL if @lower is NULL.
 *
 * *@devp is a normal device (info->backend "fault", the geometry, kind and
 * zones of @lower); closing it with smr_dev_close() flushes it but does not
 * close @lower. @lower must stay open while the fault device is. Use only the
 * fault device, not @lower directly, while it is open: the two keep separate
 * zone caches. The control handle and its log stay valid after both are
 * closed, until smr_fault_free(): a log can be replayed onto a device opened
 * later, @lower itself included once it is back in the starting state.
 */
int smr_fault_open(struct smr_dev *lower, struct smr_fault **fp,
		   struct smr_dev **devp);
/*
 * A scratch view of @lower, for a dry run (mkfs -n) that goes through the
 * real code: as smr_fault_open(), but the power is cut from the start, so
 * that nothing at all reaches @lower while reads see what was written
 * through the view; nothing is recorded; and the view is writable even when
 * @lower was opened read-only (as it should be). What is written is kept in
 * memory until the view and *@fp are gone.
 */
int smr_fault_open_scratch(struct smr_dev *lower, struct smr_fault **fp,
			   struct smr_dev **devp);

/* Release the control handle and its log. The device may be closed before or
 * after; the memory goes when both are gone. NULL is allowed. */
void smr_fault_free(struct smr_fault *f);

/* ------------------------------------------------------------------------
 * Faults
 * ------------------------------------------------------------------------ */
enum smr_fault_what {
	SMR_FAULT_NONE = 0,
	/* Writes after the first @after fail with @error (the data does not
	 * reach the lower device). Flushes and zone operations still work. */
	SMR_FAULT_FAIL_WRITES = 1,
	/* Power cut at write @after + 1: that write and everything after it
	 * is acknowledged but never persisted (see "The power cut"). */
	SMR_FAULT_DROP_WRITES = 2,
	/* Power cut during write @after + 1: only its first @tear_bytes
	 * (rounded down to the block size; 0 = none of it) reach the lower
	 * device, the write is acknowledged, then as DROP_WRITES. */
	SMR_FAULT_TEAR_WRITE = 3,
	/* Reads after the first @after fail with @error. */
	SMR_FAULT_FAIL_READS = 4,
	/* Zone resets after the first @after fail with @error (the zone is
	 * left as it was). */
	SMR_FAULT_FAIL_RESETS = 5,
	/* Flushes after the first @after fail with @error. The writes before
	 * them still reach the lower device (a failed flush says nothing
	 * about what is durable). */
	SMR_FAULT_FAIL_FLUSHES = 6,
};

/* Operations are counted as the fault device receives them: a read or write
 * that spans several zones counts once per zone. */
struct smr_fault_rule {
	enum smr_fault_what what;
	uint64_t after;      /* operations of that kind that still pass */
	uint64_t tear_bytes; /* TEAR_WRITE: bytes of the torn write kept */
	int error;           /* FAIL_*: negative errno returned; 0 = -EIO */
};

/*
 * Arm @r. There is one slot per kind of operation: a write rule (FAIL_WRITES,
 * DROP_WRITES or TEAR_WRITE), a read rule, a reset rule and a flush rule; arming replaces
 * the rule in its slot and restarts its count from 0 (operations before the
 * call do not count). Returns 0, or -EINVAL for an unknown @r->what, for
 * SMR_FAULT_NONE, or for an @error that is not negative.
 */
int smr_fault_arm(struct smr_fault *f, const struct smr_fault_rule *r);

/* Clear every rule. A power cut that already happened stays in effect. */
void smr_fault_disarm(struct smr_fault *f);

/* True once a DROP_WRITES or TEAR_WRITE rule has fired. */
bool smr_fault_is_cut(struct smr_fault *f);

/* What the fault device has seen since it was opened. */
struct smr_fault_stats {
	uint64_t writes;  /* write calls (each within one zone) */
	uint64_t reads;
	uint64_t flushes;
	uint64_t resets;  /* zone resets */
	uint64_t failed;  /* operations failed by a rule */
	uint64_t dropped; /* writes and zone operations lost to a power cut */
	uint64_t torn;    /* writes torn (0 or 1) */
};

void smr_fault_stats(struct smr_fault *f, struct smr_fault_stats *st);

/* ------------------------------------------------------------------------
 * The log
 * ------------------------------------------------------------------------ */
enum smr_fault_op {
	SMR_FOP_WRITE = 1,
	SMR_FOP_FLUSH = 2,
	SMR_FOP_DISCARD = 3,
	SMR_FOP_ZONE_RESET = 4,
	SMR_FOP_ZONE_FINISH = 5,
	SMR_FOP_ZONE_OPEN = 6,
	SMR_FOP_ZONE_CLOSE = 7,
};

const char *smr_fault_op_str(enum smr_fault_op op);

/* One record of the log. */
struct smr_fault_rec {
	enum smr_fault_op op;
	uint64_t off;     /* WRITE, DISCARD: byte offset; zone ops: zone start */
	uint64_t len;     /* WRITE, DISCARD: bytes (of a torn write: the bytes
			   * that reached the device); zone ops: zone size */
	uint32_t zno;     /* zone of off, UINT32_MAX on an unzoned device and
			   * for FLUSH */
	bool seq;         /* the zone is sequential */
	bool flushed;     /* a FLUSH follows this record in the log */
	bool torn;        /* WRITE: only a part of it reached the device */
	const void *data; /* WRITE: the data written, valid until the log is
			   * reset or freed; NULL otherwise */
};

/* Pause (false) or resume (true) recording. Faults work either way. */
void smr_fault_set_recording(struct smr_fault *f, bool on);

/* Empty the log. A replay target must then be in the state the lower device
 * is in now. */
void smr_fault_log_reset(struct smr_fault *f);

uint64_t smr_fault_nr_records(struct smr_fault *f);

/* Fill *@r with record @i: 0, or -ERANGE when @i >= the number of records. */
int smr_fault_record(struct smr_fault *f, uint64_t i, struct smr_fault_rec *r);

/*
 * The prefix of the log that a power cut at write @n + 1 leaves: the records
 * before the (@n + 1)-th WRITE record (0-based: the first @n writes and the
 * flushes and zone operations that came before write @n + 1), or the whole
 * log when it holds only @n writes. This is what the lower device holds after
 * a DROP_WRITES rule with .after = @n, so that "cut after every write" can be
 * run by replaying smr_fault_cut_prefix(f, n) records for each n.
 * Returns 0 with the number of records in *@nr, or -ERANGE when the log holds
 * fewer than @n writes.
 */
int smr_fault_cut_prefix(struct smr_fault *f, uint64_t n, uint64_t *nr);

/* Bytes of memory the log holds (records and data copies). */
size_t smr_fault_log_bytes(struct smr_fault *f);

/* ------------------------------------------------------------------------
 * Replay
 * ------------------------------------------------------------------------ */

/*
 * Flags of a replay. Writes after the last FLUSH of the prefix are
 * "unflushed"; by default all of them are replayed (the device wrote back its
 * cache before the cut).
 */

/* Drop every unflushed write. */
#define SMR_REPLAY_DROP_UNFLUSHED (1U << 0)
/* Drop a pseudo-random subset of the unflushed writes (seeded by opts->seed);
 * in a sequential zone always a suffix of its unflushed writes. */
#define SMR_REPLAY_DROP_RANDOM (1U << 1)
/* The prefix's last record is a write: replay only its first opts->tear_bytes
 * (rounded down to the block size). */
#define SMR_REPLAY_TEAR_LAST (1U << 2)
/* One write per record, and each flush where it was. By default contiguous
 * writes are merged and one flush ends the replay, which is faster. */
#define SMR_REPLAY_EXACT (1U << 3)
/*
 * A volatile write cache lost at the cut, block by block: each block (of the
 * device's block size) of the unflushed writes is kept or lost on its own,
 * chosen from opts->seed, a multi-block write included. In a sequential zone
 * only a prefix of the zone's unflushed blocks survives (a write pointer
 * leaves no hole); on a conventional zone or an unzoned device any subset
 * does, later blocks kept while earlier ones are lost. Bit j of the seed
 * says whether the j-th sequential zone written after the last flush loses
 * a part (set) or keeps all (clear), so that seeds 0 to 2^j - 1 go through
 * every combination of the first j zones. Excludes
 * DROP_UNFLUSHED and DROP_RANDOM; with TEAR_LAST the last write is torn
 * first.
 */
#define SMR_REPLAY_LOSE_BLOCKS (1U << 4)

/* Zeroed (or NULL) = replay the prefix exactly. */
struct smr_replay_opts {
	unsigned int flags;  /* SMR_REPLAY_* */
	uint64_t tear_bytes; /* SMR_REPLAY_TEAR_LAST */
	uint64_t seed;       /* SMR_REPLAY_DROP_RANDOM, SMR_REPLAY_LOSE_BLOCKS;
			      * the same seed gives the same choice */
};

/*
 * Apply the first @nr records of the log to @target, which must have the
 * geometry of the lower device (block size, capacity, zones) and be in the
 * state the lower device had when recording started. Zone operations are
 * always replayed (a zone reset is durable at once); a zone close of a zone
 * that dropped writes left empty is skipped. Writes are replayed through
 * smr_dev_write(), so a zoned target checks that none is out of order.
 * Unless SMR_REPLAY_EXACT, the target is flushed once at the end (if the
 * prefix holds a flush) and sees contiguous writes merged: use EXACT to
 * replay onto a fault device that counts writes.
 *
 * With DROP_RANDOM or LOSE_BLOCKS, a zone left partly written by a dropped write stays
 * active where the recorded device had filled it, so on a target with a
 * max_active limit a later kept write can fail with -EIO: try another seed.
 *
 * Returns 0, or: -ENOMEM; -EINVAL for @nr beyond the log, a geometry mismatch,
 * TEAR_LAST when record @nr - 1 is not a write, TEAR_LAST together with
 * DROP_UNFLUSHED (the last write is always unflushed, so it would be dropped),
 * or LOSE_BLOCKS together with DROP_UNFLUSHED or DROP_RANDOM;
 * or the first error of @target (the replay stops there).
 */
int smr_fault_replay(struct smr_fault *f, uint64_t nr,
		     const struct smr_replay_opts *opts,
		     struct smr_dev *target);

#endif /* SMR_DEV_FAULT_H */
