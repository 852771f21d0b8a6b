/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dev_zloop.c - the "zloop" backend: a zoned loop directory in the layout of
 * the Linux zloop driver (Documentation/admin-guide/blockdev/zoned_loop.rst).
 *
 * One file per zone: cnv-NNNNNN for the conventional zones at the start,
 * always zone-size long, and seq-NNNNNN for the sequential ones, whose size is
 * the write pointer. Reset truncates to 0, finish truncates to the zone size.
 * The driver keeps no other state in the directory; we add one small text
 * file, ZLOOP_PARAMS, holding the geometry and limits the directory was
 * created with (the driver opens its zone files by name and never looks at
 * other files, so the directory stays usable by it). Open and closed
 * conditions are not visible in file sizes: after a reopen every zone that is
 * neither empty nor full is closed, as the kernel driver reports it.
 *
 * On tmpfs a write into a zone file spends a good part of its time getting
 * pages for the file (allocation, charge, page cache insertion), in the
 * writer's thread. A thread of the handle allocates them a few MiB ahead of
 * the write pointers of the zones last written, with
 * fallocate(FALLOC_FL_KEEP_SIZE): the file size, which is the write pointer,
 * does not change, and the next reset or finish (a truncate) gives back
 * whatever of it lies past the size then.
 *
 * The zone rules are enforced by dev.c; this file does the raw file I/O.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "dev/dev_priv.h"

#define ZLOOP_PARAMS "zloop.params"
#define ZLOOP_MAX_ZONES (1U << 24)
/* Most zone files kept open at once (fewer under a low open file limit). */
#define ZL_FD_MAX 1024
#define ZL_NONE UINT32_MAX

/*
 * Preallocation: at most ZL_PA_AHEAD past the write pointer, for the
 * ZL_PA_ZONES zones last written, in calls of ZL_PA_CHUNK (the file's lock
 * is held across one, and a write to the file waits for it). The thread is
 * woken when a zone has less than half of ZL_PA_AHEAD left.
 */
#define ZL_PA_AHEAD (8 * SMR_MIB)
#define ZL_PA_CHUNK SMR_MIB
#define ZL_PA_ZONES 4
/* Shorter writes do not start preallocation in a zone: metadata and small
 * random writes come a few KiB at a time, and would each keep ZL_PA_AHEAD
 * of memory allocated for little gain. */
#define ZL_PA_MIN_WRITE (128 * 1024)

/* A zone being preallocated. */
struct zl_pa_zone {
	uint32_t zno;   /* ZL_NONE: the slot is free */
	uint64_t wp;    /* file offset the last write ended at */
	uint64_t end;   /* allocated (or tried) up to here */
	uint64_t stamp; /* of the last write: the oldest slot gives way */
};

/*
 * A cached zone file descriptor. Slots form a list in order of use, most
 * recent first; a pinned slot (an I/O through it is running or queued on a
 * ring) is never closed.
 */
struct zl_fd {
	int fd;
	uint32_t zno;
	uint32_t pins;
	uint32_t prev, next; /* the use list, ZL_NONE at its ends */
};

struct zloop {
	int dirfd;             /* the directory, holds the flock */
	int oflags;            /* O_RDONLY or O_RDWR */
	uint32_t nr_zones;
	uint32_t nr_cnv;
	uint64_t zone_size;
	uint64_t zone_cap;
	uint32_t zone_shift;
	unsigned long *dirty;  /* zones written since the last flush */

	/*
	 * Descriptor cache: a directory may hold far more zones than the
	 * process may open files (95,836 zones of a 23 TiB SMR disk against
	 * a limit of 20,000), so a zone file is opened on first use and kept
	 * in one of at most fd_max slots, the least recently used unpinned
	 * one giving way. When every slot is pinned, an I/O gets a descriptor
	 * of its own, closed when it is over. Protected by fd_lock.
	 */
	pthread_mutex_t fd_lock;
	uint32_t *slot_of;     /* per zone: its slot, or ZL_NONE */
	struct zl_fd *slots;
	uint32_t fd_max, fd_used;
	uint32_t mru, lru;     /* ends of the use list */

	/*
	 * Preallocation ahead of the write pointers (pa_on: a thread runs).
	 * Lock order: pa_io_lock, then pa_lock, then fd_lock. pa_io_lock is
	 * held across each fallocate and across each truncate, so that no
	 * fallocate runs into a zone while it is reset or finished.
	 */
	bool pa_on;
	pthread_t pa_thread;
	pthread_mutex_t pa_io_lock;
	pthread_mutex_t pa_lock;
	pthread_cond_t pa_cond;  /* work or stop, under pa_lock */
	bool pa_stop;            /* protected by pa_lock */
	uint64_t pa_clock;       /* protected by pa_lock */
	struct zl_pa_zone pa[ZL_PA_ZONES]; /* protected by pa_lock */
};

/* ------------------------------------------------------------------------
 * Parameters
 * ------------------------------------------------------------------------ */

/* Apply the defaults of struct smr_zloop_params and check consistency. */
static int params_normalise(const struct smr_zloop_params *in,
			    struct smr_zloop_params *p)
{
	uint64_t nr;

	*p = *in;
	if (!p->zone_size)
		p->zone_size = 256 * SMR_MIB;
	if (!p->zone_cap)
		p->zone_cap = p->zone_size;
	if (!p->block_size)
		p->block_size = 4096;
	if (p->block_size != 512 && p->block_size != 4096)
		return -EINVAL;
	if (!SMR_IS_POW2(p->zone_size) || p->zone_size < p->block_size)
		return -EINVAL;
	if (p->zone_cap > p->zone_size || p->zone_cap % p->block_size)
		return -EINVAL;
	if (!p->capacity || p->capacity % p->zone_size)
		return -EINVAL;
	nr = p->capacity / p->zone_size;
	if (nr > ZLOOP_MAX_ZONES || p->nr_cnv >= nr)
		return -EINVAL;
	if (p->max_open && p->max_active && p->max_open > p->max_active)
		return -EINVAL;
	return 0;
}

static bool params_equal(const struct smr_zloop_params *a,
			 const struct smr_zloop_params *b)
{
	return a->capacity == b->capacity && a->zone_size == b->zone_size &&
	       a->zone_cap == b->zone_cap && a->nr_cnv == b->nr_cnv &&
	       a->max_open == b->max_open && a->max_active == b->max_active &&
	       a->block_size == b->block_size;
}

/*
 * The line that hands the directory to the kernel driver, as a comment for
 * the reader of zloop.params: the driver wants sizes in MiB and finds the
 * device in BASE_DIR/ID, so the directory's parent and name fill those in.
 */
static void kernel_hint(char *buf, size_t len, const char *dir,
			const struct smr_zloop_params *p)
{
	char path[PATH_MAX], *slash, *id;
	int n;

	buf[0] = 0;
	if (p->capacity % SMR_MIB || p->zone_size % SMR_MIB ||
	    p->zone_cap % SMR_MIB || !realpath(dir, path))
		return;
	slash = strrchr(path, '/');
	if (!slash || slash == path)
		return;
	*slash = 0;
	id = slash + 1;
	if (!*id || strspn(id, "0123456789") != strlen(id))
		return;
	n = snprintf(buf, len,
		     "# For the kernel zloop driver (it ignores this file):\n"
		     "# echo \"add id=%s,capacity_mb=%llu,zone_size_mb=%llu,"
		     "zone_capacity_mb=%llu,conv_zones=%u,base_dir=%s\" "
		     "> /dev/zloop-control\n",
		     id, (unsigned long long)(p->capacity / SMR_MIB),
		     (unsigned long long)(p->zone_size / SMR_MIB),
		     (unsigned long long)(p->zone_cap / SMR_MIB), p->nr_cnv,
		     path);
	if (n < 0 || (size_t)n >= len)
		buf[0] = 0;
}

static int params_write(int dirfd, const char *dir,
			const struct smr_zloop_params *p)
{
	char buf[1024 + PATH_MAX], hint[256 + PATH_MAX];
	int len, fd, rc = 0;

	kernel_hint(hint, sizeof(hint), dir, p);
	len = snprintf(buf, sizeof(buf),
		       "# smrfs zoned loop directory: the zone files follow the "
		       "layout of the Linux zloop driver.\n%s"
		       "capacity=%llu\nzone_size=%llu\nzone_capacity=%llu\n"
		       "conv_zones=%u\nmax_open=%u\nmax_active=%u\n"
		       "block_size=%u\n",
		       hint, (unsigned long long)p->capacity,
		       (unsigned long long)p->zone_size,
		       (unsigned long long)p->zone_cap, p->nr_cnv, p->max_open,
		       p->max_active, p->block_size);
	if (len < 0 || (size_t)len >= sizeof(buf))
		return -ENAMETOOLONG;
	fd = openat(dirfd, ZLOOP_PARAMS ".tmp",
		    O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	rc = smr_dev_pwrite_full(fd, buf, (size_t)len, 0);
	if (!rc && fsync(fd))
		rc = -errno;
	close(fd);
	if (!rc && renameat(dirfd, ZLOOP_PARAMS ".tmp", dirfd, ZLOOP_PARAMS))
		rc = -errno;
	if (rc)
		unlinkat(dirfd, ZLOOP_PARAMS ".tmp", 0);
	return rc;
}

/* Read the parameters file: 0, -ENOENT if missing, -EINVAL if malformed. */
static int params_read(int dirfd, struct smr_zloop_params *p)
{
	char *line = NULL;
	size_t cap = 0;
	unsigned int seen = 0;
	FILE *f;
	int fd, rc = 0;

	memset(p, 0, sizeof(*p));
	fd = openat(dirfd, ZLOOP_PARAMS, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	while (getline(&line, &cap, f) > 0) {
		char key[32];
		unsigned long long v;

		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (sscanf(line, "%31[a-z_]=%llu", key, &v) != 2) {
			rc = -EINVAL;
			break;
		}
		if (!strcmp(key, "capacity"))
			p->capacity = v, seen |= 1;
		else if (!strcmp(key, "zone_size"))
			p->zone_size = v, seen |= 2;
		else if (!strcmp(key, "zone_capacity"))
			p->zone_cap = v, seen |= 4;
		else if (!strcmp(key, "conv_zones") && v <= UINT32_MAX)
			p->nr_cnv = (uint32_t)v, seen |= 8;
		else if (!strcmp(key, "max_open") && v <= UINT32_MAX)
			p->max_open = (uint32_t)v, seen |= 16;
		else if (!strcmp(key, "max_active") && v <= UINT32_MAX)
			p->max_active = (uint32_t)v, seen |= 32;
		else if (!strcmp(key, "block_size") && v <= UINT32_MAX)
			p->block_size = (uint32_t)v, seen |= 64;
		else {
			rc = -EINVAL;
			break;
		}
	}
	free(line);
	fclose(f);
	if (!rc && seen != 127)
		rc = -EINVAL;
	return rc;
}

static void zone_name(char *buf, size_t len, uint32_t zno, bool cnv)
{
	snprintf(buf, len, "%s-%06u", cnv ? "cnv" : "seq", zno);
}

static bool zone_file_exists(int dirfd, uint32_t zno, bool cnv)
{
	char name[32];
	struct stat st;

	zone_name(name, sizeof(name), zno, cnv);
	return fstatat(dirfd, name, &st, 0) == 0;
}

/* ------------------------------------------------------------------------
 * Creating a directory
 * ------------------------------------------------------------------------ */

int smr_zloop_create(const char *dir, const struct smr_zloop_params *in)
{
	struct smr_zloop_params p;
	uint32_t nr, created = 0;
	struct dirent *de;
	DIR *d;
	int dirfd, rc;

	if (!dir || !in)
		return -EINVAL;
	rc = params_normalise(in, &p);
	if (rc)
		return rc;
	nr = (uint32_t)(p.capacity / p.zone_size);
	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return -errno;
	rc = smr_dev_flock(dirfd, false);
	if (rc)
		goto out_close;

	/* Refuse a directory that already holds a device. */
	d = fdopendir(dup(dirfd));
	if (!d) {
		rc = -errno;
		goto out_close;
	}
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ZLOOP_PARAMS) ||
		    !strncmp(de->d_name, "cnv-", 4) ||
		    !strncmp(de->d_name, "seq-", 4)) {
			rc = -EEXIST;
			break;
		}
	}
	closedir(d);
	if (rc)
		goto out_close;

	for (created = 0; created < nr; created++) {
		bool cnv = created < p.nr_cnv;
		char name[32];
		int fd;

		zone_name(name, sizeof(name), created, cnv);
		fd = openat(dirfd, name,
			    O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0) {
			rc = -errno;
			goto out_unlink;
		}
		/* Conventional zone files are always zone-size long (sparse). */
		if (cnv && ftruncate(fd, (off_t)p.zone_size)) {
			rc = -errno;
			close(fd);
			unlinkat(dirfd, name, 0);
			goto out_unlink;
		}
		close(fd);
	}
	rc = params_write(dirfd, dir, &p);
	if (rc)
		goto out_unlink;
	if (fsync(dirfd))
		rc = -errno;
	close(dirfd);
	return rc;

out_unlink:
	while (created-- > 0) {
		char name[32];

		zone_name(name, sizeof(name), created, created < p.nr_cnv);
		unlinkat(dirfd, name, 0);
	}
out_close:
	close(dirfd);
	return rc;
}

/* ------------------------------------------------------------------------
 * Backend operations
 * ------------------------------------------------------------------------ */

static struct zloop *zl_of(const struct smr_dev *dev)
{
	return smr_dev_priv(dev);
}

static uint32_t zl_zone(const struct zloop *zl, uint64_t off)
{
	return (uint32_t)(off >> zl->zone_shift);
}

static void zl_mark_dirty(struct zloop *zl, uint32_t zno)
{
	const unsigned int bits = 8 * sizeof(unsigned long);

	__atomic_fetch_or(&zl->dirty[zno / bits], 1UL << (zno % bits),
			  __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------------
 * The descriptor cache
 * ------------------------------------------------------------------------ */

static void fd_unlink(struct zloop *zl, uint32_t s)
{
	struct zl_fd *f = &zl->slots[s];

	if (f->prev != ZL_NONE)
		zl->slots[f->prev].next = f->next;
	else
		zl->mru = f->next;
	if (f->next != ZL_NONE)
		zl->slots[f->next].prev = f->prev;
	else
		zl->lru = f->prev;
}

static void fd_push_mru(struct zloop *zl, uint32_t s)
{
	struct zl_fd *f = &zl->slots[s];

	f->prev = ZL_NONE;
	f->next = zl->mru;
	if (zl->mru != ZL_NONE)
		zl->slots[zl->mru].prev = s;
	else
		zl->lru = s;
	zl->mru = s;
}

static int zl_open_zone(struct zloop *zl, uint32_t zno)
{
	char name[32];
	int fd;

	zone_name(name, sizeof(name), zno, zno < zl->nr_cnv);
	fd = openat(zl->dirfd, name, zl->oflags | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* A slot to reuse: a free one, else the least recently used unpinned one
 * (its descriptor closed), else ZL_NONE. */
static uint32_t fd_victim(struct zloop *zl)
{
	uint32_t s;

	if (zl->fd_used < zl->fd_max)
		return zl->fd_used++;
	for (s = zl->lru; s != ZL_NONE; s = zl->slots[s].prev)
		if (!zl->slots[s].pins)
			break;
	if (s == ZL_NONE)
		return ZL_NONE;
	fd_unlink(zl, s);
	close(zl->slots[s].fd);
	zl->slot_of[zl->slots[s].zno] = ZL_NONE;
	return s;
}

/*
 * A descriptor of zone @zno, pinned until zl_fd_put(): >= 0, or a negative
 * errno if the zone file cannot be opened. When every slot is pinned, the
 * caller gets a descriptor of its own if @may_own, else -EAGAIN: I/O on a
 * ring may hold many descriptors at once, and must not hold more than the
 * cache's.
 */
static int zl_fd_get(struct zloop *zl, uint32_t zno, bool may_own)
{
	uint32_t s;
	int fd;

	pthread_mutex_lock(&zl->fd_lock);
	s = zl->slot_of[zno];
	if (s != ZL_NONE) {
		fd_unlink(zl, s);
		goto out_pin;
	}
	fd = zl_open_zone(zl, zno);
	if (fd < 0)
		goto out_unlock;
	s = fd_victim(zl);
	if (s == ZL_NONE) {
		/* All pinned: the descriptor is this one I/O's own. */
		if (!may_own) {
			close(fd);
			fd = -EAGAIN;
		}
		goto out_unlock;
	}
	zl->slots[s] = (struct zl_fd){ .fd = fd, .zno = zno };
	zl->slot_of[zno] = s;
out_pin:
	zl->slots[s].pins++;
	fd_push_mru(zl, s);
	fd = zl->slots[s].fd;
out_unlock:
	pthread_mutex_unlock(&zl->fd_lock);
	return fd;
}

/* Unpin descriptor @fd of zone @zno (closing it if it was an I/O's own). */
static void zl_fd_put(struct zloop *zl, uint32_t zno, int fd)
{
	uint32_t s;

	pthread_mutex_lock(&zl->fd_lock);
	s = zl->slot_of[zno];
	if (s != ZL_NONE && zl->slots[s].fd == fd)
		zl->slots[s].pins--;
	else
		close(fd);
	pthread_mutex_unlock(&zl->fd_lock);
}

/* How many descriptors to keep: ZL_FD_MAX, at most a quarter of the soft
 * open file limit (the rest is the program's), at most one per zone. */
static uint32_t zl_fd_budget(uint32_t nr_zones)
{
	struct rlimit rl;
	rlim_t max = ZL_FD_MAX;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY)
		max = SMR_MIN(max, SMR_MAX(rl.rlim_cur / 4, (rlim_t)8));
	return (uint32_t)SMR_MIN((rlim_t)nr_zones, max);
}

static int zl_fd_init(struct zloop *zl)
{
	zl->fd_max = zl_fd_budget(zl->nr_zones);
	zl->mru = zl->lru = ZL_NONE;
	zl->slot_of = malloc(zl->nr_zones * sizeof(*zl->slot_of));
	zl->slots = calloc(zl->fd_max, sizeof(*zl->slots));
	if (!zl->slot_of || !zl->slots)
		return -ENOMEM;
	for (uint32_t i = 0; i < zl->nr_zones; i++)
		zl->slot_of[i] = ZL_NONE;
	pthread_mutex_init(&zl->fd_lock, NULL);
	return 0;
}

/* ------------------------------------------------------------------------
 * Preallocation ahead of the write pointers
 * ------------------------------------------------------------------------ */

/* The slot of zone @zno, or NULL (pa_lock held). */
static struct zl_pa_zone *pa_find(struct zloop *zl, uint32_t zno)
{
	for (int i = 0; i < ZL_PA_ZONES; i++)
		if (zl->pa[i].zno == zno)
			return &zl->pa[i];
	return NULL;
}

/* How far zone slot @z should be allocated: ZL_PA_AHEAD past its write
 * pointer, not past the zone capacity. */
static uint64_t pa_limit(const struct zloop *zl, const struct zl_pa_zone *z)
{
	return SMR_MIN(z->wp + ZL_PA_AHEAD, zl->zone_cap);
}

/*
 * A write of @len to sequential zone @zno ended at file offset @wp: take
 * note, and wake the thread if the zone has less than half of ZL_PA_AHEAD
 * allocated ahead. A zone without a slot takes the one written longest ago,
 * if the write is at least ZL_PA_MIN_WRITE (what the old zone had allocated
 * stays until its reset or finish).
 */
static void zl_pa_note(struct zloop *zl, uint32_t zno, uint64_t wp,
		       uint64_t len)
{
	struct zl_pa_zone *z;
	bool wake;

	if (!zl->pa_on)
		return;
	pthread_mutex_lock(&zl->pa_lock);
	z = pa_find(zl, zno);
	if (!z && len < ZL_PA_MIN_WRITE) {
		pthread_mutex_unlock(&zl->pa_lock);
		return;
	}
	if (!z) {
		z = &zl->pa[0];
		for (int i = 1; i < ZL_PA_ZONES; i++)
			if (zl->pa[i].stamp < z->stamp)
				z = &zl->pa[i];
		z->zno = zno;
		z->end = wp;
	}
	z->wp = wp;
	z->end = SMR_MAX(z->end, wp);
	z->stamp = ++zl->pa_clock;
	wake = z->end < pa_limit(zl, z) && z->end - wp < ZL_PA_AHEAD / 2;
	pthread_mutex_unlock(&zl->pa_lock);
	if (wake)
		pthread_cond_signal(&zl->pa_cond);
}

/* Forget zone @zno (pa_io_lock and pa_lock held). */
static void pa_drop_locked(struct zloop *zl, uint32_t zno)
{
	struct zl_pa_zone *z = pa_find(zl, zno);

	if (z)
		*z = (struct zl_pa_zone){ .zno = ZL_NONE };
}

/* The next piece to allocate, 0 if none (pa_lock held). */
static int pa_pick(struct zloop *zl, uint32_t *zno, uint64_t *from,
		   uint64_t *len)
{
	struct zl_pa_zone *best = NULL;

	for (int i = 0; i < ZL_PA_ZONES; i++) {
		struct zl_pa_zone *z = &zl->pa[i];

		if (z->zno == ZL_NONE || z->end >= pa_limit(zl, z))
			continue;
		/* The zone nearest to running out first. */
		if (!best || z->end - z->wp < best->end - best->wp)
			best = z;
	}
	if (!best)
		return 0;
	*zno = best->zno;
	*from = best->end;
	*len = SMR_MIN(pa_limit(zl, best) - best->end, (uint64_t)ZL_PA_CHUNK);
	return 1;
}

static void *pa_main(void *arg)
{
	struct zloop *zl = arg;
	uint32_t zno;
	uint64_t from, len;

	for (;;) {
		struct zl_pa_zone *z;
		int fd, got, rc = 0;
		bool stop;

		pthread_mutex_lock(&zl->pa_lock);
		while (!zl->pa_stop && !pa_pick(zl, &zno, &from, &len))
			pthread_cond_wait(&zl->pa_cond, &zl->pa_lock);
		stop = zl->pa_stop;
		pthread_mutex_unlock(&zl->pa_lock);
		if (stop)
			break;
		/* Again under pa_io_lock: a truncate may have come between. */
		pthread_mutex_lock(&zl->pa_io_lock);
		pthread_mutex_lock(&zl->pa_lock);
		got = pa_pick(zl, &zno, &from, &len);
		pthread_mutex_unlock(&zl->pa_lock);
		if (got) {
			fd = zl_fd_get(zl, zno, true);
			rc = fd < 0 ? fd : 0;
			if (fd >= 0) {
				if (fallocate(fd, FALLOC_FL_KEEP_SIZE, (off_t)from,
					      (off_t)len))
					rc = -errno;
				zl_fd_put(zl, zno, fd);
			}
			pthread_mutex_lock(&zl->pa_lock);
			z = pa_find(zl, zno);
			/* Failed (the backing store is full, say): not
			 * retried before the zone is written on. */
			if (z)
				z->end = rc ? pa_limit(zl, z) : from + len;
			pthread_mutex_unlock(&zl->pa_lock);
		}
		pthread_mutex_unlock(&zl->pa_io_lock);
	}
	return NULL;
}

/*
 * Start the thread where it pays: @mode > 0 always, < 0 never, 0 when the
 * directory is on tmpfs (on disk filesystems a buffered write gets its
 * pages in the page cache all the same, and delayed allocation already
 * keeps block allocation out of it). No thread is not an error.
 */
static void zl_pa_start(struct zloop *zl, int mode, const char *path)
{
	struct statfs sfs;
	int rc;

	if (zl->oflags == O_RDONLY || mode < 0)
		return;
	if (mode == 0 && (fstatfs(zl->dirfd, &sfs) ||
			  sfs.f_type != TMPFS_MAGIC))
		return;
	for (int i = 0; i < ZL_PA_ZONES; i++)
		zl->pa[i] = (struct zl_pa_zone){ .zno = ZL_NONE };
	pthread_mutex_init(&zl->pa_io_lock, NULL);
	pthread_mutex_init(&zl->pa_lock, NULL);
	pthread_cond_init(&zl->pa_cond, NULL);
	rc = pthread_create(&zl->pa_thread, NULL, pa_main, zl);
	if (rc) {
		smr_warn("%s: no preallocation thread: %s", path, strerror(rc));
		pthread_cond_destroy(&zl->pa_cond);
		pthread_mutex_destroy(&zl->pa_lock);
		pthread_mutex_destroy(&zl->pa_io_lock);
		return;
	}
	zl->pa_on = true;
}

static void zl_pa_stop(struct zloop *zl)
{
	if (!zl->pa_on)
		return;
	pthread_mutex_lock(&zl->pa_lock);
	zl->pa_stop = true;
	pthread_cond_signal(&zl->pa_cond);
	pthread_mutex_unlock(&zl->pa_lock);
	pthread_join(zl->pa_thread, NULL);
	pthread_cond_destroy(&zl->pa_cond);
	pthread_mutex_destroy(&zl->pa_lock);
	pthread_mutex_destroy(&zl->pa_io_lock);
	zl->pa_on = false;
}

static void zl_free(struct zloop *zl)
{
	if (!zl)
		return;
	zl_pa_stop(zl);
	if (zl->slots) {
		for (uint32_t i = 0; i < zl->fd_used; i++)
			close(zl->slots[i].fd);
		pthread_mutex_destroy(&zl->fd_lock);
	}
	free(zl->slots);
	free(zl->slot_of);
	free(zl->dirty);
	if (zl->dirfd >= 0)
		close(zl->dirfd);
	free(zl);
}

static void zl_close(struct smr_dev *dev)
{
	zl_free(zl_of(dev));
}

static int zl_read(struct smr_dev *dev, void *buf, size_t len, uint64_t off)
{
	struct zloop *zl = zl_of(dev);
	uint32_t zno = zl_zone(zl, off);
	int fd = zl_fd_get(zl, zno, true), rc;

	if (fd < 0)
		return fd;
	rc = smr_dev_pread_full(fd, buf, len,
				off - ((uint64_t)zno << zl->zone_shift));
	zl_fd_put(zl, zno, fd);
	return rc;
}

static int zl_write(struct smr_dev *dev, const void *buf, size_t len,
		    uint64_t off)
{
	struct zloop *zl = zl_of(dev);
	uint32_t zno = zl_zone(zl, off);
	uint64_t foff = off - ((uint64_t)zno << zl->zone_shift);
	int fd = zl_fd_get(zl, zno, true), rc;

	if (fd < 0)
		return fd;
	/* Unchecked handles let writes through to us: refuse what the kernel
	 * driver refuses (not at the write pointer, beyond the capacity). */
	if (dev->unchecked && zno >= zl->nr_cnv) {
		struct stat st;

		rc = fstat(fd, &st) ? -errno : 0;
		if (!rc && ((uint64_t)st.st_size != foff ||
			    foff + len > zl->zone_cap))
			rc = -EIO;
		if (rc)
			goto out_put;
	}
	zl_mark_dirty(zl, zno);
	rc = smr_dev_pwrite_full(fd, buf, len, foff);
	/* A sequential zone's size is its write pointer: cut off whatever
	 * part of a failed write landed, so that the zone is as it was. */
	if (rc && zno >= zl->nr_cnv && ftruncate(fd, (off_t)foff))
		smr_warn("%s: zone %u: cannot undo a failed write",
			 smr_dev_path(dev), zno);
out_put:
	zl_fd_put(zl, zno, fd);
	if (!rc && zno >= zl->nr_cnv)
		zl_pa_note(zl, zno, foff + len, len);
	return rc;
}

static int zl_flush(struct smr_dev *dev)
{
	const unsigned int bits = 8 * sizeof(unsigned long);
	struct zloop *zl = zl_of(dev);
	uint32_t words = SMR_DIV_ROUND_UP(zl->nr_zones, bits);
	int fd, rc = 0;

	for (uint32_t w = 0; w < words; w++) {
		unsigned long m = __atomic_exchange_n(&zl->dirty[w], 0UL,
						      __ATOMIC_ACQ_REL);

		while (m) {
			uint32_t zno = w * bits + (uint32_t)__builtin_ctzl(m);

			m &= m - 1;
			/* Syncing a file needs a descriptor of it, not the
			 * one it was written through. */
			fd = zl_fd_get(zl, zno, true);
			if (fd < 0 || fdatasync(fd)) {
				if (!rc)
					rc = fd < 0 ? fd : -errno;
				zl_mark_dirty(zl, zno);
			}
			if (fd >= 0)
				zl_fd_put(zl, zno, fd);
		}
	}
	return rc;
}

static int zl_report(struct smr_dev *dev, uint32_t first, uint32_t nr,
		     struct smr_zone *zones)
{
	struct zloop *zl = zl_of(dev);
	uint64_t bs = dev->info.block_size;

	for (uint32_t i = 0; i < nr; i++) {
		uint32_t zno = first + i;
		struct smr_zone *z = &zones[i];
		struct stat st;
		char name[32];

		if (zno >= zl->nr_zones)
			return -EINVAL;
		zone_name(name, sizeof(name), zno, zno < zl->nr_cnv);
		if (fstatat(zl->dirfd, name, &st, 0))
			return -errno;
		z->no = zno;
		z->start = (uint64_t)zno << zl->zone_shift;
		z->len = zl->zone_size;
		if (zno < zl->nr_cnv) {
			if ((uint64_t)st.st_size != zl->zone_size) {
				smr_err("%s: cnv-%06u: size %lld is not the zone size",
					smr_dev_path(dev), zno,
					(long long)st.st_size);
				return -EINVAL;
			}
			z->cap = zl->zone_size;
			z->wp = z->start;
			z->type = SMR_ZONE_TYPE_CNV;
			z->cond = SMR_ZONE_COND_NOT_WP;
			continue;
		}
		z->cap = zl->zone_cap;
		z->type = SMR_ZONE_TYPE_SEQ;
		if ((uint64_t)st.st_size % bs ||
		    ((uint64_t)st.st_size > zl->zone_cap &&
		     (uint64_t)st.st_size != zl->zone_size)) {
			smr_err("%s: seq-%06u: size %lld is not a write pointer",
				smr_dev_path(dev), zno, (long long)st.st_size);
			return -EINVAL;
		}
		if (st.st_size == 0) {
			z->cond = SMR_ZONE_COND_EMPTY;
			z->wp = z->start;
		} else if ((uint64_t)st.st_size >= zl->zone_cap) {
			/* Written to capacity, or finished (zone size). */
			z->cond = SMR_ZONE_COND_FULL;
			z->wp = z->start + zl->zone_cap;
		} else {
			z->cond = SMR_ZONE_COND_CLOSED;
			z->wp = z->start + (uint64_t)st.st_size;
		}
	}
	return 0;
}

static int zl_truncate(struct smr_dev *dev, uint32_t zno, uint64_t size)
{
	struct zloop *zl = zl_of(dev);
	int fd, rc;

	/* No preallocation into the zone while, or after, it is cut. */
	if (zl->pa_on) {
		pthread_mutex_lock(&zl->pa_io_lock);
		pthread_mutex_lock(&zl->pa_lock);
		pa_drop_locked(zl, zno);
		pthread_mutex_unlock(&zl->pa_lock);
	}
	fd = zl_fd_get(zl, zno, true);
	rc = fd < 0 ? fd : 0;
	if (fd >= 0) {
		zl_mark_dirty(zl, zno);
		rc = ftruncate(fd, (off_t)size) ? -errno : 0;
		zl_fd_put(zl, zno, fd);
	}
	if (zl->pa_on)
		pthread_mutex_unlock(&zl->pa_io_lock);
	return rc;
}

static int zl_reset(struct smr_dev *dev, uint32_t zno)
{
	return zl_truncate(dev, zno, 0);
}

static int zl_finish(struct smr_dev *dev, uint32_t zno)
{
	return zl_truncate(dev, zno, zl_of(dev)->zone_size);
}

/* A conventional zone's file gets a hole; a sequential zone keeps what it
 * holds below its write pointer until it is reset (discard is a hint). */
static int zl_discard(struct smr_dev *dev, uint64_t off, uint64_t len)
{
	struct zloop *zl = zl_of(dev);
	uint64_t end = off + len;
	int rc = 0;

	while (!rc && off < end) {
		uint32_t zno = zl_zone(zl, off);
		uint64_t zstart = (uint64_t)zno << zl->zone_shift;
		uint64_t n = SMR_MIN(end, zstart + zl->zone_size) - off;
		int fd;

		if (zno >= zl->nr_cnv)
			break; /* the sequential zones follow the last one */
		fd = zl_fd_get(zl, zno, true);
		if (fd < 0)
			return fd;
		zl_mark_dirty(zl, zno);
		if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      (off_t)(off - zstart), (off_t)n))
			rc = errno == ENOSYS ? -EOPNOTSUPP : -errno;
		zl_fd_put(zl, zno, fd);
		off += n;
	}
	return rc;
}

static int zl_io_target(struct smr_dev *dev, uint64_t off, size_t len,
			int *fd, uint64_t *file_off)
{
	struct zloop *zl = zl_of(dev);
	uint32_t zno = zl_zone(zl, off);

	(void)len;
	if (dev->unchecked)
		return -EOPNOTSUPP; /* zl_write checks the write pointer */
	*fd = zl_fd_get(zl, zno, false);
	if (*fd < 0)
		return *fd == -EAGAIN ? -EOPNOTSUPP : *fd;
	*file_off = off - ((uint64_t)zno << zl->zone_shift);
	/* Writes through io_uring also need flushing. */
	zl_mark_dirty(zl, zno);
	return 0;
}

static void zl_io_release(struct smr_dev *dev, uint64_t off, int fd)
{
	struct zloop *zl = zl_of(dev);

	zl_fd_put(zl, zl_zone(zl, off), fd);
}

static int zl_open(const char *path, const struct smr_dev_opts *opts,
		   struct smr_dev **devp)
{
	struct smr_zloop_params p, want;
	struct smr_dev_info info = { 0 };
	struct zloop *zl;
	int rc;

	zl = calloc(1, sizeof(*zl));
	if (!zl)
		return -ENOMEM;
	zl->oflags = opts->read_only ? O_RDONLY : O_RDWR;
	zl->dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (zl->dirfd < 0) {
		rc = errno == ENOTDIR ? -EINVAL : -errno;
		goto out_free;
	}
	if (!opts->shared) {
		rc = smr_dev_flock(zl->dirfd, opts->read_only);
		if (rc)
			goto out_free;
	}
	rc = params_read(zl->dirfd, &p);
	if (rc) {
		smr_err("%s: not a zoned loop directory (%s: %s)", path,
			ZLOOP_PARAMS, strerror(-rc));
		rc = rc == -ENOENT || rc == -EINVAL ? -EINVAL : rc;
		goto out_free;
	}
	if (params_normalise(&p, &p)) {
		smr_err("%s: inconsistent %s", path, ZLOOP_PARAMS);
		rc = -EINVAL;
		goto out_free;
	}
	if (opts->zloop) {
		rc = params_normalise(opts->zloop, &want);
		if (rc || !params_equal(&p, &want)) {
			smr_err("%s: created with other zone parameters", path);
			rc = -EINVAL;
			goto out_free;
		}
	}
	zl->zone_size = p.zone_size;
	zl->zone_cap = p.zone_cap;
	zl->zone_shift = (uint32_t)__builtin_ctzll(p.zone_size);
	zl->nr_zones = (uint32_t)(p.capacity / p.zone_size);
	zl->nr_cnv = p.nr_cnv;
	zl->dirty = calloc(SMR_DIV_ROUND_UP(zl->nr_zones, 8 * sizeof(long)),
			   sizeof(long));
	rc = zl->dirty ? zl_fd_init(zl) : -ENOMEM;
	if (rc)
		goto out_free;
	/* Every zone file is there and may be opened as we will (the
	 * descriptors themselves are opened on demand). */
	for (uint32_t i = 0; i < zl->nr_zones; i++) {
		bool cnv = i < zl->nr_cnv;
		char name[32];

		zone_name(name, sizeof(name), i, cnv);
		if (faccessat(zl->dirfd, name, opts->read_only ? R_OK :
			      R_OK | W_OK, AT_EACCESS)) {
			rc = -errno;
			smr_err("%s: zone file %s: %s", path, name,
				strerror(-rc));
			if (rc == -ENOENT)
				rc = -EINVAL;
			goto out_free;
		}
		/* The other kind of file for this zone means the directory
		 * was made with another number of conventional zones. */
		if (zone_file_exists(zl->dirfd, i, !cnv)) {
			smr_err("%s: zone %u has both a cnv and a seq file",
				path, i);
			rc = -EINVAL;
			goto out_free;
		}
	}
	if (zone_file_exists(zl->dirfd, zl->nr_zones, false) ||
	    zone_file_exists(zl->dirfd, zl->nr_zones, true)) {
		smr_err("%s: more zone files than the capacity holds", path);
		rc = -EINVAL;
		goto out_free;
	}

	info.kind = SMR_DEV_KIND_ZLOOP;
	info.block_size = p.block_size;
	info.capacity = p.capacity;
	info.zoned = true;
	info.read_only = opts->read_only;
	info.discard = !opts->read_only && zl->nr_cnv;
	info.nr_zones = zl->nr_zones;
	info.max_open = p.max_open;
	info.max_active = p.max_active;
	zl_pa_start(zl, opts->zloop_prealloc, path);
	rc = smr_dev_create(&smr_dev_zloop_ops, zl, &info, path, devp);
	if (rc)
		goto out_free;
	return 0;

out_free:
	zl_free(zl);
	return rc;
}

const struct smr_dev_backend_ops smr_dev_zloop_ops = {
	.name = "zloop",
	.open = zl_open,
	.close = zl_close,
	.read = zl_read,
	.write = zl_write,
	.flush = zl_flush,
	.report_zones = zl_report,
	.zone_reset = zl_reset,
	.zone_finish = zl_finish,
	.discard = zl_discard,
	.io_target = zl_io_target,
	.io_release = zl_io_release,
};
