// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * crash.c - the crash-consistency sweep of the whole filesystem, in the
 * manner of CrashMonkey/ACE (docs/design/crash.md).
 *
 * For each workload: restore the device to its initial state (mkfs and a
 * fixed set of files), stack a fault device on it, open the engine and the
 * namespace as the daemon does, and run the workload while the fault device
 * records every write, flush and zone operation; after each operation take
 * a snapshot of the visible state. Then, for every flush boundary and
 * sampled writes between flushes (unflushed writes kept, dropped at random
 * per zone suffix, or the last write torn at a block), replay that prefix of
 * the log onto a fresh copy of the initial device and check the crash state:
 *
 *  1. fsck (the checker of fsck.smrfs, read-only) finds no problem;
 *  2. the filesystem opens, and its visible state equals the snapshot after
 *     one operation k, where k is at least the last operation whose fsync or
 *     sync returned before the crash point, and at most the operation that
 *     was running at it (a valid prefix of the workload, never less than
 *     what was made durable);
 *  3. it takes a new file and an fsync, closes cleanly, and fsck still
 *     finds nothing.
 *
 * Exit status 0 when every crash state passed, 1 when one failed, 2 on a
 * usage or setup error.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cow/cow.h"
#include "dev/dev.h"
#include "dev/fault.h"
#include "fsck/fsck.h"
#include "namespace/ns.h"
#include "testutil.h"
#include "crash/crash.h"

/* ------------------------------------------------------------------------
 * Devices
 * ------------------------------------------------------------------------ */

struct cr_devcfg {
	const char *name;
	bool zoned;
	struct smr_zloop_params zp;
	uint64_t file_size;
};

#define MiB (1024ULL * 1024)
/* The block size of every device here: the unit a write is torn at. */
#define CR_BLOCK 4096

static const struct cr_devcfg cr_devs[] = {
	/* An SMR disk: conventional zones first, then sequential ones. */
	{ "zloop", true, { .capacity = 32 * MiB, .zone_size = MiB,
			   .nr_cnv = 2 }, 0 },
	/* A ZNS SSD: no conventional zone, capacity below the zone size,
	 * open and active limits. */
	{ "zns", true, { .capacity = 40 * MiB, .zone_size = 2 * MiB,
			 .zone_cap = 1536 * 1024, .max_open = 8,
			 .max_active = 8 }, 0 },
	/* A regular file. */
	{ "file", false, { 0 }, 32 * MiB },
};

/* The small zoned device of the cleaner workloads. */
static const struct cr_devcfg cr_clean_dev = {
	"zclean", true, { .capacity = 16 * MiB, .zone_size = MiB, .nr_cnv = 2 },
	0
};

/* A device image kept in memory: its files (one for a regular file, the
 * zone files and parameters of a zoned loop directory), data regions only. */
struct cr_region {
	uint64_t off, len;
	uint8_t *data;
};

struct cr_file {
	char name[256];
	uint64_t size;
	struct cr_region *r;
	size_t nr;
};

struct cr_image {
	struct cr_file *f;
	size_t nr;
};

static int cr_file_save(const char *path, struct cr_file *cf)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	off_t off = 0;
	int rc = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		rc = -errno;
		goto out;
	}
	cf->size = (uint64_t)st.st_size;
	for (;;) {
		off_t d = lseek(fd, off, SEEK_DATA), h;
		struct cr_region *r;

		if (d < 0)
			break; /* ENXIO: no more data */
		h = lseek(fd, d, SEEK_HOLE);
		if (h < 0) {
			rc = -errno;
			goto out;
		}
		r = realloc(cf->r, (cf->nr + 1) * sizeof(*r));
		if (!r) {
			rc = -ENOMEM;
			goto out;
		}
		cf->r = r;
		r = &cf->r[cf->nr];
		r->off = (uint64_t)d;
		r->len = (uint64_t)(h - d);
		r->data = malloc(r->len);
		if (!r->data ||
		    pread(fd, r->data, r->len, d) != (ssize_t)r->len) {
			free(r->data);
			rc = -EIO;
			goto out;
		}
		cf->nr++;
		off = h;
	}
out:
	close(fd);
	return rc;
}

static int cr_image_save(const char *path, bool dir, struct cr_image *im)
{
	DIR *d;
	struct dirent *de;
	int rc = 0;

	memset(im, 0, sizeof(*im));
	if (!dir) {
		im->f = calloc(1, sizeof(*im->f));
		if (!im->f)
			return -ENOMEM;
		im->nr = 1;
		return cr_file_save(path, &im->f[0]);
	}
	d = opendir(path);
	if (!d)
		return -errno;
	while (!rc && (de = readdir(d))) {
		char p[4400];
		struct cr_file *f;

		if (de->d_name[0] == '.')
			continue;
		f = realloc(im->f, (im->nr + 1) * sizeof(*f));
		if (!f) {
			rc = -ENOMEM;
			break;
		}
		im->f = f;
		f = &im->f[im->nr++];
		memset(f, 0, sizeof(*f));
		snprintf(f->name, sizeof(f->name), "%s", de->d_name);
		snprintf(p, sizeof(p), "%s/%s", path, de->d_name);
		rc = cr_file_save(p, f);
	}
	closedir(d);
	return rc;
}

static int cr_image_restore(const struct cr_image *im, const char *path,
			    bool dir)
{
	for (size_t i = 0; i < im->nr; i++) {
		const struct cr_file *f = &im->f[i];
		char p[4400];
		int fd, rc = 0;

		if (dir)
			snprintf(p, sizeof(p), "%s/%s", path, f->name);
		else
			snprintf(p, sizeof(p), "%s", path);
		fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			return -errno;
		for (size_t k = 0; k < f->nr && !rc; k++)
			if (pwrite(fd, f->r[k].data, f->r[k].len,
				   (off_t)f->r[k].off) != (ssize_t)f->r[k].len)
				rc = -EIO;
		if (!rc && ftruncate(fd, (off_t)f->size))
			rc = -errno;
		close(fd);
		if (rc)
			return rc;
	}
	return 0;
}

static void cr_image_free(struct cr_image *im)
{
	for (size_t i = 0; i < im->nr; i++) {
		for (size_t k = 0; k < im->f[i].nr; k++)
			free(im->f[i].r[k].data);
		free(im->f[i].r);
	}
	free(im->f);
	memset(im, 0, sizeof(*im));
}

/* ------------------------------------------------------------------------
 * Log messages: kept, and shown only when a crash state fails
 * ------------------------------------------------------------------------ */

#define CR_LOG_LINES 48

static char cr_log[CR_LOG_LINES][256];
static unsigned int cr_log_n;
static bool cr_verbose;

static void cr_log_sink(enum smr_log_level level, const char *msg)
{
	snprintf(cr_log[cr_log_n++ % CR_LOG_LINES], sizeof(cr_log[0]),
		 "  log<%d> %s", (int)level, msg);
	if (cr_verbose)
		fprintf(stderr, "smrfs: %s\n", msg);
}

static void cr_log_dump(void)
{
	unsigned int first = cr_log_n > CR_LOG_LINES ? cr_log_n - CR_LOG_LINES :
						      0;

	for (unsigned int i = first; i < cr_log_n; i++)
		fprintf(stderr, "%s\n", cr_log[i % CR_LOG_LINES]);
	cr_log_n = 0;
}

/* ------------------------------------------------------------------------
 * The run
 * ------------------------------------------------------------------------ */

struct cr_ctx {
	const struct cr_devcfg *dev;
	char path[4096];        /* the device the workload and checks use */
	struct cr_image initial;
	bool full;              /* the whole crash-point space */
	uint64_t window;        /* if not 0: only crash points this many
				 * records around a zone operation */
	unsigned int max_print; /* failures shown in detail */
	uint64_t rng;
	/* Counters */
	uint64_t workloads, states, failures, skipped, records;
	uint64_t resets, finishes; /* zone operations in the logs */
};

/* What one recorded workload left. */
struct cr_rec {
	const struct cr_workload *w;
	struct smr_fault *f;
	size_t nops;
	uint64_t *b;    /* b[k]: log records after k operations */
	bool *durable;  /* durable[k]: operation k (1-based) was an fsync or
			 * sync that succeeded */
	int *rc;        /* rc[k]: its result */
	char **snap;    /* snap[k]: the visible state after k operations */
};

static void cr_rec_free(struct cr_rec *r)
{
	if (r->snap)
		for (size_t k = 0; k <= r->nops; k++)
			if (k == 0 || r->snap[k] != r->snap[k - 1])
				free(r->snap[k]);
	free(r->snap);
	free(r->b);
	free(r->durable);
	free(r->rc);
	smr_fault_free(r->f);
	memset(r, 0, sizeof(*r));
}

static struct smr_cow_opts cr_cow_opts = {
	.commit_secs = 3600, /* commits only where the workload asks */
	.gc_off = true,      /* the cleaner only where the workload runs it */
	.fsync_log = true,   /* fsync writes log records (--fsync commit) */
};

static int cr_fs_open(struct smr_dev *dev, struct cr_fs *fs)
{
	int rc = smr_cow_open(dev, &cr_cow_opts, &fs->cow);

	if (rc)
		return rc;
	rc = smr_ns_open(fs->cow, NULL, &fs->ns);
	if (rc) {
		smr_cow_close(fs->cow);
		fs->cow = NULL;
	}
	return rc;
}

static int cr_fs_close(struct cr_fs *fs)
{
	smr_ns_close(fs->ns);
	fs->ns = NULL;
	int rc = smr_cow_close(fs->cow);

	fs->cow = NULL;
	return rc;
}

static int cr_setup_error(const char *what, int rc)
{
	fprintf(stderr, "crash: %s: %s\n", what, strerror(-rc));
	cr_log_dump();
	return rc;
}

/* Make the initial device: mkfs, the namespace, the initial files. */
static int cr_make_initial(struct cr_ctx *cx, int (*init)(struct cr_fs *))
{
	const struct cr_devcfg *d = cx->dev;
	struct smr_dev *dev;
	struct cr_fs fs;
	int rc;
	static const struct smr_ns_cred root = { .uid = 0 };

	snprintf(cx->path, sizeof(cx->path), "%s/%s",
		 smr_test_tmpdir("crash"), d->name);
	if (d->zoned) {
		rc = smr_zloop_create(cx->path, &d->zp);
	} else {
		int fd = open(cx->path, O_RDWR | O_CREAT | O_TRUNC, 0644);

		rc = fd < 0 ? -errno : 0;
		if (!rc && ftruncate(fd, (off_t)d->file_size))
			rc = -errno;
		if (fd >= 0)
			close(fd);
	}
	if (rc)
		return cr_setup_error("create device", rc);
	rc = smr_dev_open(cx->path, NULL, &dev);
	if (rc)
		return cr_setup_error("open device", rc);
	rc = smr_cow_format(dev, NULL, NULL);
	if (!rc)
		rc = smr_cow_open(dev, &cr_cow_opts, &fs.cow);
	if (!rc) {
		rc = smr_ns_mkfs(fs.cow, &root);
		if (!rc)
			rc = smr_ns_open(fs.cow, NULL, &fs.ns);
		if (!rc) {
			rc = init(&fs);
			smr_ns_close(fs.ns);
		}
		int rc2 = smr_cow_close(fs.cow);

		rc = rc ? rc : rc2;
	}
	smr_dev_close(dev);
	if (rc)
		return cr_setup_error("mkfs and initial state", rc);
	rc = cr_image_save(cx->path, d->zoned, &cx->initial);
	return rc ? cr_setup_error("save initial image", rc) : 0;
}

/* Run @w on the initial device through a recording fault device. */
static int cr_record(struct cr_ctx *cx, const struct cr_workload *w,
		     struct cr_rec *r)
{
	struct smr_dev *lower = NULL, *fdev = NULL;
	struct cr_fs fs = { 0 };
	int rc, err = 0;

	memset(r, 0, sizeof(*r));
	r->w = w;
	r->nops = w->nr_ops;
	r->b = calloc(w->nr_ops + 1, sizeof(*r->b));
	r->durable = calloc(w->nr_ops + 1, sizeof(*r->durable));
	r->rc = calloc(w->nr_ops + 1, sizeof(*r->rc));
	r->snap = calloc(w->nr_ops + 1, sizeof(*r->snap));
	if (!r->b || !r->durable || !r->rc || !r->snap)
		return -ENOMEM;
	rc = cr_image_restore(&cx->initial, cx->path, cx->dev->zoned);
	if (!rc)
		rc = smr_dev_open(cx->path, NULL, &lower);
	if (!rc)
		rc = smr_fault_open(lower, &r->f, &fdev);
	if (!rc)
		rc = cr_fs_open(fdev, &fs);
	if (rc)
		goto out;
	r->b[0] = smr_fault_nr_records(r->f);
	r->snap[0] = cr_snapshot(&fs, &err);
	for (size_t k = 1; k <= w->nr_ops && !err; k++) {
		const struct cr_op *op = &w->ops[k - 1];

		r->rc[k] = cr_op_run(&fs, op, w->seed * 1000 + k);
		r->b[k] = smr_fault_nr_records(r->f);
		r->durable[k] = cr_op_is_persist(op) && r->rc[k] == 0;
		if (cr_op_is_persist(op))
			r->snap[k] = r->snap[k - 1];
		else
			r->snap[k] = cr_snapshot(&fs, &err);
		if (cr_verbose) {
			char s[160];

			cr_op_str(op, s, sizeof(s));
			fprintf(stderr, "  op %zu: %s = %d (records %" PRIu64
				")\n", k, s, r->rc[k], r->b[k]);
		}
	}
	smr_fault_set_recording(r->f, false);
	rc = err;
	if (rc)
		fprintf(stderr, "crash: %s: snapshot: %s\n", w->name,
			strerror(-rc));
	cr_fs_close(&fs);
out:
	if (fdev)
		smr_dev_close(fdev);
	if (lower)
		smr_dev_close(lower);
	return rc;
}

/* One crash state. */
struct cr_point {
	uint64_t nr; /* records of the log replayed */
	struct smr_replay_opts o;
};

static const char *cr_mode_str(const struct smr_replay_opts *o)
{
	if (o->flags & SMR_REPLAY_TEAR_LAST)
		return "torn";
	if (o->flags & SMR_REPLAY_DROP_RANDOM)
		return "random-drop";
	if (o->flags & SMR_REPLAY_DROP_UNFLUSHED)
		return "drop-unflushed";
	return "kept";
}

static void cr_print_diff(const char *label, const char *want,
			  const char *got)
{
	const char *a = want, *b = got;
	unsigned int shown = 0;

	fprintf(stderr, "  against %s:\n", label);
	while ((*a || *b) && shown < 12) {
		const char *ea = strchr(a, '\n'), *eb = strchr(b, '\n');
		size_t la = ea ? (size_t)(ea - a) : strlen(a);
		size_t lb = eb ? (size_t)(eb - b) : strlen(b);

		if (la != lb || memcmp(a, b, la)) {
			fprintf(stderr, "    want %.*s\n    got  %.*s\n",
				(int)la, a, (int)lb, b);
			shown++;
		}
		a += la + (ea ? 1 : 0);
		b += lb + (eb ? 1 : 0);
	}
}

static void cr_fail(struct cr_ctx *cx, const struct cr_rec *r,
		    const struct cr_point *p, const char *why, int rc)
{
	struct smr_fault_rec fr = { 0 };

	cx->failures++;
	if (cx->failures > cx->max_print)
		return;
	if (p->nr)
		smr_fault_record(r->f, p->nr - 1, &fr);
	fprintf(stderr, "FAIL %s on %s: crash after record %" PRIu64 " of %"
		PRIu64 " (%s %" PRIu64 "+%" PRIu64 ", %s", r->w->name,
		cx->dev->name, p->nr, smr_fault_nr_records(r->f),
		p->nr ? smr_fault_op_str(fr.op) : "none", fr.off, fr.len,
		cr_mode_str(&p->o));
	if (p->o.flags & SMR_REPLAY_TEAR_LAST)
		fprintf(stderr, " at %" PRIu64, p->o.tear_bytes);
	if (p->o.flags & SMR_REPLAY_DROP_RANDOM)
		fprintf(stderr, " seed %" PRIu64, p->o.seed);
	fprintf(stderr, "): %s%s%s\n", why, rc ? ": " : "",
		rc ? strerror(-rc) : "");
	for (size_t k = 1; k <= r->nops; k++) {
		char s[160];

		cr_op_str(&r->w->ops[k - 1], s, sizeof(s));
		fprintf(stderr, "  op %zu: %s = %d (records to %" PRIu64 ")\n",
			k, s, r->rc[k], r->b[k]);
	}
	cr_log_dump();
}

/* The operations whose end state a crash at @nr may show: [*lo, *hi]. */
static void cr_range(const struct cr_rec *r, uint64_t nr, size_t *lo,
		     size_t *hi)
{
	*lo = 0;
	*hi = r->nops;
	for (size_t k = 1; k <= r->nops; k++)
		if (r->durable[k] && r->b[k] <= nr)
			*lo = k;
	for (size_t k = 0; k <= r->nops; k++)
		if (r->b[k] >= nr) {
			*hi = k;
			break;
		}
	/* An fsync that had nothing to write ends where the operation
	 * before it did. */
	if (*hi < *lo)
		*hi = *lo;
}

static int cr_fsck(struct cr_ctx *cx, struct smr_fsck_result *res)
{
	struct smr_fsck_opts o = { .device = cx->path, .scrub = true };

	return smr_fsck_run(&o, res);
}

/* Build and check one crash state. */
static void cr_check(struct cr_ctx *cx, const struct cr_rec *r,
		     struct cr_point *p)
{
	static const struct smr_ns_cred root = { .uid = 0 };
	struct smr_fsck_result res;
	struct smr_dev *dev = NULL;
	struct cr_fs fs = { 0 };
	size_t lo, hi, k;
	char *snap = NULL;
	int rc, err = 0;

	cr_log_n = 0;
	cx->states++;
	rc = cr_image_restore(&cx->initial, cx->path, cx->dev->zoned);
	if (rc) {
		cr_fail(cx, r, p, "restore", rc);
		return;
	}
	rc = smr_dev_open(cx->path, NULL, &dev);
	if (!rc) {
		/* A random drop can leave more zones active than the device
		 * allows: another seed then. */
		for (int t = 0; t < 4; t++) {
			rc = smr_fault_replay(r->f, p->nr, &p->o, dev);
			if (rc != -EIO || !(p->o.flags & SMR_REPLAY_DROP_RANDOM))
				break;
			smr_dev_close(dev);
			dev = NULL;
			p->o.seed += 1000;
			rc = cr_image_restore(&cx->initial, cx->path,
						       cx->dev->zoned);
			if (!rc)
				rc = smr_dev_open(cx->path, NULL, &dev);
			if (rc)
				break;
		}
		if (rc == -EIO && (p->o.flags & SMR_REPLAY_DROP_RANDOM)) {
			cx->skipped++;
			cx->states--;
			smr_dev_close(dev);
			return;
		}
		int rc2 = smr_dev_close(dev);

		rc = rc ? rc : rc2;
		dev = NULL;
	}
	if (rc) {
		cr_fail(cx, r, p, "replay", rc);
		return;
	}

	/* 1. fsck.smrfs -n finds nothing. */
	if (cr_fsck(cx, &res) != SMR_FSCK_OK) {
		cr_fail(cx, r, p, "fsck before the mount", 0);
		return;
	}

	/* 2. It mounts and shows a state between the durable and the
	 * running operation. */
	rc = smr_dev_open(cx->path, NULL, &dev);
	if (!rc)
		rc = cr_fs_open(dev, &fs);
	if (rc) {
		cr_fail(cx, r, p, "mount", rc);
		goto out;
	}
	snap = cr_snapshot(&fs, &err);
	if (!snap) {
		cr_fail(cx, r, p, "reading the tree", err);
		goto out_close;
	}
	cr_range(r, p->nr, &lo, &hi);
	for (k = lo; k <= hi; k++)
		if (!strcmp(snap, r->snap[k]))
			break;
	if (k > hi) {
		char label[64];

		cr_fail(cx, r, p, "the state is none a valid prefix left", 0);
		if (cx->failures <= cx->max_print) {
			fprintf(stderr, "  expected the state after operation "
				"%zu..%zu\n", lo, hi);
			snprintf(label, sizeof(label), "after operation %zu",
				 lo);
			cr_print_diff(label, r->snap[lo], snap);
			if (hi != lo) {
				snprintf(label, sizeof(label),
					 "after operation %zu", hi);
				cr_print_diff(label, r->snap[hi], snap);
			}
		}
		goto out_close;
	}

	/* 3. It takes new writes. */
	{
		struct smr_ns_attr a;
		uint8_t buf[6000];
		ssize_t n = -EIO;

		memset(buf, 0x5a, sizeof(buf));
		rc = smr_ns_create(fs.ns, &root, SMR_NS_ROOT, "after-crash",
				   S_IFREG | 0644, &a);
		if (!rc) {
			n = smr_ns_write(fs.ns, &root, a.ino, 100, buf,
					 sizeof(buf));
			smr_ns_release(fs.ns, a.ino);
		}
		rc = rc ? rc : n < 0 ? (int)n : 0;
		if (!rc)
			rc = smr_ns_fsync(fs.ns, a.ino, false);
		if (rc) {
			cr_fail(cx, r, p, "a write after the crash", rc);
			goto out_close;
		}
	}
	rc = cr_fs_close(&fs);
	if (!rc)
		rc = smr_dev_close(dev);
	dev = NULL;
	if (rc) {
		cr_fail(cx, r, p, "unmount after the new write", rc);
		goto out;
	}
	if (cr_fsck(cx, &res) != SMR_FSCK_OK)
		cr_fail(cx, r, p, "fsck after the new write", 0);
	goto out;

out_close:
	cr_fs_close(&fs);
out:
	if (dev)
		smr_dev_close(dev);
	free(snap);
}

/* The crash right after write record @j: @mode 0 every unflushed write
 * kept, 1 a random suffix of each zone's dropped, 2 write @j torn at a
 * block boundary (the others kept). */
static void cr_check_write(struct cr_ctx *cx, const struct cr_rec *r,
			   uint64_t j, int mode)
{
	struct cr_point p = { .nr = j + 1 };
	struct smr_fault_rec wr;

	smr_fault_record(r->f, j, &wr);
	if (mode == 1) {
		p.o.flags = SMR_REPLAY_DROP_RANDOM;
		p.o.seed = smr_test_rand(&cx->rng);
	} else if (mode == 2) {
		uint64_t blocks = wr.len / CR_BLOCK;

		p.o.flags = SMR_REPLAY_TEAR_LAST;
		p.o.tear_bytes = blocks > 1 ?
			(1 + smr_test_rand(&cx->rng) % (blocks - 1)) *
			CR_BLOCK : 0;
	}
	cr_check(cx, r, &p);
}

/* Whether record @i is within cx->window records of a zone reset or
 * finish (always, without a window). */
static bool cr_near_zone_op(const struct cr_ctx *cx, const struct cr_rec *r,
			    uint64_t i)
{
	uint64_t n = smr_fault_nr_records(r->f);
	uint64_t from = i > cx->window ? i - cx->window : 0;
	uint64_t to = SMR_MIN(n, i + cx->window + 1);

	if (!cx->window)
		return true;
	for (uint64_t j = from; j < to; j++) {
		struct smr_fault_rec fr;

		smr_fault_record(r->f, j, &fr);
		if (fr.op == SMR_FOP_ZONE_RESET ||
		    fr.op == SMR_FOP_ZONE_FINISH)
			return true;
	}
	return false;
}

/*
 * The crash points of a log: every flush (what was flushed, nothing after),
 * every zone reset or finish (durable at once; the writes after the last
 * flush dropped), and writes between flushes: in the full run every write
 * of a span (evenly spaced up to 16) with the unflushed writes kept, dropped
 * at random, and the write torn; otherwise the flush, the span's last write
 * with the other unflushed writes dropped at random, it torn, and an
 * earlier write with all kept.
 */
static void cr_sweep(struct cr_ctx *cx, const struct cr_rec *r)
{
	uint64_t n = smr_fault_nr_records(r->f), start = 0;

	cx->records += n;
	for (uint64_t i = 0; i < n; i++) {
		struct smr_fault_rec fr;
		struct cr_point p = { 0 };

		smr_fault_record(r->f, i, &fr);
		cx->resets += fr.op == SMR_FOP_ZONE_RESET;
		cx->finishes += fr.op == SMR_FOP_ZONE_FINISH;
		if (!cr_near_zone_op(cx, r, i)) {
			if (fr.op == SMR_FOP_FLUSH)
				start = i + 1;
			continue;
		}
		if (fr.op == SMR_FOP_ZONE_RESET ||
		    fr.op == SMR_FOP_ZONE_FINISH) {
			p.nr = i + 1;
			p.o.flags = SMR_REPLAY_DROP_UNFLUSHED;
			cr_check(cx, r, &p);
		}
		if (fr.op != SMR_FOP_FLUSH && i + 1 < n)
			continue;

		/* The writes of [start, i). */
		uint64_t w[4096], nw = 0;

		for (uint64_t j = start; j < i + (fr.op != SMR_FOP_FLUSH);
		     j++) {
			struct smr_fault_rec wr;

			smr_fault_record(r->f, j, &wr);
			if (wr.op == SMR_FOP_WRITE && nw < 4096)
				w[nw++] = j;
		}
		if (nw && cx->full) {
			uint64_t pick = SMR_MIN(nw, 16);

			for (uint64_t c = 0; c < pick; c++)
				for (int m = 0; m < 3; m++)
					cr_check_write(cx, r, w[c * nw / pick],
						       m);
		} else if (nw) {
			/* The last write before the flush with the others
			 * of the span dropped at random or it torn, and an
			 * earlier one with all kept. */
			cr_check_write(cx, r, w[nw - 1], 1);
			cr_check_write(cx, r, w[nw - 1], 2);
			if (nw > 1)
				cr_check_write(cx, r,
					       w[smr_test_rand(&cx->rng) %
						 (nw - 1)], 0);
		}
		if (fr.op == SMR_FOP_FLUSH) {
			p = (struct cr_point){ .nr = i + 1 };
			cr_check(cx, r, &p);
		}
		start = i + 1;
	}
}

static int cr_run_one(struct cr_ctx *cx, const struct cr_workload *w)
{
	struct cr_rec r;
	int rc;

	if (cr_verbose)
		fprintf(stderr, "%s on %s\n", w->name, cx->dev->name);
	rc = cr_record(cx, w, &r);
	if (rc) {
		fprintf(stderr, "crash: %s on %s: recording failed: %s\n",
			w->name, cx->dev->name, strerror(-rc));
		cr_log_dump();
		cx->failures++;
	} else {
		cr_sweep(cx, &r);
	}
	cx->workloads++;
	cr_rec_free(&r);
	return rc;
}

/* ------------------------------------------------------------------------
 * Suites
 * ------------------------------------------------------------------------ */

struct cr_args {
	bool full;
	unsigned int seq2_every; /* run every n-th sequence of two */
	unsigned int random_n, random_len, clean_n, log_n, fsync_n;
	unsigned int shard, shards;
	const char *only;        /* a workload name */
	bool suites[6];          /* seq1, seq2, random, clean, log, fsync */
	bool devs[3];
};

static bool cr_mine(const struct cr_args *a, uint64_t *counter,
		    const struct cr_workload *w)
{
	uint64_t i = (*counter)++;

	if (a->only && strcmp(a->only, w->name))
		return false;
	return i % a->shards == a->shard;
}

static void cr_run_bounded(struct cr_ctx *cx, const struct cr_args *a)
{
	size_t nops = cr_ace_nr_ops();
	uint64_t counter = 0, combo = 0;
	struct cr_workload w;

	if (a->suites[0])
		for (size_t i = 0; i < nops; i++)
			for (int p = 0; p < CR_NR_PERSIST; p++) {
				cr_ace_workload(&w, &i, &p, 1);
				if (cr_mine(a, &counter, &w))
					cr_run_one(cx, &w);
				cr_workload_free(&w);
			}
	if (!a->suites[1])
		return;
	for (size_t i = 0; i < nops; i++)
		for (size_t j = 0; j < nops; j++)
			for (int p = 0; p < CR_NR_PERSIST * CR_NR_PERSIST;
			     p++) {
				size_t ops[2] = { i, j };
				int per[2] = { p / CR_NR_PERSIST,
					       p % CR_NR_PERSIST };

				if (combo++ % a->seq2_every)
					continue;
				cr_ace_workload(&w, ops, per, 2);
				if (cr_mine(a, &counter, &w))
					cr_run_one(cx, &w);
				cr_workload_free(&w);
			}
}

/* Workloads 1..@count of generator @gen, each of size @len. */
static void cr_run_seeded(struct cr_ctx *cx, const struct cr_args *a,
			  void (*gen)(struct cr_workload *, uint64_t, size_t),
			  unsigned int count, size_t len)
{
	uint64_t counter = 0;
	struct cr_workload w;

	for (unsigned int s = 1; s <= count; s++) {
		gen(&w, s, len);
		if (cr_mine(a, &counter, &w))
			cr_run_one(cx, &w);
		cr_workload_free(&w);
	}
}

static void cr_run_random(struct cr_ctx *cx, const struct cr_args *a)
{
	cr_run_seeded(cx, a, cr_random_workload, a->random_n, a->random_len);
}

static void cr_run_clean(struct cr_ctx *cx, const struct cr_args *a)
{
	cr_run_seeded(cx, a, cr_clean_workload, a->clean_n, 6);
}

static void cr_run_log(struct cr_ctx *cx, const struct cr_args *a)
{
	bool log = cr_cow_opts.fsync_log;

	/* Around the move of the checkpoint log only, unless --full. Every
	 * fsync a commit: with the fsync log, an fsync with nothing new to
	 * write writes nothing, and 120 of them no longer fill the zone. */
	if (!a->full)
		cx->window = 12;
	cr_cow_opts.fsync_log = false;
	cr_run_seeded(cx, a, cr_commit_workload, a->log_n, 120);
	cr_cow_opts.fsync_log = log;
}

static void cr_run_fsync(struct cr_ctx *cx, const struct cr_args *a)
{
	cr_run_seeded(cx, a, cr_fsync_workload, a->fsync_n, 24);
}

static void cr_report(const struct cr_ctx *cx, const char *what, double secs)
{
	printf("%-8s %-6s %5" PRIu64 " workloads %7" PRIu64 " records (%"
	       PRIu64 " zone resets, %" PRIu64 " finishes) %7" PRIu64
	       " crash states %3" PRIu64 " failed %3" PRIu64
	       " skipped %6.1f s\n", what, cx->dev->name, cx->workloads,
	       cx->records, cx->resets, cx->finishes, cx->states,
	       cx->failures, cx->skipped, secs);
	fflush(stdout);
}

static double cr_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Run one suite on one device; add its counts to *@tot. */
static int cr_suite(const struct cr_args *a, const struct cr_devcfg *dev,
		    const char *what, int (*init)(struct cr_fs *),
		    void (*run)(struct cr_ctx *, const struct cr_args *),
		    struct cr_ctx *tot)
{
	struct cr_ctx cx = { .dev = dev, .full = a->full, .max_print = 3,
			     .rng = 0x5eed };
	double t0 = cr_now();
	int rc = cr_make_initial(&cx, init);

	if (rc)
		return rc;
	run(&cx, a);
	cr_report(&cx, what, cr_now() - t0);
	tot->workloads += cx.workloads;
	tot->states += cx.states;
	tot->failures += cx.failures;
	tot->skipped += cx.skipped;
	cr_image_free(&cx.initial);
	smr_test_rmtree(cx.path);
	return 0;
}

static void cr_usage(FILE *f)
{
	fprintf(f,
		"usage: crash [--full] [--suite seq1,seq2,random,clean,log,fsync] "
		"[--dev zloop,zns,file]\n"
		"             [--seq2-every N] [--random N] [--clean N] "
		"[--fsync log|commit]\n"
		"             [--shard I/N] [--only NAME] [-v]\n"
		"Records workloads through a fault device and checks every "
		"crash state built from\nthe log: fsck clean, a valid prefix "
		"of the workload, everything fsync'd there,\nnew writes "
		"taken. Without --full: a bounded sample for make check.\n");
}

static bool cr_list(const char *arg, const char *const *names, size_t n,
		    bool *on)
{
	char *s = strdup(arg), *save = NULL;
	bool ok = s != NULL;

	memset(on, 0, n * sizeof(*on));
	for (char *t = s ? strtok_r(s, ",", &save) : NULL; t && ok;
	     t = strtok_r(NULL, ",", &save)) {
		size_t i;

		for (i = 0; i < n && strcmp(t, names[i]); i++)
			;
		if (i == n)
			ok = false;
		else
			on[i] = true;
	}
	free(s);
	return ok;
}

int main(int argc, char **argv)
{
	static const char *const suites[] = { "seq1", "seq2", "random",
					      "clean", "log", "fsync" };
	static const char *const devs[] = { "zloop", "zns", "file" };
	static const struct option lo[] = {
		{ "full", no_argument, NULL, 'F' },
		{ "suite", required_argument, NULL, 's' },
		{ "dev", required_argument, NULL, 'd' },
		{ "seq2-every", required_argument, NULL, 'e' },
		{ "random", required_argument, NULL, 'r' },
		{ "clean", required_argument, NULL, 'c' },
		{ "shard", required_argument, NULL, 'j' },
		{ "only", required_argument, NULL, 'o' },
		{ "fsync", required_argument, NULL, 'f' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cr_args a = {
		.seq2_every = 151, .random_n = 4, .random_len = 24,
		.clean_n = 1, .log_n = 1, .fsync_n = 3, .shards = 1,
		.suites = { true, true, true, true, true, true },
		.devs = { true, true, true },
	};
	struct cr_ctx tot = { .dev = &cr_devs[0] };
	double t0 = cr_now();
	int c, rc = 0;

	while ((c = getopt_long(argc, argv, "v", lo, NULL)) != -1) {
		switch (c) {
		case 'F':
			a.full = true;
			a.seq2_every = 1;
			a.random_n = 64;
			a.random_len = 40;
			a.clean_n = 8;
			a.log_n = 3;
			a.fsync_n = 24;
			break;
		case 's':
			if (!cr_list(optarg, suites, 6, a.suites))
				goto usage;
			break;
		case 'd':
			if (!cr_list(optarg, devs, 3, a.devs))
				goto usage;
			break;
		case 'e':
			a.seq2_every = (unsigned int)atoi(optarg);
			if (!a.seq2_every)
				goto usage;
			break;
		case 'r':
			a.random_n = (unsigned int)atoi(optarg);
			break;
		case 'c':
			a.clean_n = (unsigned int)atoi(optarg);
			break;
		case 'j':
			if (sscanf(optarg, "%u/%u", &a.shard, &a.shards) != 2 ||
			    a.shard >= a.shards)
				goto usage;
			break;
		case 'o':
			a.only = optarg;
			break;
		case 'f':
			if (strcmp(optarg, "log") && strcmp(optarg, "commit"))
				goto usage;
			cr_cow_opts.fsync_log = !strcmp(optarg, "log");
			break;
		case 'v':
			cr_verbose = true;
			break;
		case 'h':
			cr_usage(stdout);
			return 0;
		default:
			goto usage;
		}
	}
	if (optind != argc)
		goto usage;
	/* The devices are scratch: on a memory file system when there is
	 * one, as the thousands of flushes need not reach a disk. */
	if (!getenv("TMPDIR") && access("/dev/shm", W_OK | X_OK) == 0)
		setenv("TMPDIR", "/dev/shm", 1);
	smr_log_set_sink(cr_log_sink);
	for (int d = 0; d < 3 && !rc; d++) {
		if (!a.devs[d])
			continue;
		if (a.suites[0] || a.suites[1])
			rc = cr_suite(&a, &cr_devs[d], "bounded",
				      cr_initial_state, cr_run_bounded, &tot);
		if (!rc && a.suites[2])
			rc = cr_suite(&a, &cr_devs[d], "random",
				      cr_initial_state, cr_run_random, &tot);
		if (!rc && a.suites[5])
			rc = cr_suite(&a, &cr_devs[d], "fsync",
				      cr_initial_state, cr_run_fsync, &tot);
	}
	if (!rc && a.suites[3])
		rc = cr_suite(&a, &cr_clean_dev, "clean",
			      cr_clean_initial_state, cr_run_clean, &tot);
	if (!rc && a.suites[4])
		rc = cr_suite(&a, &cr_devs[1], "log", cr_initial_state,
			      cr_run_log, &tot);
	printf("crash: %" PRIu64 " workloads, %" PRIu64 " crash states "
	       "checked, %" PRIu64 " failed, %" PRIu64 " skipped, in %.0f s\n",
	       tot.workloads, tot.states, tot.failures, tot.skipped,
	       cr_now() - t0);
	if (rc)
		return 2;
	return tot.failures ? 1 : 0;
usage:
	cr_usage(stderr);
	return 2;
}
