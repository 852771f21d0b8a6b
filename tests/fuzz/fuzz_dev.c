/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuzz_dev.c - the devices whole-image targets lay their input on (fuzz.h). */
#include "fuzz.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dev/dev.h"
#include "util/smr.h"

#define FUZZ_FILE_SIZE (24ULL << 20)

struct fuzz_dev {
	char path[300];
	int fd[FUZZ_NR_ZONES]; /* file: fd[0]; zoned: one per zone file */
	bool made;
};

static struct fuzz_dev fuzz_devs[FUZZ_GEOM_NR];

uint64_t fuzz_dev_size(enum fuzz_geom g)
{
	return g == FUZZ_GEOM_FILE ? FUZZ_FILE_SIZE :
				     FUZZ_NR_ZONES * FUZZ_ZONE_SIZE;
}

static uint32_t fuzz_nr_cnv(enum fuzz_geom g)
{
	return g == FUZZ_GEOM_ZCNV ? 1 : 0;
}

static int fuzz_dev_make(enum fuzz_geom g)
{
	static const char *const name[FUZZ_GEOM_NR] = { "img", "zcnv", "zlog" };
	struct fuzz_dev *d = &fuzz_devs[g];
	char zf[340];

	snprintf(d->path, sizeof(d->path), "%s/%s", fuzz_tmpdir(), name[g]);
	if (g == FUZZ_GEOM_FILE) {
		d->fd[0] = open(d->path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (d->fd[0] < 0)
			return -errno;
	} else {
		struct smr_zloop_params p = {
			.capacity = fuzz_dev_size(g),
			.zone_size = FUZZ_ZONE_SIZE,
			.nr_cnv = fuzz_nr_cnv(g),
		};
		int rc = smr_zloop_create(d->path, &p);

		if (rc)
			return rc;
		for (uint32_t z = 0; z < FUZZ_NR_ZONES; z++) {
			snprintf(zf, sizeof(zf), "%s/%s-%06u", d->path,
				 z < p.nr_cnv ? "cnv" : "seq", z);
			d->fd[z] = open(zf, O_RDWR | O_CLOEXEC);
			if (d->fd[z] < 0)
				return -errno;
		}
	}
	d->made = true;
	return 0;
}

const char *fuzz_dev_path(enum fuzz_geom g)
{
	struct fuzz_dev *d = &fuzz_devs[g];

	if (!d->made && fuzz_dev_make(g)) {
		fprintf(stderr, "fuzz: cannot make device %d\n", (int)g);
		abort();
	}
	return d->path;
}

/* Write the pages of @img in [start, start + len) to @fd at offset 0. */
static int fuzz_dev_pages(int fd, const struct fuzz_img *img, uint64_t start,
			  uint64_t len)
{
	for (size_t i = 0; i < img->nr; i++) {
		uint64_t off = img->idx[i] * FUZZ_PAGE;

		if (off < start || off >= start + len)
			continue;
		size_t n = (size_t)SMR_MIN((uint64_t)FUZZ_PAGE,
					   start + len - off);

		if (pwrite(fd, img->page[i], n, (off_t)(off - start)) !=
		    (ssize_t)n)
			return -EIO;
	}
	return 0;
}

int fuzz_dev_write(enum fuzz_geom g, const struct fuzz_img *img,
		   const uint32_t *wp)
{
	struct fuzz_dev *d = &fuzz_devs[g];
	int rc;

	fuzz_dev_path(g);
	if (g == FUZZ_GEOM_FILE) {
		if (ftruncate(d->fd[0], 0) ||
		    ftruncate(d->fd[0], (off_t)FUZZ_FILE_SIZE))
			return -errno;
		return fuzz_dev_pages(d->fd[0], img, 0, FUZZ_FILE_SIZE);
	}
	for (uint32_t z = 0; z < FUZZ_NR_ZONES; z++) {
		uint64_t start = z * FUZZ_ZONE_SIZE, len = FUZZ_ZONE_SIZE;

		if (z >= fuzz_nr_cnv(g)) {
			if (wp) {
				len = SMR_MIN((uint64_t)wp[z], len) /
				      FUZZ_PAGE * FUZZ_PAGE;
			} else {
				len = 0;
				for (size_t i = 0; i < img->nr; i++) {
					uint64_t off = img->idx[i] * FUZZ_PAGE;

					if (off >= start && off < start + FUZZ_ZONE_SIZE)
						len = off - start + FUZZ_PAGE;
				}
			}
		}
		if (ftruncate(d->fd[z], 0) || ftruncate(d->fd[z], (off_t)len))
			return -errno;
		rc = fuzz_dev_pages(d->fd[z], img, start, len);
		if (rc)
			return rc;
	}
	return 0;
}
