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

#endif /* SMR_DEV_DEV_INT_H */
