/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dev_zbd.c - the zbd backend: kernel zoned block devices (host-managed, and
 * host-aware driven as host-managed) through libzbd. The only file of smrfs
 * that includes <libzbd/zbd.h>.
 *
 * The device is opened with O_DIRECT: the data goes straight to the zones, so
 * that a write the kernel acknowledged is at the write pointer the zone report
 * gives, and a flush is the drive's cache flush. dev.c keeps the zone cache
 * and checks the zone rules before calling us; the kernel checks them again
 * and fails a write that is not at the write pointer with EIO (NVMe, null_blk)
 * or EREMOTEIO (SCSI ZBC). Both are passed up unchanged: dev.c and the layers
 * above treat either as a failed write.
 *
 * libzbd reports errors inconsistently (-1 with errno set, or a negative
 * errno); zbd_rc() turns both into a negative errno.
 *
 * Built without libzbd (./configure --without-libzbd), the backend exists but
 * its open fails with -EOPNOTSUPP, so that a zoned block device gets a clear
 * error instead of being taken for a regular one.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dev/dev_priv.h"

#ifdef HAVE_LIBZBD

#include <libzbd/zbd.h>

/* Zones asked from the kernel per report call. */
#define ZBD_REPORT_CHUNK 1024

struct zbd_priv {
	int fd;
	uint64_t zone_size; /* bytes; every zone but the last has this size */
	struct zbd_info zi;
};

/*
 * The kernel fails a write or zone operation that would exceed the open or
 * active zone limit with ETOOMANYREFS or EOVERFLOW (BLK_STS_ZONE_OPEN_RESOURCE,
 * BLK_STS_ZONE_ACTIVE_RESOURCE); dev.h promises -EIO for a refused write or
 * zone operation, so that callers need to know only EIO and EREMOTEIO.
 */
static int zbd_errno(int rc)
{
	if (rc == -ETOOMANYREFS || rc == -EOVERFLOW)
		return -EIO;
	return rc;
}

/* The negative errno of a failed libzbd call that returned @ret. */
static int zbd_rc(int ret, int err)
{
	if (ret < -1)
		return zbd_errno(ret);
	return err > 0 ? zbd_errno(-err) : -EIO;
}

static int zbd_open_dev(const char *path, const struct smr_dev_opts *opts,
			struct smr_dev **devp)
{
	struct smr_dev_info info;
	struct zbd_priv *p;
	struct stat st;
	int flags, fd, rc;

	if (stat(path, &st))
		return -errno;
	if (!S_ISBLK(st.st_mode))
		return -EINVAL;
	errno = 0;
	rc = zbd_device_is_zoned(path);
	if (rc < 0)
		return zbd_rc(rc, errno);
	if (rc == 0)
		return -EINVAL;

	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	flags = (opts->read_only ? O_RDONLY : O_RDWR) | O_DIRECT | O_CLOEXEC;
	/* A block device opened O_EXCL cannot be mounted or opened O_EXCL by
	 * anyone else: the kernel's own "in use" check, next to the flock. */
	if (!opts->shared)
		flags |= O_EXCL;
	errno = 0;
	fd = zbd_open(path, flags, &p->zi);
	if (fd < 0) {
		rc = zbd_rc(fd, errno);
		goto out_free;
	}
	p->fd = fd;
	/* Some libzbd versions return a closed descriptor when reading the
	 * device information fails: make sure it is ours. */
	if (zbd_get_info(fd, &p->zi)) {
		rc = -EIO;
		goto out_free;
	}
	rc = smr_dev_flock(fd, opts->shared);
	if (rc)
		goto out_close;
	if (p->zi.model != ZBD_DM_HOST_MANAGED &&
	    p->zi.model != ZBD_DM_HOST_AWARE) {
		rc = -EINVAL;
		goto out_close;
	}
	if (!p->zi.zone_size || !p->zi.lblock_size || !p->zi.nr_zones) {
		rc = -EINVAL;
		goto out_close;
	}
	p->zone_size = p->zi.zone_size;

	memset(&info, 0, sizeof(info));
	info.kind = SMR_DEV_KIND_ZBD;
	info.block_size = p->zi.lblock_size;
	info.capacity = p->zi.nr_sectors << 9;
	info.zoned = true;
	info.host_aware = p->zi.model == ZBD_DM_HOST_AWARE;
	info.rotational = smr_dev_sysfs_rotational(st.st_rdev);
	info.discard = false;
	info.read_only = opts->read_only;
	info.direct_io = true;
	info.max_transfer = smr_dev_sysfs_max_transfer(st.st_rdev);
	info.nr_zones = p->zi.nr_zones;
	info.max_open = p->zi.max_nr_open_zones;
	info.max_active = p->zi.max_nr_active_zones;

	rc = smr_dev_create(&smr_dev_zbd_ops, p, &info, path, devp);
	if (rc)
		goto out_close;
	return 0;

out_close:
	zbd_close(p->fd);
out_free:
	free(p);
	return rc;
}

static void zbd_close_dev(struct smr_dev *dev)
{
	struct zbd_priv *p = smr_dev_priv(dev);

	zbd_close(p->fd);
	free(p);
}

static int zbd_read(struct smr_dev *dev, void *buf, size_t len, uint64_t off)
{
	struct zbd_priv *p = smr_dev_priv(dev);

	return smr_dev_pread_full(p->fd, buf, len, off);
}

static int zbd_write(struct smr_dev *dev, const void *buf, size_t len,
		     uint64_t off)
{
	struct zbd_priv *p = smr_dev_priv(dev);

	return zbd_errno(smr_dev_pwrite_full(p->fd, buf, len, off));
}

static int zbd_flush(struct smr_dev *dev)
{
	struct zbd_priv *p = smr_dev_priv(dev);

	return fdatasync(p->fd) ? -errno : 0;
}

static void zbd_to_smr_zone(const struct zbd_zone *z, uint32_t no,
			    struct smr_zone *out)
{
	out->start = zbd_zone_start(z);
	out->len = zbd_zone_len(z);
	out->cap = zbd_zone_capacity(z);
	if (!out->cap || out->cap > out->len)
		out->cap = out->len;
	out->no = no;
	out->cond = zbd_zone_cond(z);
	switch (zbd_zone_type(z)) {
	case ZBD_ZONE_TYPE_CNV:
		out->type = SMR_ZONE_TYPE_CNV;
		break;
	case ZBD_ZONE_TYPE_SWP:
		out->type = SMR_ZONE_TYPE_SEQ_PREF;
		break;
	default:
		out->type = SMR_ZONE_TYPE_SEQ;
		break;
	}
	/* The kernel's write pointer of a zone without one is meaningless
	 * (often start + len of a full zone): use what struct smr_zone says. */
	switch (out->cond) {
	case SMR_ZONE_COND_NOT_WP:
	case SMR_ZONE_COND_OFFLINE:
		out->wp = out->start;
		break;
	case SMR_ZONE_COND_FULL:
	case SMR_ZONE_COND_READONLY:
		out->wp = out->start + out->cap;
		break;
	default:
		out->wp = zbd_zone_wp(z);
		if (out->wp < out->start || out->wp > out->start + out->cap)
			out->wp = out->start + out->cap;
		break;
	}
	if (out->type == SMR_ZONE_TYPE_CNV) {
		out->cond = SMR_ZONE_COND_NOT_WP;
		out->wp = out->start;
	}
}

static int zbd_report(struct smr_dev *dev, uint32_t first, uint32_t nr,
		      struct smr_zone *zones)
{
	struct zbd_priv *p = smr_dev_priv(dev);
	unsigned int chunk = SMR_MIN(nr, ZBD_REPORT_CHUNK);
	struct zbd_zone *zz;
	uint32_t done = 0;
	int rc = 0;

	if (!nr)
		return 0;
	zz = calloc(chunk, sizeof(*zz));
	if (!zz)
		return -ENOMEM;
	while (done < nr) {
		unsigned int n = SMR_MIN(nr - done, chunk);
		unsigned int got = n;
		uint64_t ofst = (uint64_t)(first + done) * p->zone_size;
		int ret;

		errno = 0;
		ret = zbd_report_zones(p->fd, ofst, (uint64_t)n * p->zone_size,
				       ZBD_RO_ALL, zz, &got);
		if (ret) {
			rc = zbd_rc(ret, errno);
			goto out;
		}
		if (got != n) {
			rc = -EIO;
			goto out;
		}
		for (unsigned int i = 0; i < n; i++)
			zbd_to_smr_zone(&zz[i], first + done + i,
					&zones[done + i]);
		done += n;
	}
out:
	free(zz);
	return rc;
}

static int zbd_zone_mgmt(struct smr_dev *dev, uint32_t zno,
			 enum zbd_zone_op op)
{
	struct zbd_priv *p = smr_dev_priv(dev);
	int ret;

	errno = 0;
	ret = zbd_zones_operation(p->fd, op, smr_dev_zone_start(dev, zno),
				  smr_dev_zone_len(dev, zno));
	return ret ? zbd_rc(ret, errno) : 0;
}

static int zbd_reset(struct smr_dev *dev, uint32_t zno)
{
	return zbd_zone_mgmt(dev, zno, ZBD_OP_RESET);
}

static int zbd_finish(struct smr_dev *dev, uint32_t zno)
{
	return zbd_zone_mgmt(dev, zno, ZBD_OP_FINISH);
}

static int zbd_zopen(struct smr_dev *dev, uint32_t zno)
{
	return zbd_zone_mgmt(dev, zno, ZBD_OP_OPEN);
}

/*
 * Closing an open zone that holds no data makes it empty on ZBC and ZAC
 * drives and null_blk, but closed (and still active) on NVMe ZNS drives. The
 * zone cache follows the first rule, so reset such a zone: empty, it no
 * longer counts against the active limit, as the cache assumes.
 */
static int zbd_zclose(struct smr_dev *dev, uint32_t zno)
{
	struct zbd_priv *p = smr_dev_priv(dev);
	uint64_t start = smr_dev_zone_start(dev, zno);
	struct zbd_zone z;
	unsigned int n = 1;
	int rc, ret;

	rc = zbd_zone_mgmt(dev, zno, ZBD_OP_CLOSE);
	if (rc || smr_dev_zone_wp(dev, zno) != start)
		return rc;
	errno = 0;
	ret = zbd_report_zones(p->fd, start, 1, ZBD_RO_ALL, &z, &n);
	if (ret)
		return zbd_rc(ret, errno);
	if (n == 1 && zbd_zone_closed(&z) && zbd_zone_wp(&z) == start)
		rc = zbd_zone_mgmt(dev, zno, ZBD_OP_RESET);
	return rc;
}

static int zbd_io_target(struct smr_dev *dev, uint64_t off, size_t len,
			 int *fd, uint64_t *file_off)
{
	struct zbd_priv *p = smr_dev_priv(dev);

	*fd = p->fd;
	*file_off = off;
	return 0;
}

const struct smr_dev_backend_ops smr_dev_zbd_ops = {
	.name = "zbd",
	.open = zbd_open_dev,
	.close = zbd_close_dev,
	.read = zbd_read,
	.write = zbd_write,
	.flush = zbd_flush,
	.report_zones = zbd_report,
	.zone_reset = zbd_reset,
	.zone_finish = zbd_finish,
	.zone_open = zbd_zopen,
	.zone_close = zbd_zclose,
	.discard = NULL,
	.io_target = zbd_io_target,
};

#else /* !HAVE_LIBZBD */

static int zbd_open_unsupported(const char *path,
				const struct smr_dev_opts *opts,
				struct smr_dev **devp)
{
	smr_err("%s: a zoned block device, but this build has no libzbd "
		"support (configured --without-libzbd)", path);
	return -EOPNOTSUPP;
}

const struct smr_dev_backend_ops smr_dev_zbd_ops = {
	.name = "zbd",
	.open = zbd_open_unsupported,
};

#endif /* HAVE_LIBZBD */
