/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_dev_file.c - the file backend: an unzoned device on a regular file,
 * random writes, discard, flush, exclusive open, refused geometry.
 */
#include "testutil.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dev/dev.h"

#define FSIZE (8 * SMR_MIB)

static const char *mkfile(const char *tag, uint64_t size)
{
	static char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/img", smr_test_tmpdir(tag));
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_FATAL(ftruncate(fd, (off_t)size) == 0);
	close(fd);
	return path;
}

static void fill(void *buf, size_t len, uint64_t seed)
{
	uint64_t *p = buf;

	for (size_t i = 0; i < len / 8; i++)
		p[i] = seed * 0x9e3779b97f4a7c15ULL + i + 1;
}

static void test_geometry(void)
{
	const char *path = mkfile("file-geo", FSIZE);
	const struct smr_dev_info *info;
	struct smr_dev *dev = NULL;
	struct smr_zone z;

	SMR_ASSERT_OK(smr_dev_open(path, NULL, &dev));
	CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
	info = smr_dev_info(dev);
	CU_ASSERT_STRING_EQUAL(info->backend, "file");
	CU_ASSERT_EQUAL(info->kind, SMR_DEV_KIND_FILE);
	CU_ASSERT_EQUAL(info->capacity, FSIZE);
	CU_ASSERT_EQUAL(info->block_size, 4096);
	CU_ASSERT(!info->zoned);
	CU_ASSERT(!info->rotational);
	CU_ASSERT(info->discard);
	CU_ASSERT_EQUAL(info->nr_zones, 0);
	CU_ASSERT_STRING_EQUAL(smr_dev_path(dev), path);
	CU_ASSERT_EQUAL(smr_dev_zone_no(dev, 0), UINT32_MAX);
	SMR_ASSERT_RC(smr_dev_zone(dev, 0, &z), -EINVAL);
	SMR_ASSERT_RC(smr_dev_zone_reset(dev, 0), -EINVAL);
	CU_ASSERT_EQUAL(smr_dev_zone_cache_bytes(dev), 0);
	SMR_ASSERT_OK(smr_dev_reset_all(dev));
	SMR_ASSERT_OK(smr_dev_close(dev));

	/* The backend can be forced. */
	{
		struct smr_dev_opts o = { .backend = "file" };

		SMR_ASSERT_OK(smr_dev_open(path, &o, &dev));
		SMR_ASSERT_OK(smr_dev_close(dev));
		o.backend = "nosuch";
		SMR_ASSERT_RC(smr_dev_open(path, &o, &dev), -EINVAL);
	}
}

static void test_random_writes(void)
{
	const char *path = mkfile("file-rw", FSIZE);
	uint8_t *model = calloc(1, FSIZE);
	uint8_t *buf = smr_dev_buf_alloc(64 * 1024);
	uint8_t *r = smr_dev_buf_alloc(FSIZE);
	struct smr_dev *dev = NULL;
	uint64_t seed = 42;

	SMR_ASSERT_OK(smr_dev_open(path, NULL, &dev));
	CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
	/* Random offsets, in any order, overwriting each other. */
	for (int i = 0; i < 200; i++) {
		uint64_t blocks = 1 + smr_test_rand(&seed) % 16;
		uint64_t off = (smr_test_rand(&seed) % (FSIZE / 4096 - blocks)) *
			       4096;

		fill(buf, blocks * 4096, (uint64_t)i);
		SMR_ASSERT_OK(smr_dev_write(dev, buf, blocks * 4096, off));
		memcpy(model + off, buf, blocks * 4096);
	}
	SMR_ASSERT_OK(smr_dev_flush(dev));
	SMR_ASSERT_OK(smr_dev_read(dev, r, FSIZE, 0));
	CU_ASSERT_EQUAL(memcmp(r, model, FSIZE), 0);

	/* Discard punches a hole: reads as zeros, size unchanged. */
	SMR_ASSERT_OK(smr_dev_discard(dev, 1 * SMR_MIB, 256 * 1024));
	memset(model + SMR_MIB, 0, 256 * 1024);
	SMR_ASSERT_OK(smr_dev_read(dev, r, FSIZE, 0));
	CU_ASSERT_EQUAL(memcmp(r, model, FSIZE), 0);
	SMR_ASSERT_RC(smr_dev_discard(dev, 100, 4096), -EINVAL);
	SMR_ASSERT_RC(smr_dev_discard(dev, FSIZE - 4096, 8192), -EINVAL);

	/* Misaligned and out-of-range requests. */
	SMR_ASSERT_RC(smr_dev_write(dev, buf, 4096, 100), -EINVAL);
	SMR_ASSERT_RC(smr_dev_write(dev, buf, 4000, 0), -EINVAL);
	SMR_ASSERT_RC(smr_dev_read(dev, buf, 8192, FSIZE - 4096), -EINVAL);
	SMR_ASSERT_RC(smr_dev_read(dev, buf, 4096, FSIZE), -EINVAL);
	/* A buffer of any alignment is taken as it is (buffered I/O). */
	fill(buf, 64 * 1024, 99);
	SMR_ASSERT_OK(smr_dev_write(dev, buf + 1, 8192, 0));
	memcpy(model, buf + 1, 8192);
	SMR_ASSERT_OK(smr_dev_read(dev, buf + 16384 + 5, 8192, 0));
	CU_ASSERT_EQUAL(memcmp(buf + 16384 + 5, model, 8192), 0);
	SMR_ASSERT_OK(smr_dev_close(dev));

	/* Reopened: the data is there. */
	SMR_ASSERT_OK(smr_dev_open(path, NULL, &dev));
	SMR_ASSERT_OK(smr_dev_read(dev, r, FSIZE, 0));
	CU_ASSERT_EQUAL(memcmp(r, model, FSIZE), 0);
	SMR_ASSERT_OK(smr_dev_close(dev));

	free(model);
	smr_dev_buf_free(buf);
	smr_dev_buf_free(r);
}

static void test_refused(void)
{
	struct smr_dev_opts shared = { .shared = true };
	const char *path = mkfile("file-excl", FSIZE);
	struct smr_dev *a = NULL, *b = NULL;

	SMR_ASSERT_OK(smr_dev_open(path, NULL, &a));
	SMR_ASSERT_RC(smr_dev_open(path, NULL, &b), -EBUSY);
	CU_ASSERT_PTR_NULL(b);
	SMR_ASSERT_OK(smr_dev_open(path, &shared, &b));
	SMR_ASSERT_OK(smr_dev_close(b));
	SMR_ASSERT_OK(smr_dev_close(a));

	/* A size that is not a multiple of the block size, an empty file. */
	SMR_ASSERT_RC(smr_dev_open(mkfile("file-odd", FSIZE + 100), NULL, &a),
		      -EINVAL);
	SMR_ASSERT_RC(smr_dev_open(mkfile("file-empty", 0), NULL, &a), -EINVAL);
	SMR_ASSERT_RC(smr_dev_open(smr_test_missing("file-missing"), NULL, &a),
		      -ENOENT);
}

/*
 * A conventional block device, when SMR_TEST_BDEV names one whose contents
 * may be destroyed (a RAM disk in a test VM, for instance); skipped
 * otherwise. No test touches a real device unless told to.
 */
static void test_bdev(void)
{
	const char *path = getenv("SMR_TEST_BDEV");
	const struct smr_dev_info *info;
	struct smr_dev *dev = NULL, *other = NULL;
	uint8_t *w, *r;
	uint32_t bs;

	if (!path || !*path) {
		fprintf(stderr, "\n  (SMR_TEST_BDEV not set: skipped) ");
		return;
	}
	SMR_ASSERT_OK(smr_dev_open(path, NULL, &dev));
	CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
	info = smr_dev_info(dev);
	bs = info->block_size;
	fprintf(stderr, "\n  %s: %s, %llu bytes, block %u, rotational %d, "
		"discard %d ", path, smr_dev_kind_str(info->kind),
		(unsigned long long)info->capacity, bs, info->rotational,
		info->discard);
	CU_ASSERT_STRING_EQUAL(info->backend, "file");
	CU_ASSERT_EQUAL(info->kind, SMR_DEV_KIND_BDEV);
	CU_ASSERT(!info->zoned);
	CU_ASSERT(bs == 512 || bs == 4096);
	CU_ASSERT(info->capacity >= 2 * SMR_MIB);
	SMR_ASSERT_RC(smr_dev_open(path, NULL, &other), -EBUSY);

	w = smr_dev_buf_alloc(SMR_MIB);
	r = smr_dev_buf_alloc(SMR_MIB);
	fill(w, SMR_MIB, 77);
	/* Out of order, then read back in one piece. */
	SMR_ASSERT_OK(smr_dev_write(dev, w + 512 * 1024, 512 * 1024,
				    512 * 1024));
	SMR_ASSERT_OK(smr_dev_write(dev, w, bs, 0));
	SMR_ASSERT_OK(smr_dev_write(dev, w + bs, 512 * 1024 - bs, bs));
	SMR_ASSERT_OK(smr_dev_flush(dev));
	SMR_ASSERT_OK(smr_dev_read(dev, r, SMR_MIB, 0));
	CU_ASSERT_EQUAL(memcmp(r, w, SMR_MIB), 0);
	SMR_ASSERT_RC(smr_dev_write(dev, w, bs, bs / 2), -EINVAL);
	SMR_ASSERT_RC(smr_dev_read(dev, r, bs, info->capacity), -EINVAL);
	if (info->discard)
		SMR_ASSERT_OK(smr_dev_discard(dev, SMR_MIB, SMR_MIB));
	else
		SMR_ASSERT_RC(smr_dev_discard(dev, SMR_MIB, SMR_MIB),
			      -EOPNOTSUPP);
	SMR_ASSERT_OK(smr_dev_close(dev));
	smr_dev_buf_free(w);
	smr_dev_buf_free(r);
}

static const struct smr_test file_tests[] = {
	{ "geometry", test_geometry },
	{ "random_writes", test_random_writes },
	{ "refused", test_refused },
	{ "bdev", test_bdev },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	static const struct smr_suite suites[] = {
		{ "dev_file", file_tests },
		{ NULL, NULL },
	};

	smr_log_set_level((enum smr_log_level)(SMR_LOG_ERR - 1));
	return smr_test_main(argc, argv, suites);
}
