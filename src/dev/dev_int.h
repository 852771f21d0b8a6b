/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dev_int.h - what dev.c shares with its own I/O engine (dev_io.c). Not for
 * backends: they see only dev_priv.h.
 */
#ifndef SMR_DEV_DEV_INT_H
#define SMR_DEV_DEV_INT_H

#include "dev/dev_priv.h"
#include "dev/zcache.h"

/*
 * Check an I/O request against the geometry: block aligned, within the
 * capacity (the buffer may have any alignment: see dev_needs_bounce() in
 * dev.c). Returns 0, -EINVAL, or -EROFS for a write on a read-only handle.
 */
int smr_dev_io_check(const struct smr_dev *dev, enum smr_io_op op,
		     size_t len, uint64_t off);

/* Whether [off, off+len) must go through the sequential-zone write gate
 * (zoned device, a sequential zone); sets *zno. A range that touches a
 * sequential zone but does not lie within it gets -EIO. */
int smr_dev_write_zone(const struct smr_dev *dev, size_t len, uint64_t off,
		       uint32_t *zno, bool *seq);

/*
 * The write gate of sequential zone @zno. begin: checks the zone rules, opens
 * the zone and marks it busy (@wait: sleep while another writer holds it;
 * without @wait return SMR_ZC_BUSY_RETRY instead). end: updates the cache
 * (on failure: undo, then take the medium's write pointer) and wakes waiters.
 */
int smr_dev_write_begin(struct smr_dev *dev, uint32_t zno, uint64_t off,
			uint64_t len, bool wait, struct smr_zc_undo *undo);
void smr_dev_write_end(struct smr_dev *dev, uint32_t zno, uint64_t len,
		       bool ok, const struct smr_zc_undo *undo);

/* The part of [off, off+len) (within one zone) that is below the write
 * pointer: bytes that must be read from the medium; the rest reads as
 * zeros. */
size_t smr_dev_readable(const struct smr_dev *dev, size_t len, uint64_t off);

/* End of the zone holding @off (the capacity when not zoned). */
uint64_t smr_dev_zone_end_of(const struct smr_dev *dev, uint64_t off);

/* Run the batch with io_uring (dev_io.c). -EOPNOTSUPP if the backend has no
 * io_target or a ring cannot be set up: the caller then runs it
 * synchronously. */
int smr_dev_submit_uring(struct smr_dev *dev, struct smr_io *ios,
			 unsigned int n);

/* Free the rings of @dev (dev_io.c). */
void smr_dev_uring_free(struct smr_dev *dev);

/* ------------------------------------------------------------------------
 * Write-behind (dev_wb.c). Each of these is a no-op or false when dev->wb
 * is NULL.
 * ------------------------------------------------------------------------ */

/* Start write-behind with a cap of @max_bytes, or change the cap. */
int smr_dev_wb_start(struct smr_dev *dev, size_t max_bytes);
/* Wait for everything queued, stop the engine. Returns the sticky error. */
int smr_dev_wb_stop(struct smr_dev *dev);

/* Queue a write of [off, off+len) into sequential zone @zno (checked and
 * accounted in the zone cache now): 0, or a negative errno as
 * smr_dev_write(), or the error of an earlier queued write. */
int smr_dev_wb_write(struct smr_dev *dev, uint32_t zno, const void *buf,
		     size_t len, uint64_t off);

/* Change when a zone's queue goes out (dev.h, SMR_DEV_WB_GATHER_*): for
 * the tests, which need times that do not depend on the machine's load. */
void smr_dev_wb_gather(struct smr_dev *dev, size_t bytes, uint64_t ms);

/* Would a queued write of @len bytes go in without waiting for room? */
bool smr_dev_wb_room(struct smr_dev *dev, size_t len);

/* Wait until [off, off+len) (within one zone) is on the medium. */
void smr_dev_wb_wait_read(struct smr_dev *dev, uint64_t off, size_t len);

/* Wait for every write queued before the call; the sticky error or 0. */
int smr_dev_wb_drain(struct smr_dev *dev);

/* With zlock held, before waiting on zcond for a busy zone: the writes
 * queued so far go out now instead of gathering more. */
void smr_dev_wb_hurry(struct smr_dev *dev);

/*
 * With zlock held: whether opening zone @zno now (a write into it, or an
 * explicit open) must wait, because zones that the cache counts as full
 * still have writes queued and the medium still counts them open.
 */
bool smr_dev_wb_open_blocked(const struct smr_dev *dev, uint32_t zno,
			     bool explicit_open);

#endif /* SMR_DEV_DEV_INT_H */
