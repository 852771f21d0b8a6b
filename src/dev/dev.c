/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dev.c - the device handle: backend selection, the zone cache and the zone
 * rules (enforced here for every backend, see dev_priv.h), synchronous I/O,
 * zone management.
 */
#include "dev/dev.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "dev/dev_int.h"
#include "dev/dev_priv.h"
#include "dev/zcache.h"

/* Zones reported per call while the cache is built. */
#define SMR_DEV_REPORT_CHUNK 1024

/* ------------------------------------------------------------------------
 * Names
 * ------------------------------------------------------------------------ */

const char *smr_zone_type_str(uint8_t type)
{
	switch (type) {
	case SMR_ZONE_TYPE_CNV: return "CONVENTIONAL";
	case SMR_ZONE_TYPE_SEQ: return "SEQ_WRITE_REQUIRED";
	case SMR_ZONE_TYPE_SEQ_PREF: return "SEQ_WRITE_PREFERRED";
	default: return "UNKNOWN";
	}
}

const char *smr_zone_cond_str(uint8_t cond)
{
	switch (cond) {
	case SMR_ZONE_COND_NOT_WP: return "nw";
	case SMR_ZONE_COND_EMPTY: return "em";
	case SMR_ZONE_COND_IMP_OPEN: return "oi";
	case SMR_ZONE_COND_EXP_OPEN: return "oe";
	case SMR_ZONE_COND_CLOSED: return "cl";
	case SMR_ZONE_COND_READONLY: return "ro";
	case SMR_ZONE_COND_FULL: return "fu";
	case SMR_ZONE_COND_OFFLINE: return "of";
	default: return "??";
	}
}

const char *smr_dev_kind_str(enum smr_dev_kind kind)
{
	switch (kind) {
	case SMR_DEV_KIND_ZLOOP: return "zoned loop directory";
	case SMR_DEV_KIND_ZBD: return "zoned block device";
	case SMR_DEV_KIND_FILE: return "regular file";
	case SMR_DEV_KIND_BDEV: return "block device";
	default: return "unknown";
	}
}

/* ------------------------------------------------------------------------
 * Helpers for backends
 * ------------------------------------------------------------------------ */

int smr_dev_flock(int fd, bool shared)
{
	if (flock(fd, (shared ? LOCK_SH : LOCK_EX) | LOCK_NB) == 0)
		return 0;
	return errno == EWOULDBLOCK ? -EBUSY : -errno;
}

static bool read_sysfs_ulong(const char *path, unsigned long *v)
{
	FILE *f = fopen(path, "re");
	bool ok;

	if (!f)
		return false;
	ok = fscanf(f, "%lu", v) == 1;
	fclose(f);
	return ok;
}

/* Read queue/@attr of block device @rdev (of its disk for a partition). */
static bool read_sysfs_queue(dev_t rdev, const char *attr, unsigned long *v)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/queue/%s",
		 major(rdev), minor(rdev), attr);
	if (read_sysfs_ulong(path, v))
		return true;
	/* A partition: the queue belongs to the whole disk. */
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/../queue/%s",
		 major(rdev), minor(rdev), attr);
	return read_sysfs_ulong(path, v);
}

bool smr_dev_sysfs_rotational(dev_t rdev)
{
	unsigned long v;

	return read_sysfs_queue(rdev, "rotational", &v) && v != 0;
}

uint64_t smr_dev_sysfs_max_transfer(dev_t rdev)
{
	unsigned long v;

	return read_sysfs_queue(rdev, "max_sectors_kb", &v) ? v * 1024ULL : 0;
}

int smr_dev_pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	char *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0) {
			/* End of file: the rest reads as zeros. */
			memset(p, 0, len);
			return 0;
		}
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

int smr_dev_pwrite_full(int fd, const void *buf, size_t len, uint64_t off)
{
	const char *p = buf;

	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/* Whether the block device @rdev is zoned (sysfs queue/zoned not "none"). */
static bool sysfs_zoned(dev_t rdev)
{
	char path[PATH_MAX], buf[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/queue/zoned",
		 major(rdev), minor(rdev));
	f = fopen(path, "re");
	if (!f)
		return false;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return buf[0] && strncmp(buf, "none", 4) != 0;
}

/* ------------------------------------------------------------------------
 * Creating, opening and closing handles
 * ------------------------------------------------------------------------ */

static int build_zone_cache(struct smr_dev *dev)
{
	struct smr_dev_info *info = &dev->info;
	struct smr_zone *chunk;
	struct smr_zcache *zc;
	uint64_t end;
	int rc;

	if (!dev->ops->report_zones || !info->nr_zones)
		return -EINVAL;
	rc = smr_zc_create(info->nr_zones, info->block_size, info->max_open,
			   info->max_active, &zc);
	if (rc)
		return rc;
	chunk = calloc(SMR_DEV_REPORT_CHUNK, sizeof(*chunk));
	if (!chunk) {
		rc = -ENOMEM;
		goto out_free;
	}
	for (uint32_t first = 0; first < info->nr_zones;
	     first += SMR_DEV_REPORT_CHUNK) {
		uint32_t nr = SMR_MIN(SMR_DEV_REPORT_CHUNK,
				      info->nr_zones - first);

		rc = dev->ops->report_zones(dev, first, nr, chunk);
		if (rc)
			goto out_chunk;
		for (uint32_t i = 0; i < nr; i++) {
			rc = smr_zc_add(zc, &chunk[i]);
			if (rc) {
				smr_err("%s: zone %u: inconsistent report",
					dev->path, first + i);
				goto out_chunk;
			}
		}
	}
	rc = smr_zc_finish_build(zc);
	if (rc)
		goto out_chunk;
	end = smr_zc_start(zc, zc->nr_zones - 1) +
	      smr_zc_region_of(zc, zc->nr_zones - 1)->zone_len;
	if (end != info->capacity) {
		smr_err("%s: zones end at %llu, capacity is %llu", dev->path,
			(unsigned long long)end,
			(unsigned long long)info->capacity);
		rc = -EINVAL;
		goto out_chunk;
	}
	info->nr_cnv_zones = zc->nr_cnv;
	dev->zc = zc;
	free(chunk);
	return 0;

out_chunk:
	free(chunk);
out_free:
	smr_zc_free(zc);
	return rc;
}

int smr_dev_create(const struct smr_dev_backend_ops *ops, void *priv,
		   const struct smr_dev_info *info, const char *path,
		   struct smr_dev **devp)
{
	struct smr_dev *dev;
	int rc;

	*devp = NULL;
	if (!ops || !info || !SMR_IS_POW2(info->block_size) ||
	    info->block_size < 512 || !info->capacity ||
	    info->capacity % info->block_size)
		return -EINVAL;
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	dev->path = strdup(path ? path : "");
	if (!dev->path) {
		free(dev);
		return -ENOMEM;
	}
	dev->info = *info;
	dev->info.backend = ops->name;
	dev->ops = ops;
	dev->priv = priv;
	pthread_mutex_init(&dev->zlock, NULL);
	pthread_cond_init(&dev->zcond, NULL);
	pthread_mutex_init(&dev->ring_lock, NULL);
	if (!dev->info.zoned) {
		dev->info.nr_zones = 0;
		dev->info.nr_cnv_zones = 0;
	} else {
		rc = build_zone_cache(dev);
		if (rc)
			goto out_free;
	}
	*devp = dev;
	return 0;

out_free:
	pthread_mutex_destroy(&dev->ring_lock);
	pthread_cond_destroy(&dev->zcond);
	pthread_mutex_destroy(&dev->zlock);
	free(dev->path);
	free(dev);
	return rc;
}

static const struct smr_dev_backend_ops *backend_by_name(const char *name)
{
	if (!strcmp(name, "zloop"))
		return &smr_dev_zloop_ops;
	if (!strcmp(name, "file"))
		return &smr_dev_file_ops;
	if (!strcmp(name, "zbd"))
		return &smr_dev_zbd_ops;
	return NULL;
}

/* Is @path, as given or resolved, the source of a mount (as mount.smrfs
 * names its device)? Where the table cannot be read: taken as yes. */
static bool dev_mounted(const char *path)
{
	FILE *f = fopen("/proc/self/mounts", "re");
	char *real = realpath(path, NULL), *line = NULL;
	size_t cap = 0;
	bool found = !f;

	while (f && !found && getline(&line, &cap, f) > 0) {
		char *sp = strchr(line, ' ');

		if (!sp)
			continue;
		*sp = '\0';
		smr_mtab_unescape(line);
		found = !strcmp(line, path) || (real && !strcmp(line, real));
	}
	if (f)
		fclose(f);
	free(line);
	free(real);
	return found;
}

int smr_dev_open(const char *path, const struct smr_dev_opts *opts,
		 struct smr_dev **devp)
{
	static const struct smr_dev_opts defaults;
	const struct smr_dev_backend_ops *ops;
	struct stat st;
	int rc;

	*devp = NULL;
	if (!opts)
		opts = &defaults;
	if (!path || !*path)
		return -EINVAL;
	if (opts->backend) {
		if (strcmp(opts->backend, "zloop") &&
		    strcmp(opts->backend, "file") &&
		    strcmp(opts->backend, "zbd"))
			return -EINVAL;
		ops = backend_by_name(opts->backend);
	} else {
		if (stat(path, &st))
			return -errno;
		if (S_ISDIR(st.st_mode))
			ops = &smr_dev_zloop_ops;
		else if (S_ISBLK(st.st_mode) && sysfs_zoned(st.st_rdev))
			ops = backend_by_name("zbd");
		else
			ops = &smr_dev_file_ops;
	}
	if (!ops || !ops->open)
		return -EOPNOTSUPP;
	for (unsigned tries = 0;; tries++) {
		rc = ops->open(path, opts, devp);
		if (rc != -EBUSY || tries >= opts->busy_wait * 10u ||
		    dev_mounted(path))
			break;
		if (!tries)
			smr_info("%s: in use, though not mounted: waiting up to "
				 "%u s for the program that holds it (the "
				 "daemon of an unmount, writing its last "
				 "commit?)", path, opts->busy_wait);
		usleep(100 * 1000);
	}
	if (rc)
		return rc;
	(*devp)->unchecked = opts->unchecked;
	/* Direct I/O copies the data into an aligned buffer anyway: queue
	 * it there and let the caller go on. */
	if ((*devp)->info.direct_io && (*devp)->info.zoned &&
	    !opts->read_only && !opts->unchecked) {
		rc = smr_dev_wb_start(*devp, SMR_DEV_WB_DEFAULT_BYTES);
		if (rc)
			smr_warn("%s: no write-behind: %s", path,
				 strerror(-rc));
	}
	return 0;
}

int smr_dev_close(struct smr_dev *dev)
{
	int rc = 0;

	if (!dev)
		return 0;
	if (!dev->info.read_only)
		rc = smr_dev_flush(dev);
	smr_dev_wb_stop(dev);
	smr_dev_uring_free(dev);
	if (dev->ops->close)
		dev->ops->close(dev);
	smr_zc_free(dev->zc);
	pthread_mutex_destroy(&dev->ring_lock);
	pthread_cond_destroy(&dev->zcond);
	pthread_mutex_destroy(&dev->zlock);
	free(dev->path);
	free(dev);
	return rc;
}

const struct smr_dev_info *smr_dev_info(const struct smr_dev *dev)
{
	return &dev->info;
}

int smr_dev_set_block_size(struct smr_dev *dev, uint32_t bs)
{
	struct smr_dev_info *info = &dev->info;

	if (info->zoned || !SMR_IS_POW2(bs) || bs < 512 ||
	    info->capacity % bs)
		return -EINVAL;
	if (info->kind != SMR_DEV_KIND_FILE && bs % info->block_size)
		return -EINVAL;
	info->block_size = bs;
	return 0;
}

bool smr_dev_write_quick(struct smr_dev *dev, size_t len)
{
	if (dev->wb)
		return smr_dev_wb_room(dev, len);
	/* Buffered backends write into the page cache. */
	return !dev->info.direct_io;
}

int smr_dev_set_write_behind(struct smr_dev *dev, size_t max_bytes)
{
	if (!dev->info.zoned)
		return -EINVAL;
	if (dev->info.read_only)
		return -EROFS;
	if (!max_bytes)
		return smr_dev_wb_stop(dev);
	return smr_dev_wb_start(dev, max_bytes);
}

const char *smr_dev_path(const struct smr_dev *dev)
{
	return dev->path;
}

void *smr_dev_buf_alloc_uninit(size_t len)
{
	void *p;

	if (posix_memalign(&p, SMR_DEV_BUF_ALIGN, len ? len : 1))
		return NULL;
	return p;
}

void *smr_dev_buf_alloc(size_t len)
{
	void *p = smr_dev_buf_alloc_uninit(len);

	if (p)
		memset(p, 0, len);
	return p;
}

void smr_dev_buf_free(void *buf)
{
	free(buf);
}

/* ------------------------------------------------------------------------
 * Zone cache queries
 * ------------------------------------------------------------------------ */

static bool zno_ok(const struct smr_dev *dev, uint32_t zno)
{
	return dev->zc && zno < dev->zc->nr_zones;
}

uint32_t smr_dev_zone_no(const struct smr_dev *dev, uint64_t off)
{
	if (!dev->zc)
		return UINT32_MAX;
	return smr_zc_zone_no(dev->zc, off);
}

int smr_dev_zone(const struct smr_dev *dev, uint32_t zno, struct smr_zone *z)
{
	if (!zno_ok(dev, zno))
		return -EINVAL;
	smr_zc_get(dev->zc, zno, z);
	return 0;
}

uint64_t smr_dev_zone_start(const struct smr_dev *dev, uint32_t zno)
{
	return zno_ok(dev, zno) ? smr_zc_start(dev->zc, zno) : UINT64_MAX;
}

uint64_t smr_dev_zone_len(const struct smr_dev *dev, uint32_t zno)
{
	return zno_ok(dev, zno) ? smr_zc_region_of(dev->zc, zno)->zone_len : 0;
}

uint64_t smr_dev_zone_cap(const struct smr_dev *dev, uint32_t zno)
{
	return zno_ok(dev, zno) ? smr_zc_region_of(dev->zc, zno)->zone_cap : 0;
}

uint64_t smr_dev_zone_wp(const struct smr_dev *dev, uint32_t zno)
{
	return zno_ok(dev, zno) ? smr_zc_wp(dev->zc, zno) : UINT64_MAX;
}

uint8_t smr_dev_zone_type(const struct smr_dev *dev, uint32_t zno)
{
	return zno_ok(dev, zno) ? smr_zc_word_type(smr_zc_word(dev->zc, zno))
				: 0;
}

uint8_t smr_dev_zone_cond(const struct smr_dev *dev, uint32_t zno)
{
	return zno_ok(dev, zno) ? smr_zc_word_cond(smr_zc_word(dev->zc, zno))
				: SMR_ZONE_COND_OFFLINE;
}

uint32_t smr_dev_nr_open(const struct smr_dev *dev)
{
	return dev->zc ? __atomic_load_n(&dev->zc->nr_open, __ATOMIC_RELAXED)
		       : 0;
}

uint32_t smr_dev_nr_active(const struct smr_dev *dev)
{
	return dev->zc ? __atomic_load_n(&dev->zc->nr_active, __ATOMIC_RELAXED)
		       : 0;
}

size_t smr_dev_zone_cache_bytes(const struct smr_dev *dev)
{
	return dev->zc ? smr_zc_bytes(dev->zc) : 0;
}

/* ------------------------------------------------------------------------
 * The write gate of sequential zones
 * ------------------------------------------------------------------------ */

int smr_dev_io_check(const struct smr_dev *dev, enum smr_io_op op,
		     size_t len, uint64_t off)
{
	uint64_t bs = dev->info.block_size;

	if (op != SMR_IO_READ && op != SMR_IO_WRITE)
		return -EINVAL;
	if (off % bs || len % bs || off > dev->info.capacity ||
	    len > dev->info.capacity - off)
		return -EINVAL;
	if (op == SMR_IO_WRITE && dev->info.read_only)
		return -EROFS;
	return 0;
}

uint64_t smr_dev_zone_end_of(const struct smr_dev *dev, uint64_t off)
{
	uint32_t zno;

	if (!dev->zc)
		return dev->info.capacity;
	zno = smr_zc_zone_no(dev->zc, off);
	return smr_zc_start(dev->zc, zno) +
	       smr_zc_region_of(dev->zc, zno)->zone_len;
}

int smr_dev_write_zone(const struct smr_dev *dev, size_t len, uint64_t off,
		       uint32_t *zno, bool *seq)
{
	uint32_t z, last;

	*seq = false;
	*zno = UINT32_MAX;
	if (!dev->zc || !len)
		return 0;
	z = smr_zc_zone_no(dev->zc, off);
	last = smr_zc_zone_no(dev->zc, off + len - 1);
	*zno = z;
	for (uint32_t i = z; i <= last; i++) {
		if (smr_zc_word_type(smr_zc_word(dev->zc, i)) ==
		    SMR_ZONE_TYPE_CNV)
			continue;
		/* A write touching a sequential zone must lie within it (a
		 * write crossing a zone's capacity fails like this too). */
		if (z != last)
			return -EIO;
		*seq = true;
	}
	return 0;
}

int smr_dev_write_begin(struct smr_dev *dev, uint32_t zno, uint64_t off,
			uint64_t len, bool wait, struct smr_zc_undo *undo)
{
	int rc;

	pthread_mutex_lock(&dev->zlock);
	for (;;) {
		if (smr_dev_wb_open_blocked(dev, zno, false))
			rc = SMR_ZC_BUSY_RETRY;
		else
			rc = smr_zc_write_prep(dev->zc, zno, off, len,
					       !dev->unchecked, undo);
		if (rc != SMR_ZC_BUSY_RETRY || !wait)
			break;
		smr_dev_wb_hurry(dev);
		pthread_cond_wait(&dev->zcond, &dev->zlock);
	}
	pthread_mutex_unlock(&dev->zlock);
	return rc;
}

void smr_dev_write_end(struct smr_dev *dev, uint32_t zno, uint64_t len,
		       bool ok, const struct smr_zc_undo *undo)
{
	struct smr_zone rep;
	bool resync = false;

	/* After a failure, ask the medium where its write pointer is now
	 * (the zone is still busy, so nobody else moves it). */
	if (!ok && dev->ops->report_zones)
		resync = dev->ops->report_zones(dev, zno, 1, &rep) == 0;
	pthread_mutex_lock(&dev->zlock);
	smr_zc_write_done(dev->zc, zno, len, ok, undo);
	if (resync)
		smr_zc_resync(dev->zc, zno, &rep);
	pthread_cond_broadcast(&dev->zcond);
	pthread_mutex_unlock(&dev->zlock);
}

size_t smr_dev_readable(const struct smr_dev *dev, size_t len, uint64_t off)
{
	uint32_t zno;
	uint64_t w, wp;

	if (!dev->zc)
		return len;
	zno = smr_zc_zone_no(dev->zc, off);
	w = smr_zc_word(dev->zc, zno);
	if (smr_zc_word_type(w) == SMR_ZONE_TYPE_CNV)
		return len;
	wp = smr_zc_start(dev->zc, zno) +
	     ((w & SMR_ZC_WP_MASK) << dev->zc->block_shift);
	if (wp <= off)
		return 0;
	return (size_t)SMR_MIN((uint64_t)len, wp - off);
}

/* ------------------------------------------------------------------------
 * Synchronous I/O
 * ------------------------------------------------------------------------ */

/*
 * Direct I/O takes only buffers aligned to the block size; the others go
 * through an aligned copy. Buffered backends take any buffer as it is, so
 * that a FUSE write's data goes from the request buffer to the medium with
 * no copy in between.
 */
static bool dev_needs_bounce(const struct smr_dev *dev, const void *buf)
{
	return dev->info.direct_io &&
	       (uintptr_t)buf % dev->info.block_size != 0;
}

static int dev_read_bounced(struct smr_dev *dev, void *buf, size_t len,
			    uint64_t off)
{
	void *b = smr_dev_buf_alloc_uninit(len);
	int rc;

	if (!b)
		return -ENOMEM;
	rc = smr_dev_read(dev, b, len, off);
	if (!rc)
		memcpy(buf, b, len);
	smr_dev_buf_free(b);
	return rc;
}

static int dev_write_bounced(struct smr_dev *dev, const void *buf,
			     size_t len, uint64_t off)
{
	void *b = smr_dev_buf_alloc_uninit(len);
	int rc;

	if (!b)
		return -ENOMEM;
	memcpy(b, buf, len);
	rc = smr_dev_write(dev, b, len, off);
	smr_dev_buf_free(b);
	return rc;
}

int smr_dev_read(struct smr_dev *dev, void *buf, size_t len, uint64_t off)
{
	char *p = buf;
	int rc;

	rc = smr_dev_io_check(dev, SMR_IO_READ, len, off);
	if (rc)
		return rc;
	if (len && dev_needs_bounce(dev, buf))
		return dev_read_bounced(dev, buf, len, off);
	while (len) {
		size_t piece = (size_t)SMR_MIN((uint64_t)len,
					       smr_dev_zone_end_of(dev, off) - off);
		size_t rd;

		smr_dev_wb_wait_read(dev, off, piece);
		rd = smr_dev_readable(dev, piece, off);
		if (rd) {
			rc = dev->ops->read(dev, p, rd, off);
			if (rc)
				return rc;
		}
		if (rd < piece)
			memset(p + rd, 0, piece - rd);
		p += piece;
		off += piece;
		len -= piece;
	}
	return 0;
}

int smr_dev_write(struct smr_dev *dev, const void *buf, size_t len,
		  uint64_t off)
{
	const char *p = buf;
	struct smr_zc_undo undo;
	uint32_t zno;
	bool seq;
	int rc;

	rc = smr_dev_io_check(dev, SMR_IO_WRITE, len, off);
	if (rc || !len)
		return rc;
	rc = smr_dev_write_zone(dev, len, off, &zno, &seq);
	if (rc)
		return rc;
	/* Queued: copied into an aligned buffer of the handle's. */
	if (seq && dev->wb)
		return smr_dev_wb_write(dev, zno, buf, len, off);
	if (dev_needs_bounce(dev, buf))
		return dev_write_bounced(dev, buf, len, off);
	if (seq) {
		rc = smr_dev_write_begin(dev, zno, off, len, true, &undo);
		if (rc)
			return rc;
		rc = dev->ops->write(dev, buf, len, off);
		smr_dev_write_end(dev, zno, len, rc == 0, &undo);
		return rc;
	}
	/* Unzoned, or conventional zones: one backend call per zone. */
	while (len) {
		size_t piece = (size_t)SMR_MIN((uint64_t)len,
					       smr_dev_zone_end_of(dev, off) - off);

		rc = dev->ops->write(dev, p, piece, off);
		if (rc)
			return rc;
		p += piece;
		off += piece;
		len -= piece;
	}
	return 0;
}

int smr_dev_submit(struct smr_dev *dev, struct smr_io *ios, unsigned int n)
{
	bool bounce = false;
	int first = 0;
	int rc;

	/* The ring hands buffers to the medium as they are: a batch with a
	 * buffer direct I/O cannot take runs synchronously, which copies. */
	for (unsigned int i = 0; i < n && !bounce; i++)
		bounce = dev_needs_bounce(dev, ios[i].buf);
	if (n > 1 && !bounce) {
		rc = smr_dev_submit_uring(dev, ios, n);
		if (rc != -EOPNOTSUPP)
			return rc;
	}
	/* Synchronously, in array order (which keeps each zone's writes in
	 * order); a write after a failed write to the same zone is
	 * cancelled. */
	for (unsigned int i = 0; i < n; i++) {
		struct smr_io *io = &ios[i];
		bool cancel = false;
		uint32_t zno;
		bool seq;

		/* A request that is wrong in itself fails as such, before
		 * any cancellation. */
		io->result = smr_dev_io_check(dev, io->op, io->len, io->off);
		if (!io->result && io->op == SMR_IO_WRITE)
			io->result = smr_dev_write_zone(dev, io->len, io->off,
							&zno, &seq);
		if (io->result) {
			if (!first)
				first = io->result;
			continue;
		}
		if (io->op == SMR_IO_WRITE && io->len && dev->zc) {
			uint32_t z = smr_dev_zone_no(dev, io->off);

			if (z != UINT32_MAX &&
			    smr_dev_zone_type(dev, z) == SMR_ZONE_TYPE_CNV)
				z = UINT32_MAX; /* random writes: no order */
			for (unsigned int j = 0; j < i && z != UINT32_MAX; j++)
				if (ios[j].op == SMR_IO_WRITE &&
				    ios[j].result != 0 &&
				    smr_dev_zone_no(dev, ios[j].off) == z)
					cancel = true;
		}
		if (cancel)
			io->result = -ECANCELED;
		else if (io->op == SMR_IO_WRITE)
			io->result = smr_dev_write(dev, io->buf, io->len,
						   io->off);
		else if (io->op == SMR_IO_READ)
			io->result = smr_dev_read(dev, io->buf, io->len,
						  io->off);
		else
			io->result = -EINVAL;
		if (io->result && !first)
			first = io->result;
	}
	return first;
}

int smr_dev_flush(struct smr_dev *dev)
{
	int rc, frc = 0;

	if (dev->info.read_only)
		return 0;
	rc = smr_dev_wb_drain(dev);
	if (dev->ops->flush)
		frc = dev->ops->flush(dev);
	return rc ? rc : frc;
}

int smr_dev_discard(struct smr_dev *dev, uint64_t off, uint64_t len)
{
	uint64_t bs = dev->info.block_size;

	if (off % bs || len % bs || off > dev->info.capacity ||
	    len > dev->info.capacity - off)
		return -EINVAL;
	if (dev->info.read_only)
		return -EROFS;
	if (!dev->info.discard || !dev->ops->discard)
		return -EOPNOTSUPP;
	if (!len)
		return 0;
	return dev->ops->discard(dev, off, len);
}

/* ------------------------------------------------------------------------
 * Zone management
 * ------------------------------------------------------------------------ */

static int zone_op(struct smr_dev *dev, enum smr_zc_op op, uint32_t zno)
{
	int (*fn)(struct smr_dev *, uint32_t) = NULL;
	struct smr_zc_undo undo;
	struct smr_zone rep;
	bool resync = false;
	int rc;

	if (!zno_ok(dev, zno))
		return -EINVAL;
	if (dev->info.read_only)
		return -EROFS;
	switch (op) {
	case SMR_ZC_OP_RESET: fn = dev->ops->zone_reset; break;
	case SMR_ZC_OP_FINISH: fn = dev->ops->zone_finish; break;
	case SMR_ZC_OP_OPEN: fn = dev->ops->zone_open; break;
	case SMR_ZC_OP_CLOSE: fn = dev->ops->zone_close; break;
	}
	pthread_mutex_lock(&dev->zlock);
	for (;;) {
		if (op == SMR_ZC_OP_OPEN &&
		    smr_dev_wb_open_blocked(dev, zno, true))
			rc = SMR_ZC_BUSY_RETRY;
		else
			rc = smr_zc_op_prep(dev->zc, op, zno, &undo);
		if (rc != SMR_ZC_BUSY_RETRY)
			break;
		smr_dev_wb_hurry(dev);
		pthread_cond_wait(&dev->zcond, &dev->zlock);
	}
	pthread_mutex_unlock(&dev->zlock);
	if (rc == SMR_ZC_NOOP)
		return 0;
	if (rc)
		return rc;

	if (fn)
		rc = fn(dev, zno);
	else if (op == SMR_ZC_OP_RESET || op == SMR_ZC_OP_FINISH)
		rc = -EOPNOTSUPP;
	if (rc && dev->ops->report_zones)
		resync = dev->ops->report_zones(dev, zno, 1, &rep) == 0;

	pthread_mutex_lock(&dev->zlock);
	smr_zc_op_done(dev->zc, op, zno, rc == 0, &undo);
	if (resync)
		smr_zc_resync(dev->zc, zno, &rep);
	pthread_cond_broadcast(&dev->zcond);
	pthread_mutex_unlock(&dev->zlock);
	return rc;
}

int smr_dev_zone_reset(struct smr_dev *dev, uint32_t zno)
{
	return zone_op(dev, SMR_ZC_OP_RESET, zno);
}

int smr_dev_zone_finish(struct smr_dev *dev, uint32_t zno)
{
	return zone_op(dev, SMR_ZC_OP_FINISH, zno);
}

int smr_dev_zone_open(struct smr_dev *dev, uint32_t zno)
{
	return zone_op(dev, SMR_ZC_OP_OPEN, zno);
}

int smr_dev_zone_close(struct smr_dev *dev, uint32_t zno)
{
	return zone_op(dev, SMR_ZC_OP_CLOSE, zno);
}

int smr_dev_reset_all(struct smr_dev *dev)
{
	int rc;

	if (!dev->zc)
		return 0;
	for (uint32_t z = 0; z < dev->zc->nr_zones; z++) {
		uint64_t w = smr_zc_word(dev->zc, z);

		if (smr_zc_word_type(w) == SMR_ZONE_TYPE_CNV ||
		    smr_zc_word_cond(w) == SMR_ZONE_COND_EMPTY)
			continue;
		rc = smr_dev_zone_reset(dev, z);
		if (rc)
			return rc;
	}
	return 0;
}
