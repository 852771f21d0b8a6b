/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dev.h - the device layer of smrfs: one handle type for every backend.
 *
 * A device is a linear array of bytes of `capacity` bytes, read and written in
 * multiples of its block size at block-aligned offsets. Buffers may have any
 * alignment; one that is not aligned to the block size costs a copy on a
 * device opened for direct I/O (info.direct_io), and none elsewhere.
 * smr_dev_buf_alloc() returns buffers aligned for every backend.
 *
 * A zoned device is also split into zones. Each zone has a type (conventional
 * or sequential-write-required), a start, a size, a capacity (<= size, the
 * writable part) and, when sequential, a condition and a write pointer. A write
 * into a sequential zone must start exactly at its write pointer and must not
 * cross its capacity; anything else fails with -EIO (or -EREMOTEIO on SCSI
 * ZBC, -EINVAL for a malformed request) and changes nothing, exactly as a
 * host-managed drive behaves. Host-aware drives are driven the same way.
 *
 * The zone cache: the zones are reported once at open and then kept in memory
 * in a compact form (regions of same-sized zones plus a per-zone write pointer
 * and condition, at most 16 bytes a zone), updated by every write and zone
 * operation made through the handle. Queries never ask the device again.
 *
 * Backends:
 *  - "zloop": a zoned loop directory in the layout of the Linux zloop driver
 *    (one file per zone, cnv-NNNNNN / seq-NNNNNN, a sequential zone's file
 *    size is its write pointer). Needs no root. Created by smr_zloop_create().
 *  - "zbd":   a kernel zoned block device through libzbd (O_DIRECT).
 *  - "file":  a regular file or a conventional block device; not zoned.
 *  - "fault": stacks on another device for crash and error tests (fault.h).
 *
 * Thread safety: every function may be called from several threads at once on
 * one handle; the handle serialises what must be serialised (one write in
 * flight per sequential zone).
 */
#ifndef SMR_DEV_DEV_H
#define SMR_DEV_DEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/smr.h"

struct smr_dev;
struct smr_zloop_params;

/* Alignment of I/O buffers: enough for O_DIRECT on every backend. */
#define SMR_DEV_BUF_ALIGN 4096

/* ------------------------------------------------------------------------
 * Zones: types and conditions use the kernel's values (linux/blkzoned.h).
 * ------------------------------------------------------------------------ */
enum smr_zone_type {
	SMR_ZONE_TYPE_CNV = 0x1,      /* conventional: random writes */
	SMR_ZONE_TYPE_SEQ = 0x2,      /* sequential write required */
	SMR_ZONE_TYPE_SEQ_PREF = 0x3, /* sequential write preferred (host-aware) */
};

enum smr_zone_cond {
	SMR_ZONE_COND_NOT_WP = 0x0, /* conventional zone: no write pointer */
	SMR_ZONE_COND_EMPTY = 0x1,
	SMR_ZONE_COND_IMP_OPEN = 0x2,
	SMR_ZONE_COND_EXP_OPEN = 0x3,
	SMR_ZONE_COND_CLOSED = 0x4,
	SMR_ZONE_COND_READONLY = 0xd,
	SMR_ZONE_COND_FULL = 0xe,
	SMR_ZONE_COND_OFFLINE = 0xf,
};

/* A snapshot of one zone, in bytes. */
struct smr_zone {
	uint64_t start; /* first byte of the zone */
	uint64_t len;   /* zone size */
	uint64_t cap;   /* writable bytes from start, <= len */
	uint64_t wp;    /* write pointer (absolute byte offset); start + cap
			 * when full; start for conventional zones */
	uint32_t no;    /* zone number */
	uint8_t type;   /* enum smr_zone_type */
	uint8_t cond;   /* enum smr_zone_cond */
};

#define smr_zone_is_cnv(z) ((z)->type == SMR_ZONE_TYPE_CNV)
#define smr_zone_is_seq(z) ((z)->type != SMR_ZONE_TYPE_CNV)
#define smr_zone_is_empty(z) ((z)->cond == SMR_ZONE_COND_EMPTY)
#define smr_zone_is_full(z) ((z)->cond == SMR_ZONE_COND_FULL)
#define smr_zone_is_open(z)                       \
	((z)->cond == SMR_ZONE_COND_IMP_OPEN || \
	 (z)->cond == SMR_ZONE_COND_EXP_OPEN)
#define smr_zone_is_closed(z) ((z)->cond == SMR_ZONE_COND_CLOSED)
/* Open or closed: counts against the device's max active zones. */
#define smr_zone_is_active(z) (smr_zone_is_open(z) || smr_zone_is_closed(z))
/* Bytes that can still be written at the write pointer. */
#define smr_zone_remaining(z) \
	(smr_zone_is_seq(z) ? (z)->start + (z)->cap - (z)->wp : (z)->cap)

/* "CONVENTIONAL", "SEQ_WRITE_REQUIRED", "SEQ_WRITE_PREFERRED" (as
 * blkzone prints them), "UNKNOWN". */
const char *smr_zone_type_str(uint8_t type);
/* blkzone's two-letter codes: "nw", "em", "oi", "oe", "cl", "ro", "fu",
 * "of"; "??" for anything else. */
const char *smr_zone_cond_str(uint8_t cond);

/* ------------------------------------------------------------------------
 * Opening a device
 * ------------------------------------------------------------------------ */
enum smr_dev_kind {
	SMR_DEV_KIND_ZLOOP = 1, /* zoned loop directory */
	SMR_DEV_KIND_ZBD = 2,   /* kernel zoned block device */
	SMR_DEV_KIND_FILE = 3,  /* regular file */
	SMR_DEV_KIND_BDEV = 4,  /* conventional block device */
};

const char *smr_dev_kind_str(enum smr_dev_kind kind);

/* What a device is. Filled at open and constant afterwards. */
struct smr_dev_info {
	const char *backend;    /* "zloop", "zbd", "file", "fault" */
	enum smr_dev_kind kind; /* of the underlying device (fault: of lower) */
	uint32_t block_size;    /* logical block size: I/O unit and alignment */
	uint64_t capacity;      /* bytes */
	bool zoned;             /* has sequential zones */
	bool host_aware;        /* host-aware model (driven as host-managed) */
	bool rotational;        /* spinning media (sysfs), false if unknown */
	bool discard;           /* smr_dev_discard() does something */
	bool read_only;
	/* Direct I/O (zbd: O_DIRECT): the medium takes buffers aligned to
	 * the block size only, and the handle copies others through one. */
	bool direct_io;
	uint32_t nr_zones;      /* 0 when not zoned */
	uint32_t nr_cnv_zones;  /* conventional zones among them */
	uint32_t max_open;      /* max open zones, 0 = no limit */
	uint32_t max_active;    /* max active zones, 0 = no limit */
	/* Bytes the device takes in one request before the kernel splits
	 * it (zbd: queue/max_sectors_kb); 0 = unknown. */
	uint64_t max_transfer;
};

/* Zeroed = defaults: read-write, exclusive, backend detected from the path. */
struct smr_dev_opts {
	bool read_only;
	/* Do not take the exclusive lock (a second opener is otherwise refused
	 * with -EBUSY). */
	bool shared;
	/* Force a backend: "zloop", "zbd" or "file"; NULL = detect (a directory
	 * is a zoned loop directory, a zoned block device is zbd, anything
	 * else is a file). */
	const char *backend;
	/* Skip the layer's own zone rule checks on writes (write pointer,
	 * capacity, open/active limits) and let the device refuse: for tests
	 * of the zbd backend that must see the kernel's errors. The zone cache
	 * is still updated after every success. */
	bool unchecked;
	/* Zoned loop directories: when set, refuse (-EINVAL) a directory
	 * created with other parameters (compared after defaults apply). */
	const struct smr_zloop_params *zloop;
	/* Zoned loop directories: allocate the pages of zone files a few MiB
	 * ahead of the write pointers, off the writer's thread (the file
	 * size, the write pointer, does not change). 0: where the directory
	 * is on tmpfs; 1: always; -1: never. */
	int zloop_prealloc;
	/* Where the device is in use (-EBUSY) but is the source of no mount,
	 * try again for up to this many seconds: the daemon of a filesystem
	 * just unmounted holds it until its last commit is written, after
	 * umount(8) has returned. 0: fail at once. */
	unsigned busy_wait;
};

/* The busy_wait of the commands (mount, mkfs, fsck): longer than a last
 * commit takes on a slow disk. */
#define SMR_DEV_BUSY_WAIT 30

/*
 * Open the device at @path. Returns 0 and a handle in *@devp, or:
 * -ENOENT no such path; -EACCES/-EPERM no permission; -EBUSY already opened
 * exclusively; -EINVAL not a usable device (e.g. a directory that is not a
 * zoned loop directory, a size that is not a multiple of the block size);
 * -EOPNOTSUPP a zoned block device in a build without libzbd.
 */
int smr_dev_open(const char *path, const struct smr_dev_opts *opts,
		 struct smr_dev **devp);

/* Flush and close. Returns the flush's error, if any; the handle is freed in
 * every case. NULL is allowed. */
int smr_dev_close(struct smr_dev *dev);

const struct smr_dev_info *smr_dev_info(const struct smr_dev *dev);
/*
 * Make @bs the block size of an unzoned device, for a filesystem made with
 * another one than the device reports (on a block device of 512-byte
 * sectors, say, and then opened from a copy in a regular file). Allowed
 * where the device does I/O in units of @bs: a regular file any power of
 * two from 512, a block device a multiple of its logical block size. Call
 * it right after open, before anything else uses the device. 0, or -EINVAL
 * (a zoned device, or @bs not allowed or not dividing the capacity).
 */
int smr_dev_set_block_size(struct smr_dev *dev, uint32_t bs);
/* The path the device was opened with. */
const char *smr_dev_path(const struct smr_dev *dev);

/* Aligned, zero-filled I/O buffer of @len bytes, or NULL. */
void *smr_dev_buf_alloc(size_t len);
/* The same, not zero-filled: for a buffer that is filled whole before use
 * (a read into it, or a copy). */
void *smr_dev_buf_alloc_uninit(size_t len);
void smr_dev_buf_free(void *buf);

/* ------------------------------------------------------------------------
 * The zone cache. All of these answer from memory, without a lock or a
 * system call. @zno must be below info->nr_zones; for a bad number (or an
 * unzoned device) start and wp return UINT64_MAX, len and cap 0, type 0 and
 * cond SMR_ZONE_COND_OFFLINE.
 * ------------------------------------------------------------------------ */

/* Zone number that holds byte @off, or UINT32_MAX if @off is past the end or
 * the device is not zoned. */
uint32_t smr_dev_zone_no(const struct smr_dev *dev, uint64_t off);
/* Fill *@z with a snapshot of zone @zno: 0, or -EINVAL for a bad number. */
int smr_dev_zone(const struct smr_dev *dev, uint32_t zno, struct smr_zone *z);
uint64_t smr_dev_zone_start(const struct smr_dev *dev, uint32_t zno);
uint64_t smr_dev_zone_len(const struct smr_dev *dev, uint32_t zno);
uint64_t smr_dev_zone_cap(const struct smr_dev *dev, uint32_t zno);
uint64_t smr_dev_zone_wp(const struct smr_dev *dev, uint32_t zno);
uint8_t smr_dev_zone_type(const struct smr_dev *dev, uint32_t zno);
uint8_t smr_dev_zone_cond(const struct smr_dev *dev, uint32_t zno);
/* Zones now open (implicitly or explicitly), and active (open or closed). */
uint32_t smr_dev_nr_open(const struct smr_dev *dev);
uint32_t smr_dev_nr_active(const struct smr_dev *dev);
/* Bytes of memory the zone cache uses. */
size_t smr_dev_zone_cache_bytes(const struct smr_dev *dev);

/* ------------------------------------------------------------------------
 * I/O. Offsets and lengths are multiples of info->block_size; buffers have
 * any alignment (see the top of this file). Each call returns 0 when all of
 * it was done, or a negative errno:
 *  -EINVAL  offset or length not a multiple of the block size, or past the
 *           capacity;
 *  -EIO / -EREMOTEIO  a write into a sequential zone not at its write
 *           pointer, or crossing its capacity, or into a full zone, or one
 *           that would make more zones active than max_active allows (an
 *           implicit open beyond max_open first closes the least recently
 *           used implicitly open zone, as the kernel's zone models do), or
 *           a media error;
 *  -EROFS   a write on a read-only handle.
 * A failed call leaves the device and the zone cache as they were (a torn
 * write can be made only by the fault backend).
 * Reading a sequential zone past its write pointer returns zeros.
 *
 * Write-behind. On a handle with write-behind (the default on a zoned
 * device opened for direct I/O, see smr_dev_set_write_behind()), a
 * smr_dev_write() into a sequential zone returns as soon as its bytes are
 * copied and queued: the zone's write pointer advances at once, the write
 * reaches the medium later. What follows keeps its order: a read of the
 * range waits for it; a write, batch or zone operation on the zone waits
 * for the zone's queued writes; smr_dev_flush() and smr_dev_close() wait for
 * all of them. A queued write that fails is not reported by the call that
 * queued it but by every later smr_dev_flush() (and smr_dev_close(), and
 * every later write), which return its error.
 * ------------------------------------------------------------------------ */
int smr_dev_read(struct smr_dev *dev, void *buf, size_t len, uint64_t off);
int smr_dev_write(struct smr_dev *dev, const void *buf, size_t len,
		  uint64_t off);

enum smr_io_op {
	SMR_IO_READ = 0,
	SMR_IO_WRITE = 1,
};

/* One request of a batch. */
struct smr_io {
	enum smr_io_op op;
	void *buf;
	size_t len;
	uint64_t off;
	int result; /* out: 0, or a negative errno as above; -ECANCELED for a
		     * write not issued because an earlier write to the same
		     * zone in this batch failed */
};

/*
 * Run @n requests together (liburing: one submission, many in flight) and
 * wait for all of them. Writes to one sequential zone are issued in array
 * order, one in flight at a time, so that each lands at the write pointer;
 * writes to different zones and reads proceed in parallel (a read does not
 * wait for the writes of its own batch: to read what a batch writes, read
 * after it returns). Returns 0 if all succeeded, else the error of the first
 * failing request in array order; every request's own result is set.
 */
int smr_dev_submit(struct smr_dev *dev, struct smr_io *ios, unsigned int n);

/* Make every completed write durable (fdatasync / cache flush); with
 * write-behind, first wait for every write queued before the call. Returns
 * the error of a queued write that failed, if any did, else the flush's. */
int smr_dev_flush(struct smr_dev *dev);

/*
 * Would smr_dev_write() of @len bytes return now, without waiting for the
 * medium? True on a buffered backend (the page cache takes it) and, with
 * write-behind, while the queue has room for it; false for direct I/O
 * without write-behind. A hint for a caller that holds others up while it
 * writes: the answer can change at once.
 */
bool smr_dev_write_quick(struct smr_dev *dev, size_t len);

/* Default cap on the bytes a handle holds queued for write-behind. */
#define SMR_DEV_WB_DEFAULT_BYTES (32 * SMR_MIB)
/* A zone's queued writes go out once they hold this many bytes (or the
 * device's max transfer, if smaller), once the oldest is this old, or as
 * soon as anything waits for them (a flush, a read of their range, a zone
 * operation, a synchronous write into the zone, a writer short of room). */
#define SMR_DEV_WB_GATHER_BYTES (256 * 1024)
#define SMR_DEV_WB_GATHER_MS 30

/*
 * Turn write-behind of sequential writes on (@max_bytes > 0: at most that
 * many bytes queued; a writer that would pass it waits, unless nothing is
 * queued; small writes are gathered as above) or off (0: waits for what is
 * queued). On by default, with SMR_DEV_WB_DEFAULT_BYTES, for zoned devices
 * opened for direct I/O (info.direct_io), where the data is copied into an
 * aligned buffer anyway; off for buffered backends and unchecked handles.
 * Call it while no other I/O runs on the handle. Returns 0, -EINVAL (not
 * zoned), -EROFS (read-only handle), -ENOMEM, or the error of a queued
 * write when turning it off.
 */
int smr_dev_set_write_behind(struct smr_dev *dev, size_t max_bytes);

/* What write-behind did since the handle was opened. */
struct smr_dev_wb_stats {
	uint64_t queued;       /* writes queued */
	uint64_t issued;       /* device writes (a queued run merged is one) */
	uint64_t bytes;        /* bytes written */
	uint64_t peak_bytes;   /* most bytes queued at once */
	uint64_t peak_inflight; /* most device writes in flight at once */
	uint64_t cap_waits;    /* writers that waited for the cap */
	uint64_t failed;       /* queued writes that failed */
};

/* Fill *@st (zeros without write-behind). */
void smr_dev_wb_stats(struct smr_dev *dev, struct smr_dev_wb_stats *st);

/* Tell the device @len bytes at @off are unused (regular files: punch a
 * hole). -EOPNOTSUPP where info->discard is false. */
int smr_dev_discard(struct smr_dev *dev, uint64_t off, uint64_t len);

/* ------------------------------------------------------------------------
 * Zone management. -EINVAL for a bad zone number or a conventional zone,
 * -EIO when the device refuses: opening a full zone, closing an empty or
 * full one, opening an empty zone beyond max active, or beyond max open when
 * no implicitly open zone can be closed to make room. -EROFS on a read-only
 * handle. Resetting an empty zone and finishing a full one do nothing and
 * return 0. Closing a zone in which nothing was written makes it empty.
 * ------------------------------------------------------------------------ */
int smr_dev_zone_reset(struct smr_dev *dev, uint32_t zno);
int smr_dev_zone_finish(struct smr_dev *dev, uint32_t zno);
int smr_dev_zone_open(struct smr_dev *dev, uint32_t zno);
int smr_dev_zone_close(struct smr_dev *dev, uint32_t zno);
/* Reset every sequential zone that is not empty (mkfs). */
int smr_dev_reset_all(struct smr_dev *dev);

/* ------------------------------------------------------------------------
 * Zoned loop directories
 * ------------------------------------------------------------------------ */

/* Zeroed fields take the defaults noted. */
struct smr_zloop_params {
	uint64_t capacity;   /* bytes, required; a multiple of zone_size */
	uint64_t zone_size;  /* bytes, a power of two; default 256 MiB */
	uint64_t zone_cap;   /* bytes, <= zone_size; 0 = zone_size */
	uint32_t nr_cnv;     /* conventional zones at the start; default 0 */
	uint32_t max_open;   /* 0 = no limit */
	uint32_t max_active; /* 0 = no limit */
	uint32_t block_size; /* 512 or 4096; default 4096 */
};

/*
 * Create a zoned loop directory at @dir (created if missing; it must be
 * empty). Besides the zone files it writes zloop.params, the parameters
 * that smr_dev_open() reads back (the kernel driver ignores the file).
 * Returns 0, -EEXIST if it already holds zones, -EINVAL for inconsistent
 * parameters (zone size not a power of two or below the block size,
 * capacity not a multiple of it, zone capacity above the zone size or not
 * a multiple of the block size, as many conventional zones as zones, block
 * size not 512 or 4096, max_open above max_active), or the error of the file
 * system underneath.
 */
int smr_zloop_create(const char *dir, const struct smr_zloop_params *p);

#endif /* SMR_DEV_DEV_H */
