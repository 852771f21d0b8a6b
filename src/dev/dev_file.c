/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dev_file.c - the "file" backend: a regular file or a conventional block
 * device. Not zoned: random writes anywhere below the capacity. Regular files
 * use buffered I/O and a 4096-byte block; block devices their logical block
 * size. Discard punches a hole (files) or issues BLKDISCARD (block devices).
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#ifdef HAVE_LINUX_FS_H
#include <linux/fs.h>
#endif

#include "dev/dev_priv.h"

#define FILE_BLOCK_SIZE 4096

struct file_dev {
	int fd;
	bool bdev;
};

static struct file_dev *fd_of(const struct smr_dev *dev)
{
	return smr_dev_priv(dev);
}

static void file_close(struct smr_dev *dev)
{
	struct file_dev *f = fd_of(dev);

	close(f->fd);
	free(f);
}

static int file_read(struct smr_dev *dev, void *buf, size_t len, uint64_t off)
{
	return smr_dev_pread_full(fd_of(dev)->fd, buf, len, off);
}

static int file_write(struct smr_dev *dev, const void *buf, size_t len,
		      uint64_t off)
{
	return smr_dev_pwrite_full(fd_of(dev)->fd, buf, len, off);
}

static int file_flush(struct smr_dev *dev)
{
	return fdatasync(fd_of(dev)->fd) ? -errno : 0;
}

static int file_discard(struct smr_dev *dev, uint64_t off, uint64_t len)
{
	struct file_dev *f = fd_of(dev);

	if (f->bdev) {
#ifdef BLKDISCARD
		uint64_t range[2] = { off, len };

		return ioctl(f->fd, BLKDISCARD, range) ? -errno : 0;
#else
		return -EOPNOTSUPP;
#endif
	}
	if (fallocate(f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)off, (off_t)len))
		return errno == ENOSYS ? -EOPNOTSUPP : -errno;
	return 0;
}

static int file_io_target(struct smr_dev *dev, uint64_t off, size_t len,
			  int *fd, uint64_t *file_off)
{
	(void)len;
	*fd = fd_of(dev)->fd;
	*file_off = off;
	return 0;
}

/* Whether the block device @rdev can discard (sysfs discard_max_bytes). */
static bool bdev_can_discard(dev_t rdev)
{
	char path[PATH_MAX];
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path),
		 "/sys/dev/block/%u:%u/queue/discard_max_bytes", major(rdev),
		 minor(rdev));
	f = fopen(path, "re");
	if (!f)
		return false;
	if (fscanf(f, "%llu", &v) != 1)
		v = 0;
	fclose(f);
	return v != 0;
}

static int file_open(const char *path, const struct smr_dev_opts *opts,
		     struct smr_dev **devp)
{
	struct smr_dev_info info = { 0 };
	struct file_dev *f;
	struct stat st;
	int rc;

	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->fd = open(path, (opts->read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (f->fd < 0) {
		rc = errno == EISDIR ? -EINVAL : -errno;
		goto out_free;
	}
	if (fstat(f->fd, &st)) {
		rc = -errno;
		goto out_close;
	}
	if (!opts->shared) {
		rc = smr_dev_flock(f->fd, opts->read_only);
		if (rc)
			goto out_close;
	}
	if (S_ISREG(st.st_mode)) {
		info.kind = SMR_DEV_KIND_FILE;
		info.block_size = FILE_BLOCK_SIZE;
		info.capacity = (uint64_t)st.st_size;
		info.rotational = false;
		info.discard = true;
	} else if (S_ISBLK(st.st_mode)) {
#if defined(BLKSSZGET) && defined(BLKGETSIZE64)
		int bs = 0;
		uint64_t size = 0;

		if (ioctl(f->fd, BLKSSZGET, &bs) ||
		    ioctl(f->fd, BLKGETSIZE64, &size)) {
			rc = -errno;
			goto out_close;
		}
		f->bdev = true;
		info.kind = SMR_DEV_KIND_BDEV;
		info.block_size = (uint32_t)bs;
		info.capacity = size;
		info.rotational = smr_dev_sysfs_rotational(st.st_rdev);
		info.discard = bdev_can_discard(st.st_rdev);
#else
		rc = -EOPNOTSUPP;
		goto out_close;
#endif
	} else {
		rc = -EINVAL;
		goto out_close;
	}
	if (!info.capacity || !info.block_size ||
	    info.capacity % info.block_size) {
		smr_err("%s: size %llu is not a multiple of the block size %u",
			path, (unsigned long long)info.capacity,
			info.block_size);
		rc = -EINVAL;
		goto out_close;
	}
	info.read_only = opts->read_only;
	rc = smr_dev_create(&smr_dev_file_ops, f, &info, path, devp);
	if (rc)
		goto out_close;
	return 0;

out_close:
	close(f->fd);
out_free:
	free(f);
	return rc;
}

const struct smr_dev_backend_ops smr_dev_file_ops = {
	.name = "file",
	.open = file_open,
	.close = file_close,
	.read = file_read,
	.write = file_write,
	.flush = file_flush,
	.discard = file_discard,
	.io_target = file_io_target,
};
