/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dev_priv.h - the private interface between the device handle (dev.c) and
 * its backends (dev_zloop.c, dev_file.c, dev_zbd.c, dev_fault.c). Nothing
 * outside src/dev/ includes this file.
 *
 * Division of labour
 * ------------------
 * dev.c owns the handle, the zone cache and the zone rules. For every zoned
 * backend it checks, *before* calling the backend:
 *   - alignment and bounds (-EINVAL);
 *   - a write into a sequential zone starts at the cached write pointer, stays
 *     within the zone capacity, and the zone is not full (-EIO);
 *   - open/active limits: a write into an empty or closed zone opens it
 *     implicitly; beyond max_open the least recently used implicitly open
 *     zone is closed first; beyond max_active the write fails (-EIO);
 *   - one write in flight per sequential zone (others wait for it);
 *   - zone management preconditions (conventional zone: -EINVAL; opening a
 *     full zone, closing an empty one: -EIO; resetting an empty zone and
 *     finishing a full one are no-ops that do not reach the backend).
 * It updates the cache only after the backend succeeded. Reads of a
 * sequential zone are clipped at the write pointer by dev.c, which zero-fills
 * the rest: a backend is never asked to read past a write pointer.
 *
 * Backends do the raw operation and nothing else: no zone state, no checks
 * beyond what the medium itself refuses. A backend whose medium enforces the
 * rules too (zbd: the kernel) may fail with its own error; dev.c passes it up.
 * When a raw write or zone operation fails, the backend should leave the zone
 * as it was if it can (zloop truncates a partial write away); dev.c then
 * re-reads that zone with report_zones() and takes the write pointer it
 * reports, so that the cache never claims data the medium does not hold.
 *
 * With opts->unchecked (tests of the zbd backend that want to see the kernel's
 * own errors) dev.c skips the write pointer, capacity and limit checks and
 * sends the write to the backend; on success it still updates the cache.
 *
 * Locking
 * -------
 * dev->zlock protects every zone cache update and the open-zone LRU. Queries
 * read the per-zone state word with atomic loads and take no lock. Backend
 * ops are called without dev->zlock held, except that dev.c guarantees that
 * no two writes or zone operations on one sequential zone run at once (the
 * zone is marked busy in the cache while its op runs). Reads may run
 * concurrently with anything. Backends that keep mutable state of their own
 * protect it themselves.
 */
#ifndef SMR_DEV_DEV_PRIV_H
#define SMR_DEV_DEV_PRIV_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "dev/dev.h"

struct smr_zcache;  /* the zone cache, zcache.h */
struct smr_dev_uring; /* liburing state, dev_io.c */
struct smr_dev_wb;    /* write-behind state, dev_wb.c */

/*
 * The operations of a backend. Offsets are absolute device byte offsets,
 * lengths are bytes; both are multiples of info.block_size (dev.c checks).
 * Every op returns 0 or a negative errno, never a short count.
 */
struct smr_dev_backend_ops {
	const char *name; /* "zloop", "file", "zbd", "fault" */

	/*
	 * Open @path and create the handle, normally by calling
	 * smr_dev_create() once the backend's private state and the
	 * smr_dev_info are ready. NULL for stacking backends (they have their
	 * own constructor, e.g. in fault.h). Errors as smr_dev_open().
	 */
	int (*open)(const char *path, const struct smr_dev_opts *opts,
		    struct smr_dev **devp);

	/*
	 * Release the backend's private state (dev->priv) and its file
	 * descriptors. Called once from smr_dev_close(), after flush. A
	 * stacking backend does not close its lower device unless it owns it.
	 */
	void (*close)(struct smr_dev *dev);

	/*
	 * Raw read/write of [off, off + len). On a zoned device the range lies
	 * within one zone (and, for reads of a sequential zone, below its
	 * write pointer); on an unzoned device it may be anywhere below the
	 * capacity. A short transfer is retried by the backend; it returns 0
	 * only when all of it was done.
	 */
	int (*read)(struct smr_dev *dev, void *buf, size_t len, uint64_t off);
	int (*write)(struct smr_dev *dev, const void *buf, size_t len,
		     uint64_t off);

	/* Make completed writes durable. NULL = nothing to do. */
	int (*flush)(struct smr_dev *dev);

	/*
	 * Report zones [first, first + nr) into @zones (bytes, as struct
	 * smr_zone documents; wp of a full zone = start + cap, of a
	 * conventional zone = start). Called by smr_dev_create() to build the
	 * cache (in chunks, so that a backend never needs the whole report in
	 * memory at once) and by dev.c to resynchronise one zone after a
	 * failed write. NULL for unzoned backends.
	 */
	int (*report_zones)(struct smr_dev *dev, uint32_t first, uint32_t nr,
			    struct smr_zone *zones);

	/*
	 * Zone management on sequential zone @zno (dev.c has checked the
	 * preconditions above). reset: write pointer back to the start;
	 * finish: zone full; open/close: explicit open / close, NULL when the
	 * medium keeps no such state (zloop), in which case dev.c only updates
	 * the cache.
	 */
	int (*zone_reset)(struct smr_dev *dev, uint32_t zno);
	int (*zone_finish)(struct smr_dev *dev, uint32_t zno);
	int (*zone_open)(struct smr_dev *dev, uint32_t zno);
	int (*zone_close)(struct smr_dev *dev, uint32_t zno);

	/* Discard [off, off + len). NULL = -EOPNOTSUPP. */
	int (*discard)(struct smr_dev *dev, uint64_t off, uint64_t len);

	/*
	 * Where [off, off + len) lives: a file descriptor and the offset in
	 * it, so that dev.c can run the I/O itself through io_uring. The range
	 * is within one zone (zoned) as for read/write. NULL, or -EOPNOTSUPP,
	 * means "use read/write" (stacking backends, which must see every
	 * request). The fd stays valid until io_release() is called for it
	 * (or until close, if io_release is NULL).
	 */
	int (*io_target)(struct smr_dev *dev, uint64_t off, size_t len,
			 int *fd, uint64_t *file_off);

	/*
	 * The I/O at @off through @fd, which io_target() gave, is over: the
	 * backend may close @fd. Called once per successful io_target().
	 * NULL = descriptors live until close.
	 */
	void (*io_release)(struct smr_dev *dev, uint64_t off, int fd);
};

/*
 * The handle. Everything but the zone cache is constant after
 * smr_dev_create() returns.
 */
struct smr_dev {
	struct smr_dev_info info; /* info.backend points to ops->name */
	char *path;               /* as opened (malloc'd) */
	bool unchecked;           /* opts->unchecked: skip zone rule checks */
	const struct smr_dev_backend_ops *ops;
	void *priv;               /* the backend's state */

	/* Zone state changes, the open-zone LRU, zone busy flags. Queries
	 * do not take it. */
	pthread_mutex_t zlock;
	pthread_cond_t zcond;     /* signalled when a busy zone is released */
	struct smr_zcache *zc;    /* NULL when !info.zoned; protected by zlock */

	pthread_mutex_t ring_lock;   /* protects ring */
	struct smr_dev_uring *ring;  /* created on first use, or NULL */

	/* Write-behind (dev_wb.c), or NULL; its state is protected by
	 * zlock. */
	struct smr_dev_wb *wb;
};

/*
 * Create a handle for backend @ops with private state @priv and geometry
 * @info (copied; info->backend is set to ops->name, nr_zones and
 * nr_cnv_zones are recounted from the report). If info->zoned, the zone
 * cache is built from ops->report_zones() over info->nr_zones zones. @path is
 * copied (NULL allowed: "" is used).
 *
 * Used by path backends from their ->open and by stacking backends (the
 * fault backend creates a device whose I/O goes to another struct smr_dev).
 * On failure nothing is kept and ops->close is *not* called: the caller
 * frees @priv. On success the handle owns @priv and smr_dev_close() calls
 * ops->close.
 *
 * Returns 0, -ENOMEM, -EINVAL for an inconsistent report (zones not
 * contiguous, capacity beyond size, a write pointer out of its zone), or the
 * report's error.
 */
int smr_dev_create(const struct smr_dev_backend_ops *ops, void *priv,
		   const struct smr_dev_info *info, const char *path,
		   struct smr_dev **devp);

/* The backend state given to smr_dev_create(). */
static inline void *smr_dev_priv(const struct smr_dev *dev)
{
	return dev->priv;
}

/* ------------------------------------------------------------------------
 * Helpers for backends (dev.c)
 * ------------------------------------------------------------------------ */

/*
 * Take the exclusive advisory lock (flock LOCK_EX | LOCK_NB) on @fd, or the
 * shared one if @shared. Returns 0, -EBUSY if another handle holds it, or
 * another negative errno.
 */
int smr_dev_flock(int fd, bool shared);

/*
 * Whether the block device @rdev is rotational, from
 * /sys/dev/block/MAJ:MIN/queue/rotational (false if it cannot be read).
 */
bool smr_dev_sysfs_rotational(dev_t rdev);

/* The largest request the block device @rdev takes unsplit, in bytes, from
 * /sys/dev/block/MAJ:MIN/queue/max_sectors_kb (0 if it cannot be read). */
uint64_t smr_dev_sysfs_max_transfer(dev_t rdev);

/* pread/pwrite all of it, retrying short transfers and EINTR. A read that
 * hits end of file zero-fills the rest. 0 or a negative errno (-EIO for a
 * write that makes no progress). */
int smr_dev_pread_full(int fd, void *buf, size_t len, uint64_t off);
int smr_dev_pwrite_full(int fd, const void *buf, size_t len, uint64_t off);

/* The built-in path backends. dev_zbd.c defines smr_dev_zbd_ops (whose
 * ->open returns -EOPNOTSUPP when built without libzbd); smr_dev_open()
 * picks it for a block device whose sysfs queue/zoned is not "none". */
extern const struct smr_dev_backend_ops smr_dev_zloop_ops;
extern const struct smr_dev_backend_ops smr_dev_file_ops;
extern const struct smr_dev_backend_ops smr_dev_zbd_ops;

#endif /* SMR_DEV_DEV_PRIV_H */
