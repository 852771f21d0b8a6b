/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_fsck.c - fsck.smrfs's checker (fsck/run.c) on real images: a regular
 * file, a zoned loop directory without conventional zones (checkpoint log)
 * and one with a conventional zone 0. Each test makes a fresh filesystem
 * through the library, damages it precisely (bytes flipped on the device,
 * or items changed through the engine's item API), and checks that a check
 * finds it (exit 4), a repair fixes what it can (exit 1) and a second check
 * is clean (exit 0), and that the library still opens what is left.
 */
#include "testutil.h"

#include <dirent.h>
#include <endian.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc/alloc.h"
#include "cow/cow_priv.h"
#include "dev/dev.h"
#include "dev/fault.h"
#include "format/blk.h"
#include "format/node.h"
#include "format/ondisk_ns.h"
#include "fsck/fsck.h"
#include "namespace/ns.h"

#define ROOT SMR_NS_ROOT

enum kind { K_FILE, K_ZLOG, K_ZCNV, K_NR };
static const char *const kind_name[K_NR] = { "file", "zlog", "zcnv" };

static const struct smr_ns_cred cr = { .uid = 0 };
static char path[4096];
static enum kind cur_kind;

/* ------------------------------------------------------------------------
 * Images
 * ------------------------------------------------------------------------ */

static int make_dev(enum kind k)
{
	const char *dir = smr_test_tmpdir(kind_name[k]);
	struct smr_zloop_params p = {
		.capacity = 64 * SMR_MIB, .zone_size = 2 * SMR_MIB,
		.nr_cnv = k == K_ZCNV ? 1 : 0,
	};
	int fd;

	cur_kind = k;
	if (k != K_FILE) {
		snprintf(path, sizeof(path), "%s/zl", dir);
		return smr_zloop_create(path, &p);
	}
	snprintf(path, sizeof(path), "%s/img", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, 64 * SMR_MIB)) {
		close(fd);
		return -errno;
	}
	close(fd);
	return 0;
}

struct fs {
	struct smr_dev *dev;
	struct smr_cow *cow;
	struct smr_ns *ns;
};

static int fs_open(struct fs *f, bool with_ns)
{
	int rc;

	memset(f, 0, sizeof(*f));
	rc = smr_dev_open(path, NULL, &f->dev);
	if (rc)
		return rc;
	rc = smr_cow_open(f->dev, NULL, &f->cow);
	if (rc)
		goto out_dev;
	/* Items are changed through the namespace's tree type. */
	rc = with_ns ? smr_ns_open(f->cow, NULL, &f->ns) :
		       smr_ns_register_trees(f->cow);
	if (!rc)
		return 0;
	smr_cow_close(f->cow);
out_dev:
	smr_dev_close(f->dev);
	return rc;
}

static void fs_close(struct fs *f)
{
	smr_ns_close(f->ns);
	SMR_ASSERT_OK(smr_cow_close(f->cow));
	SMR_ASSERT_OK(smr_dev_close(f->dev));
}

static uint64_t mkfile(struct smr_ns *ns, uint64_t dir, const char *name,
		       size_t bytes)
{
	struct smr_ns_attr a;
	char *buf = malloc(bytes + 1);
	uint64_t ino = 0;

	if (!buf)
		return 0;
	for (size_t i = 0; i < bytes; i++)
		buf[i] = (char)('a' + i % 23);
	if (!smr_ns_create(ns, &cr, dir, name, 0644 | S_IFREG, &a)) {
		ino = a.ino;
		if (bytes && smr_ns_write(ns, &cr, ino, 0, buf, bytes) !=
				     (ssize_t)bytes)
			ino = 0;
		smr_ns_release(ns, a.ino);
	}
	free(buf);
	return ino;
}

/* Inode numbers of what populate() makes. */
static uint64_t ino_d, ino_f1, ino_f2, ino_empty, ino_sub;

/* mkfs, then: /d/{f1 (20480 bytes), f2 (9000), sub/}, /empty, /link (a
 * hard link of /d/f1), /sym, and @many more files in /d. f1's data is all
 * on the device (whole blocks), f2 ends in a tail block (in the tree). */
static void populate(enum kind k, int many)
{
	struct smr_cow_info info;
	struct smr_ns_attr a;
	struct smr_dev *dev;
	struct smr_cow *cow;
	struct fs f;

	SMR_ASSERT_OK(make_dev(k));
	SMR_ASSERT_OK(smr_dev_open(path, NULL, &dev));
	SMR_ASSERT_OK(smr_cow_format(dev, NULL, &info));
	SMR_ASSERT_OK(smr_cow_open(dev, NULL, &cow));
	SMR_ASSERT_OK(smr_ns_mkfs(cow, &cr));
	SMR_ASSERT_OK(smr_cow_close(cow));
	SMR_ASSERT_OK(smr_dev_close(dev));

	SMR_ASSERT_OK(fs_open(&f, true));
	SMR_ASSERT_OK(smr_ns_mkdir(f.ns, &cr, ROOT, "d", 0755, &a));
	ino_d = a.ino;
	ino_f1 = mkfile(f.ns, ino_d, "f1", 20480);
	ino_f2 = mkfile(f.ns, ino_d, "f2", 9000);
	ino_empty = mkfile(f.ns, ROOT, "empty", 0);
	CU_ASSERT(ino_f1 && ino_f2 && ino_empty);
	SMR_ASSERT_OK(smr_ns_mkdir(f.ns, &cr, ino_d, "sub", 0755, &a));
	ino_sub = a.ino;
	SMR_ASSERT_OK(smr_ns_link(f.ns, ino_f1, ROOT, "link", &a));
	SMR_ASSERT_OK(smr_ns_symlink(f.ns, &cr, ROOT, "sym", "d/f1", &a));
	for (int i = 0; i < many; i++) {
		char name[64];

		snprintf(name, sizeof(name), "file-with-a-long-name-%06d", i);
		CU_ASSERT(mkfile(f.ns, ino_d, name, i % 7 ? 0 : 4096) != 0);
	}
	SMR_ASSERT_OK(smr_ns_sync(f.ns));
	fs_close(&f);
}

static int run_fsck(bool repair, bool scrub, struct smr_fsck_result *r)
{
	struct smr_fsck_opts o = {
		.device = path, .repair = repair, .scrub = scrub,
	};

	return smr_fsck_run(&o, r);
}

/* Check, repair, check again: @want_check for the first, then 1 and 0. */
static void check_repair_clean(void)
{
	struct smr_fsck_result r;

	CU_ASSERT_EQUAL(run_fsck(false, false, &r), SMR_FSCK_UNCORRECTED);
	CU_ASSERT(r.problems > 0);
	CU_ASSERT_EQUAL(run_fsck(true, false, &r), SMR_FSCK_FIXED);
	CU_ASSERT(r.fixed > 0);
	CU_ASSERT_EQUAL(r.remaining, 0);
	CU_ASSERT_EQUAL(run_fsck(false, true, &r), SMR_FSCK_OK);
	CU_ASSERT_EQUAL(r.problems, 0);
}

/* The library opens the filesystem and the namespace audit passes. */
static void mounts_clean(void)
{
	uint64_t problems = 1;
	struct fs f;

	SMR_ASSERT_OK(fs_open(&f, true));
	if (!f.ns)
		return;
	SMR_ASSERT_OK(smr_ns_check(f.ns, &problems));
	CU_ASSERT_EQUAL(problems, 0);
	SMR_ASSERT_OK(smr_cow_check(f.cow));
	fs_close(&f);
}

/* /d/f1 reads back as mkfile() wrote it. */
static bool f1_intact(void)
{
	char buf[20480];
	bool ok = true;
	struct fs f;

	if (fs_open(&f, true))
		return false;
	if (smr_ns_read(f.ns, ino_f1, 0, sizeof(buf), buf) != sizeof(buf))
		ok = false;
	for (size_t i = 0; ok && i < sizeof(buf); i++)
		ok = buf[i] == (char)('a' + i % 23);
	fs_close(&f);
	return ok;
}

/* Flip the bits of @mask in the byte at device offset @off. */
static void flip_mask(uint64_t off, uint8_t mask)
{
	char file[4200];
	uint64_t at = off;
	uint8_t b;
	int fd;

	if (cur_kind == K_FILE) {
		snprintf(file, sizeof(file), "%s", path);
	} else {
		uint64_t zs = 2 * SMR_MIB, zno = off / zs;

		snprintf(file, sizeof(file), "%s/%s-%06llu", path,
			 cur_kind == K_ZCNV && zno == 0 ? "cnv" : "seq",
			 (unsigned long long)zno);
		at = off % zs;
	}
	fd = open(file, O_RDWR);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(pread(fd, &b, 1, (off_t)at), 1);
	b ^= mask;
	CU_ASSERT_EQUAL(pwrite(fd, &b, 1, (off_t)at), 1);
	close(fd);
}

/* Flip four bits of the byte at device offset @off. */
static void flip(uint64_t off)
{
	flip_mask(off, 0x5a);
}

/* ------------------------------------------------------------------------
 * Clean images
 * ------------------------------------------------------------------------ */

static void test_clean(void)
{
	for (int k = 0; k < K_NR; k++) {
		struct smr_fsck_result r;

		populate((enum kind)k, 20);
		CU_ASSERT_EQUAL(run_fsck(false, false, &r), SMR_FSCK_OK);
		CU_ASSERT_EQUAL(r.problems, 0);
		CU_ASSERT(r.inodes >= 8);
		CU_ASSERT(r.entries >= 27);
		CU_ASSERT(r.extents >= 3);
		CU_ASSERT(r.nodes >= 1);
		CU_ASSERT(r.gen > 2);
		CU_ASSERT_EQUAL(r.leaked, 0);
		CU_ASSERT_STRING_EQUAL(r.alloc, k == K_FILE ? "flash" : "zoned");
		if (k != K_FILE)
			CU_ASSERT(r.zones >= 30);
		CU_ASSERT_EQUAL(run_fsck(false, true, &r), SMR_FSCK_OK);
		CU_ASSERT(r.scrubbed_bytes >= 20480 + 8192);
		CU_ASSERT_EQUAL(r.bad_data_blocks, 0);
		/* Nothing to repair: nothing changes. */
		CU_ASSERT_EQUAL(run_fsck(true, false, &r), SMR_FSCK_OK);
		CU_ASSERT_EQUAL(r.fixed, 0);
		mounts_clean();
	}
}

static void test_operational(void)
{
	struct smr_fsck_result r;
	struct smr_dev *dev;
	char junk[4200];
	int fd;

	populate(K_FILE, 0);
	/* Opened by someone else (a mount holds the same lock). */
	SMR_ASSERT_OK(smr_dev_open(path, NULL, &dev));
	CU_ASSERT_EQUAL(run_fsck(false, false, &r), SMR_FSCK_OPERROR);
	CU_ASSERT_EQUAL(run_fsck(true, false, &r), SMR_FSCK_OPERROR);
	SMR_ASSERT_OK(smr_dev_close(dev));
	CU_ASSERT_EQUAL(run_fsck(false, false, &r), SMR_FSCK_OK);

	snprintf(junk, sizeof(junk), "%s.missing", path);
	memcpy(path, junk, sizeof(path) - 1);
	CU_ASSERT_EQUAL(run_fsck(false, false, &r), SMR_FSCK_OPERROR);
	/* Not smrfs at all. */
	fd = open(path, O_RDWR | O_CREAT, 0600);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(ftruncate(fd, 32 * SMR_MIB), 0);
	close(fd);
	CU_ASSERT_EQUAL(run_fsck(false, false, &r), SMR_FSCK_OPERROR);
}

/* ------------------------------------------------------------------------
 * Superblocks and checkpoints
 * ------------------------------------------------------------------------ */

static void test_sb_copy(void)
{
	struct smr_fsck_result r;

	for (int which = 0; which < 2; which++) {
		populate(K_FILE, 0);
		flip(which ? SMR_SB_SIZE + 300 : 300);
		CU_ASSERT_EQUAL(run_fsck(false, false, &r),
				SMR_FSCK_UNCORRECTED);
		CU_ASSERT_EQUAL(r.sb_bad, 1);
		check_repair_clean();
		mounts_clean();
	}
	/* In the checkpoint log a copy is rewritten by moving the log to
	 * its zone: the other zone's (the log is in zone 0) and the zone
	 * of the log itself (away and back). */
	for (int which = 0; which < 2; which++) {
		populate(K_ZLOG, 0);
		flip(which ? 2 * SMR_MIB + 300 : 300);
		CU_ASSERT_EQUAL(run_fsck(false, false, &r),
				SMR_FSCK_UNCORRECTED);
		CU_ASSERT_EQUAL(r.sb_bad, 1);
		check_repair_clean();
		mounts_clean();
	}
	/* A read-write open rewrites it too, with its commits. */
	populate(K_ZLOG, 0);
	flip(300);
	for (int i = 0; i < 2; i++) {
		struct fs f;
		char name[16];

		SMR_ASSERT_OK(fs_open(&f, true));
		snprintf(name, sizeof(name), "heal%d", i);
		CU_ASSERT(mkfile(f.ns, ROOT, name, 100) != 0);
		SMR_ASSERT_OK(smr_cow_commit(f.cow));
		fs_close(&f);
	}
	CU_ASSERT_EQUAL(run_fsck(false, false, &r), SMR_FSCK_OK);
	CU_ASSERT_EQUAL(r.sb_bad, 0);

	/* A power cut between the reset of the zone the log moves to and
	 * its superblock copy leaves that zone empty: no damage. */
	populate(K_ZLOG, 0);
	{
		struct smr_dev *dev;

		SMR_ASSERT_OK(smr_dev_open(path, NULL, &dev));
		SMR_ASSERT_OK(smr_dev_zone_finish(dev, 0));
		SMR_ASSERT_OK(smr_dev_zone_reset(dev, 1));
		SMR_ASSERT_OK(smr_dev_close(dev));
	}
	CU_ASSERT_EQUAL(run_fsck(false, false, &r), SMR_FSCK_OK);
	CU_ASSERT_EQUAL(r.sb_bad, 0);
	mounts_clean();
	/* The next commit moves the log there and writes the copy. */
	{
		struct fs f;

		SMR_ASSERT_OK(fs_open(&f, true));
		CU_ASSERT(mkfile(f.ns, ROOT, "after", 100) != 0);
		SMR_ASSERT_OK(smr_cow_commit(f.cow));
		CU_ASSERT(smr_dev_zone_wp(f.dev, 1) >
			  smr_dev_zone_start(f.dev, 1));
		fs_close(&f);
	}
	CU_ASSERT_EQUAL(run_fsck(false, false, &r), SMR_FSCK_OK);
	CU_ASSERT_EQUAL(r.sb_bad, 0);
}

static void test_ckpt(void)
{
	struct smr_fsck_result r;

	/* Slot 0 holds mkfs's first checkpoint, long superseded. */
	populate(K_FILE, 0);
	flip(64 * SMR_KIB + 200);
	CU_ASSERT_EQUAL(run_fsck(false, false, &r), SMR_FSCK_UNCORRECTED);
	CU_ASSERT_EQUAL(r.ckpt_bad, 1);
	check_repair_clean();
	mounts_clean();

	/* The same in a conventional zone 0. */
	populate(K_ZCNV, 0);
	flip(64 * SMR_KIB + 200);
	check_repair_clean();
	mounts_clean();
}

/* The newest checkpoint damaged: the one before is used, the commit is
 * reported lost, and a repair commits anew. */
static void test_ckpt_newest(void)
{
	for (int k = 0; k < K_NR; k++) {
		struct smr_cow_super_check sc;
		struct smr_fsck_result r;
		struct smr_dev *dev;
		uint64_t gen;

		populate((enum kind)k, 0);
		SMR_ASSERT_OK(smr_dev_open(path, NULL, &dev));
		SMR_ASSERT_OK(smr_cow_check_super(dev, false, NULL, &sc));
		SMR_ASSERT_OK(smr_dev_close(dev));
		CU_ASSERT_EQUAL(sc.problems, 0);
		CU_ASSERT_FATAL(sc.newest_gen > 1);
		gen = sc.newest_gen;
		flip(sc.newest_addr + 600);

		CU_ASSERT_EQUAL(run_fsck(false, false, &r),
				SMR_FSCK_UNCORRECTED);
		/* The previous checkpoint is intact with its allocator
		 * state (the allocator keeps what the newest freed until the
		 * next commit is durable): the daemon opens it, and the lost
		 * commit is the one problem. */
		{
			struct smr_cow_info info;
			struct smr_dev *d;
			struct smr_cow *c = NULL;

			SMR_ASSERT_OK(smr_dev_open(path, NULL, &d));
			SMR_ASSERT_OK(smr_cow_open(d, &(struct smr_cow_opts){
							   .read_only = true },
						   &c));
			if (c) {
				smr_cow_info(c, &info);
				CU_ASSERT_EQUAL(info.gen, gen - 1);
				smr_cow_close(c);
			}
			SMR_ASSERT_OK(smr_dev_close(d));
			CU_ASSERT_EQUAL(r.problems, 1);
		}
		CU_ASSERT_EQUAL(r.gen, gen - 1);
		CU_ASSERT_EQUAL(r.ckpt_bad, 1);
		check_repair_clean();
		CU_ASSERT_EQUAL(run_fsck(false, false, &r), SMR_FSCK_OK);
		CU_ASSERT(r.gen >= gen);
		mounts_clean();
	}
}

/*
 * The newest checkpoint record zeroed in the checkpoint log (a device that
 * lost an acknowledged write, or a tool that zeroed it): the one before is
 * valid and is used, and nothing marks the record as damaged. fsck reports
 * the zeros after it below the write pointer as a lost commit, where it
 * used to find the filesystem clean, and a repair commits anew.
 */
static void test_ckpt_zeroed(void)
{
	static const uint8_t zeros[SMR_CKPT_SIZE];
	struct smr_cow_super_check sc;
	struct smr_fsck_result r;
	struct smr_dev *dev;
	char zfile[4200];
	int fd;

	populate(K_ZLOG, 0);
	SMR_ASSERT_OK(smr_dev_open(path, NULL, &dev));
	SMR_ASSERT_OK(smr_cow_check_super(dev, false, NULL, &sc));
	SMR_ASSERT_OK(smr_dev_close(dev));
	CU_ASSERT_FATAL(sc.newest_gen > 1);
	snprintf(zfile, sizeof(zfile), "%s/seq-%06llu", path,
		 (unsigned long long)(sc.newest_addr / (2 * SMR_MIB)));
	fd = open(zfile, O_RDWR);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(pwrite(fd, zeros, sizeof(zeros),
			       (off_t)(sc.newest_addr % (2 * SMR_MIB))),
			(ssize_t)sizeof(zeros));
	close(fd);

	CU_ASSERT_EQUAL(run_fsck(false, false, &r), SMR_FSCK_UNCORRECTED);
	CU_ASSERT_EQUAL(r.problems, 1);
	CU_ASSERT_EQUAL(r.ckpt_bad, 0);
	CU_ASSERT_EQUAL(r.gen, sc.newest_gen - 1);
	check_repair_clean();
	CU_ASSERT_EQUAL(run_fsck(false, false, &r), SMR_FSCK_OK);
	CU_ASSERT(r.gen >= sc.newest_gen);
	mounts_clean();
}

/*
 * Zero every checkpoint record, as a tool that wiped the checkpoint area
 * would: the ring's slots (of a file, or in conventional zone 0), or every
 * record of both zones of the checkpoint log, below their write pointers,
 * after their superblock copies; with @sb, the superblock copies too (the
 * start of the device wiped).
 */
static void zero_ckpts(bool sb)
{
	static const uint8_t zeros[64 * 1024];
	char file[4200];

	for (int z = 0; z < (cur_kind == K_ZLOG ? 2 : 1); z++) {
		uint64_t from = sb ? 0 : cur_kind == K_ZLOG ? SMR_SB_SIZE :
				    65536, to;
		struct stat st;
		int fd;

		if (cur_kind == K_FILE)
			snprintf(file, sizeof(file), "%s", path);
		else
			snprintf(file, sizeof(file), "%s/%s-%06d", path,
				 cur_kind == K_ZCNV ? "cnv" : "seq", z);
		fd = open(file, O_RDWR);
		CU_ASSERT_FATAL(fd >= 0);
		CU_ASSERT_FATAL(fstat(fd, &st) == 0);
		to = cur_kind == K_FILE ? 4 * SMR_MIB :
		     cur_kind == K_ZCNV ? 2 * SMR_MIB : (uint64_t)st.st_size;
		for (uint64_t a = from; a < to; a += sizeof(zeros))
			CU_ASSERT_EQUAL(pwrite(fd, zeros,
					       SMR_MIN(sizeof(zeros), to - a),
					       (off_t)a),
					(ssize_t)SMR_MIN(sizeof(zeros), to - a));
		close(fd);
	}
}

/* Every file populate() made reads back, and /late is there or not. */
static void all_there(int many, bool late)
{
	struct smr_ns_attr a;
	struct fs f;

	SMR_ASSERT_OK(fs_open(&f, true));
	if (!f.ns)
		return;
	SMR_ASSERT_OK(smr_ns_lookup(f.ns, ROOT, "empty", &a));
	SMR_ASSERT_OK(smr_ns_lookup(f.ns, ino_d, "f2", &a));
	CU_ASSERT_EQUAL(a.size, 9000);
	for (int i = 0; i < many; i++) {
		char name[64];

		snprintf(name, sizeof(name), "file-with-a-long-name-%06d", i);
		SMR_ASSERT_OK(smr_ns_lookup(f.ns, ino_d, name, &a));
	}
	SMR_ASSERT_RC(smr_ns_lookup(f.ns, ROOT, "late", &a),
		      late ? 0 : -ENOENT);
	fs_close(&f);
	CU_ASSERT_TRUE(f1_intact());
}

/*
 * Every checkpoint record lost (zeroed), the trees intact: the check says
 * there is no valid checkpoint, and the repair rebuilds one from the
 * newest tree roots found on the device and an allocator state rebuilt
 * from the device. Every file is back, as the newest commit left it.
 */
static void test_ckpt_all_lost(void)
{
	for (int k = 0; k < K_NR; k++) {
		struct smr_fsck_result r;
		uint64_t gen, inodes;

		populate((enum kind)k, 200);
		CU_ASSERT_EQUAL(run_fsck(false, false, &r), SMR_FSCK_OK);
		gen = r.gen;
		inodes = r.inodes;
		CU_ASSERT(inodes > 200);
		zero_ckpts(false);
		CU_ASSERT_EQUAL(run_fsck(false, false, &r),
				SMR_FSCK_UNCORRECTED);
		CU_ASSERT_EQUAL(r.ckpt_valid, 0);
		CU_ASSERT_EQUAL(r.inodes, inodes);
		check_repair_clean();
		CU_ASSERT_EQUAL(run_fsck(false, false, &r), SMR_FSCK_OK);
		CU_ASSERT(r.gen >= gen);
		CU_ASSERT_EQUAL(r.inodes, inodes);
		mounts_clean();
		all_there(200, false);
	}
}

/*
 * The start of the device wiped: both superblock copies and every
 * checkpoint record. The B-tree nodes on the device say that it is smrfs,
 * and whose: the superblock is rebuilt with their UUID, then the
 * checkpoint from the trees, and every file is back. Where the nodes are
 * of two filesystems (one made over the other), which to rebuild cannot
 * be told, and nothing is written.
 */
static void test_sb_ckpt_all_lost(void)
{
	for (int k = 0; k < K_NR; k++) {
		struct smr_fsck_result r;

		populate((enum kind)k, 200);
		zero_ckpts(true);
		CU_ASSERT_EQUAL(run_fsck(false, false, &r),
				SMR_FSCK_UNCORRECTED);
		CU_ASSERT_EQUAL(r.ckpt_valid, 0);
		check_repair_clean();
		mounts_clean();
		all_there(200, false);
	}
	{
		static const uint8_t other[16] = { 1, 2, 3 };
		struct smr_format_opts fo = { .uuid = other };
		struct smr_fsck_result r;
		struct smr_dev *dev;
		struct smr_cow *cow;
		struct stat before, after;

		/* A second filesystem made over the first on a file: mkfs
		 * clears the ring, and the old nodes stay in the data area
		 * until written over. */
		populate(K_FILE, 200);
		SMR_ASSERT_OK(smr_dev_open(path, NULL, &dev));
		SMR_ASSERT_OK(smr_cow_format(dev, &fo, NULL));
		SMR_ASSERT_OK(smr_cow_open(dev, NULL, &cow));
		SMR_ASSERT_OK(smr_ns_mkfs(cow, &cr));
		SMR_ASSERT_OK(smr_cow_close(cow));
		SMR_ASSERT_OK(smr_dev_close(dev));
		zero_ckpts(true);
		CU_ASSERT_EQUAL(stat(path, &before), 0);
		CU_ASSERT_EQUAL(run_fsck(true, false, &r), SMR_FSCK_OPERROR);
		CU_ASSERT_EQUAL(stat(path, &after), 0);
		CU_ASSERT_EQUAL(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
		CU_ASSERT_EQUAL(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
		CU_ASSERT_EQUAL(after.st_blocks, before.st_blocks);
	}
}

/* What the scans of a rebuild told the progress callback: each scan
 * (a new one starts lower) goes up to its total, MiB rounded up. Set, the
 * cancel flag is raised in scan number @cancel_in. */
struct scan_seen {
	uint64_t calls, scans, last, total;
	bool short_scan, past_total;
	unsigned int cancel_in;
	volatile sig_atomic_t *cancel;
};

static void scan_progress(void *arg, unsigned int phase, const char *name,
			  uint64_t done, uint64_t total)
{
	struct scan_seen *s = arg;

	(void)phase;
	if (strcmp(name, SMR_FSCK_SCAN))
		return;
	if (!s->calls || done < s->last) {
		if (s->calls && s->last + 1 < s->total)
			s->short_scan = true;
		s->scans++;
	}
	if (done > total)
		s->past_total = true;
	s->calls++;
	s->last = done;
	s->total = total;
	if (s->cancel_in && s->scans == s->cancel_in)
		*s->cancel = 1;
}

/*
 * The rebuild's scans of all the written space say how far they are, and
 * stop when cancelled: in the search for the UUID or in the check's open,
 * nothing is written; in the repair's open, only the superblock copies
 * are (a repair of its own, committed before); a run to the end repairs.
 */
static void test_scan_progress_cancel(void)
{
	for (int k = 0; k < K_NR; k++) {
		volatile sig_atomic_t cancel = 0;
		struct scan_seen seen = { .cancel = &cancel };
		struct smr_fsck_opts o = {
			.device = path, .repair = true,
			.progress = scan_progress, .progress_arg = &seen,
			.cancel = &cancel,
		};
		struct smr_fsck_result r;
		struct stat before, after;

		populate((enum kind)k, 300);
		zero_ckpts(true);
		for (unsigned int in = 1; in <= (k == K_FILE ? 3 : 1); in++) {
			/* A file, or the zoned loop directory (its files
			 * are reset, written and finished through it). */
			CU_ASSERT_EQUAL(stat(path, &before), 0);
			seen = (struct scan_seen){ .cancel = &cancel,
						   .cancel_in = in };
			cancel = 0;
			CU_ASSERT_EQUAL(smr_fsck_run(&o, &r),
					SMR_FSCK_CANCELED);
			CU_ASSERT_EQUAL(seen.scans, in);
			CU_ASSERT_EQUAL(r.fixed, in < 3 ? 0 : 2);
			CU_ASSERT_EQUAL(stat(path, &after), 0);
			if (in == 3)
				break;
			CU_ASSERT_EQUAL(after.st_mtim.tv_sec,
					before.st_mtim.tv_sec);
			CU_ASSERT_EQUAL(after.st_mtim.tv_nsec,
					before.st_mtim.tv_nsec);
		}

		seen = (struct scan_seen){ .cancel = &cancel };
		cancel = 0;
		CU_ASSERT_EQUAL(smr_fsck_run(&o, &r), SMR_FSCK_FIXED);
		CU_ASSERT(seen.calls > 1);
		CU_ASSERT(seen.total > 0);
		/* 60 MiB of a file, each scan in many steps. */
		CU_ASSERT(k != K_FILE || (seen.scans >= 2 && seen.total >= 60 &&
					  seen.calls >= 2 * seen.total));
		CU_ASSERT(seen.last + 1 >= seen.total);
		CU_ASSERT_FALSE(seen.short_scan);
		CU_ASSERT_FALSE(seen.past_total);
		all_there(300, false);
	}
}

/* Node block @node, moved to device byte @addr: as the filesystem it is of
 * would have written it there. */
static void node_move(uint8_t *node, uint64_t addr)
{
	struct smr_blk_id id;

	smr_blk_hdr_decode(node, &id);
	smr_blk_hdr_init(node, &smr_node_ops, id.len, addr, id.gen, id.owner,
			 id.uuid, id.level);
	SMR_ASSERT_OK(smr_blk_seal(node, id.len, &smr_node_ops));
}

/* mkfs on path, over whatever is there (no discard). */
static void format_over(const struct smr_format_opts *fo)
{
	struct smr_dev *dev;
	struct smr_cow *cow;

	SMR_ASSERT_OK(smr_dev_open(path, NULL, &dev));
	SMR_ASSERT_OK(smr_cow_format(dev, fo, NULL));
	SMR_ASSERT_OK(smr_cow_open(dev, NULL, &cow));
	SMR_ASSERT_OK(smr_ns_mkfs(cow, &cr));
	SMR_ASSERT_OK(smr_cow_close(cow));
	SMR_ASSERT_OK(smr_dev_close(dev));
}

/*
 * A zoned device, superblock and records lost, with the nodes of an older
 * filesystem left in a conventional zone (mkfs resets only the sequential
 * ones): the one with nodes in sequential zones is rebuilt, whole. With a
 * node of the older one in a sequential zone too, there is no telling.
 */
static void test_sb_ckpt_all_lost_zoned_old(void)
{
	static const uint8_t newer[16] = { 7, 7, 7 };
	struct smr_zloop_params p = {
		.capacity = 64 * SMR_MIB, .zone_size = 2 * SMR_MIB,
		.nr_cnv = 2,
	};
	uint8_t *node = smr_dev_buf_alloc(SMR_NODE_MIN_SIZE);
	struct smr_format_opts fo = { .uuid = newer };
	struct smr_fsck_result r;
	struct smr_cow_info info;
	struct smr_ns_attr a;
	struct smr_blk_id id;
	struct smr_dev *dev;
	bool found = false;
	struct fs f;

	/* The older filesystem; one of its nodes kept aside. */
	snprintf(path, sizeof(path), "%s/zl", smr_test_tmpdir("zold"));
	cur_kind = K_ZCNV;
	SMR_ASSERT_OK(smr_zloop_create(path, &p));
	format_over(NULL);
	SMR_ASSERT_OK(smr_dev_open(path, NULL, &dev));
	for (uint32_t z = 0; z < smr_dev_info(dev)->nr_zones && !found; z++) {
		uint64_t at = smr_dev_zone_start(dev, z);

		if (smr_dev_zone_type(dev, z) == SMR_ZONE_TYPE_CNV)
			continue;
		for (; !found && at < smr_dev_zone_wp(dev, z);
		     at += SMR_NODE_MIN_SIZE) {
			SMR_ASSERT_OK(smr_dev_read(dev, node,
						   SMR_NODE_MIN_SIZE, at));
			smr_blk_hdr_decode(node, &id);
			found = id.magic == SMR_MAGIC_NODE;
		}
	}
	SMR_ASSERT_OK(smr_dev_close(dev));
	CU_ASSERT_FATAL(found);

	/* The newer one over it, with a file. */
	format_over(&fo);
	SMR_ASSERT_OK(fs_open(&f, true));
	CU_ASSERT(mkfile(f.ns, ROOT, "newer", 9000) != 0);
	fs_close(&f);

	/* The old node at the end of conventional zone 1, where a bigger
	 * older filesystem could have left it. */
	node_move(node, 2 * p.zone_size - SMR_NODE_MIN_SIZE);
	SMR_ASSERT_OK(smr_dev_open(path, NULL, &dev));
	SMR_ASSERT_OK(smr_dev_write(dev, node, SMR_NODE_MIN_SIZE,
				    2 * p.zone_size - SMR_NODE_MIN_SIZE));
	SMR_ASSERT_OK(smr_dev_close(dev));
	zero_ckpts(true);
	CU_ASSERT_EQUAL(run_fsck(true, false, &r), SMR_FSCK_FIXED);
	CU_ASSERT_EQUAL(run_fsck(false, true, &r), SMR_FSCK_OK);
	SMR_ASSERT_OK(fs_open(&f, true));
	smr_cow_info(f.cow, &info);
	CU_ASSERT_EQUAL(memcmp(info.uuid, newer, 16), 0);
	CU_ASSERT_EQUAL(smr_ns_lookup(f.ns, ROOT, "newer", &a), 0);
	fs_close(&f);

	/* The old node in a sequential zone as well (at the start of the
	 * last, empty one): refused, nothing written. */
	SMR_ASSERT_OK(smr_dev_open(path, NULL, &dev));
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, 31), smr_dev_zone_start(dev, 31));
	node_move(node, smr_dev_zone_start(dev, 31));
	SMR_ASSERT_OK(smr_dev_write(dev, node, SMR_NODE_MIN_SIZE,
				    smr_dev_zone_start(dev, 31)));
	SMR_ASSERT_OK(smr_dev_close(dev));
	zero_ckpts(true);
	CU_ASSERT_EQUAL(run_fsck(true, false, &r), SMR_FSCK_OPERROR);
	smr_dev_buf_free(node);
}

/*
 * The same after a power cut at each write of a commit that adds a file
 * (the fault device drops every write after the first @cut): the tree of
 * the cut commit, partly written, does not read back whole, and the one
 * before it is taken; once all its nodes are written, it is taken. Either
 * way nothing older is lost, and the repair leaves a clean filesystem.
 */
static void test_ckpt_all_lost_cut(void)
{
	for (int k = 0; k < K_NR; k++) {
		bool landed = false;

		for (uint64_t cut = 0; !landed && cut < 64; cut++) {
			struct smr_fault_rule rule = {
				.what = SMR_FAULT_DROP_WRITES, .after = cut,
			};
			struct smr_cow_super_check sc;
			struct smr_dev *lower, *dev;
			struct smr_cow_info info;
			struct smr_fsck_result r;
			struct smr_fault *fl;
			struct smr_cow *cow;
			struct smr_ns *ns;
			uint64_t late;

			populate((enum kind)k, 100);
			SMR_ASSERT_OK(smr_dev_open(path, NULL, &lower));
			SMR_ASSERT_OK(smr_fault_open(lower, &fl, &dev));
			SMR_ASSERT_OK(smr_cow_open(dev, NULL, &cow));
			SMR_ASSERT_OK(smr_ns_open(cow, NULL, &ns));
			late = mkfile(ns, ROOT, "late", 20000);
			CU_ASSERT(late != 0);
			SMR_ASSERT_OK(smr_fault_arm(fl, &rule));
			SMR_ASSERT_OK(smr_ns_sync(ns));
			smr_cow_info(cow, &info);
			smr_ns_close(ns);
			smr_cow_close(cow);
			smr_dev_close(dev);
			smr_dev_close(lower);
			smr_fault_free(fl);
			/* Did the commit's record land? Then the next cut is
			 * past the whole commit. */
			SMR_ASSERT_OK(smr_dev_open(path, NULL, &dev));
			SMR_ASSERT_OK(smr_cow_check_super(dev, false, NULL, &sc));
			SMR_ASSERT_OK(smr_dev_close(dev));
			landed = sc.newest_gen >= info.gen;

			zero_ckpts(false);
			CU_ASSERT_EQUAL(run_fsck(true, false, &r),
					SMR_FSCK_FIXED);
			CU_ASSERT_EQUAL(r.remaining, 0);
			CU_ASSERT_EQUAL(run_fsck(false, true, &r), SMR_FSCK_OK);
			CU_ASSERT_EQUAL(r.problems, 0);
			mounts_clean();
			/* The new file is there whole, or not at all. */
			{
				struct smr_ns_attr a;
				struct fs f;
				bool there;

				SMR_ASSERT_OK(fs_open(&f, true));
				if (!f.ns)
					continue;
				there = !smr_ns_lookup(f.ns, ROOT, "late", &a);
				if (there) {
					char buf[20000];

					CU_ASSERT_EQUAL(a.size, 20000);
					CU_ASSERT_EQUAL(smr_ns_read(f.ns, a.ino, 0,
								    sizeof(buf), buf),
							(ssize_t)sizeof(buf));
					for (size_t i = 0; i < sizeof(buf); i++)
						if (buf[i] != (char)('a' + i % 23)) {
							CU_FAIL("late: wrong byte");
							break;
						}
				}
				fs_close(&f);
				all_there(100, there);
				if (landed)
					CU_ASSERT_TRUE(there);
			}
		}
		CU_ASSERT_TRUE(landed);
	}
}

/*
 * The root node of the newest tree damaged after its commit was durable (a
 * node only the newest checkpoint references): open falls back to the
 * previous checkpoint; fsck says so as the one problem, and a repair
 * commits anew on top of the previous state.
 */
static void test_root_newest(void)
{
	for (int k = 0; k < K_NR; k++) {
		struct smr_fault_rule cut = { .what = SMR_FAULT_DROP_WRITES };
		struct smr_fsck_result r;
		struct smr_dev *lower, *dev;
		struct smr_cow_info info;
		struct smr_ns_attr a;
		struct smr_fault *fl;
		struct smr_cow *cow;
		struct smr_ns *ns;
		uint64_t root, gen;
		struct fs f;

		populate((enum kind)k, 0);
		SMR_ASSERT_OK(smr_dev_open(path, NULL, &lower));
		SMR_ASSERT_OK(smr_fault_open(lower, &fl, &dev));
		SMR_ASSERT_OK(smr_cow_open(dev, NULL, &cow));
		SMR_ASSERT_OK(smr_ns_open(cow, NULL, &ns));
		CU_ASSERT(mkfile(ns, ROOT, "late", 100) != 0);
		SMR_ASSERT_OK(smr_ns_sync(ns));
		smr_cow_info(cow, &info);
		gen = info.gen;
		root = cow->trees[SMR_TREE_FS].addr;
		/* The power goes: nothing after that commit lands. */
		SMR_ASSERT_OK(smr_fault_arm(fl, &cut));
		smr_ns_close(ns);
		smr_cow_close(cow);
		smr_dev_close(dev);
		smr_dev_close(lower);
		smr_fault_free(fl);
		flip(root + 200);

		CU_ASSERT_EQUAL(run_fsck(false, false, &r),
				SMR_FSCK_UNCORRECTED);
		CU_ASSERT_EQUAL(r.problems, 1);
		CU_ASSERT_EQUAL(r.gen, gen - 1);
		check_repair_clean();
		CU_ASSERT_EQUAL(run_fsck(false, false, &r), SMR_FSCK_OK);
		CU_ASSERT(r.gen > gen);
		mounts_clean();
		/* The lost commit's file is not there; the rest is. */
		SMR_ASSERT_OK(fs_open(&f, true));
		if (f.ns) {
			SMR_ASSERT_RC(smr_ns_lookup(f.ns, ROOT, "late", &a),
				      -ENOENT);
			SMR_ASSERT_OK(smr_ns_lookup(f.ns, ROOT, "empty", &a));
			fs_close(&f);
		}
	}
}

/* ------------------------------------------------------------------------
 * Allocator state
 * ------------------------------------------------------------------------ */

/* Where the allocator state of the checkpoint that open takes lies. */
static uint64_t alloc_state_addr(void)
{
	struct smr_dev *d;
	struct smr_cow *c = NULL;
	uint64_t off = 0;

	SMR_ASSERT_OK(smr_dev_open(path, NULL, &d));
	SMR_ASSERT_OK(smr_cow_open(d, &(struct smr_cow_opts){ .read_only = true },
				   &c));
	if (c) {
		off = c->alloc_ref.off;
		smr_cow_close(c);
	}
	smr_dev_close(d);
	return off;
}

/* Damage the allocator state of both recoverable checkpoints. */
static void damage_alloc_states(void)
{
	uint64_t s1, s2;

	s1 = alloc_state_addr();
	CU_ASSERT_FATAL(s1 != 0);
	flip(s1 + 100);
	/* Open now takes the predecessor, with its own state. */
	s2 = alloc_state_addr();
	CU_ASSERT_FATAL(s2 != 0 && s2 != s1);
	flip(s2 + 100);
}

/*
 * One bit flipped in the newest checkpoint record (@state false) or in its
 * allocator state: put back from the checksum, so the newest commit is
 * kept, not lost to its predecessor; fsck reports it, and the repair
 * rewrites the record's slot, or (the zone log, or a state) commits anew.
 */
static void newest_bit(bool state)
{
	for (int k = 0; k < K_NR; k++) {
		struct smr_cow_super_check sc;
		struct smr_fsck_result r;
		struct smr_cow_info info;
		struct smr_dev *d;
		struct smr_cow *c = NULL;

		populate((enum kind)k, 60);
		SMR_ASSERT_OK(smr_dev_open(path, NULL, &d));
		SMR_ASSERT_OK(smr_cow_check_super(d, false, NULL, &sc));
		SMR_ASSERT_OK(smr_dev_close(d));
		CU_ASSERT_FATAL(sc.newest_gen > 1);
		flip_mask(state ? alloc_state_addr() + 100 :
				  sc.newest_addr + 600, 0x08);
		SMR_ASSERT_OK(smr_dev_open(path, NULL, &d));
		SMR_ASSERT_OK(smr_cow_open(d, &(struct smr_cow_opts){
						   .read_only = true }, &c));
		if (c) {
			smr_cow_info(c, &info);
			CU_ASSERT_EQUAL(info.gen, sc.newest_gen);
			CU_ASSERT_EQUAL(info.alloc_restored, state);
			smr_cow_close(c);
		}
		SMR_ASSERT_OK(smr_dev_close(d));

		CU_ASSERT_EQUAL(run_fsck(false, false, &r),
				SMR_FSCK_UNCORRECTED);
		CU_ASSERT_EQUAL(r.problems, 1);
		CU_ASSERT_EQUAL(r.gen, sc.newest_gen);
		CU_ASSERT_EQUAL(r.ckpt_bad, 0);
		check_repair_clean();
		CU_ASSERT_EQUAL(run_fsck(false, false, &r), SMR_FSCK_OK);
		CU_ASSERT(r.gen >= sc.newest_gen);
		mounts_clean();
		CU_ASSERT_TRUE(f1_intact());
	}
}

static void test_ckpt_bit(void) { newest_bit(false); }
static void test_alloc_state_bit(void) { newest_bit(true); }

/*
 * The allocator state of both recoverable checkpoints damaged: no
 * checkpoint opens. fsck reports it, and the repair rebuilds the state
 * from the trees: on a zoned device the zones from their write pointers
 * and each zone's live bytes from the recount, resetting no zone that
 * holds referenced data. The files then read back intact, and zones whose
 * data nothing references come back after the next commits.
 */
static void test_alloc_state(void)
{
	for (int k = 0; k < K_NR; k++) {
		struct smr_fsck_result r;
		struct smr_dev *d;
		struct smr_cow *c = NULL;
		struct fs f;

		populate((enum kind)k, 60);
		damage_alloc_states();
		SMR_ASSERT_OK(smr_dev_open(path, NULL, &d));
		CU_ASSERT(smr_cow_open(d, NULL, &c) < 0);
		SMR_ASSERT_OK(smr_dev_close(d));

		CU_ASSERT_EQUAL(run_fsck(false, false, &r),
				SMR_FSCK_UNCORRECTED);
		CU_ASSERT(r.problems > 0);
		CU_ASSERT_EQUAL(run_fsck(true, false, &r), SMR_FSCK_FIXED);
		CU_ASSERT_EQUAL(r.remaining, 0);
		CU_ASSERT_EQUAL(run_fsck(false, true, &r), SMR_FSCK_OK);
		CU_ASSERT_EQUAL(r.bad_data_blocks, 0);
		mounts_clean();
		CU_ASSERT_TRUE(f1_intact());
		/* And the filesystem goes on: more files, commits (which
		 * reset the zones nothing references), a clean check. */
		SMR_ASSERT_OK(fs_open(&f, true));
		if (f.ns) {
			for (int i = 0; i < 20; i++) {
				char name[32];

				snprintf(name, sizeof(name), "after-%d", i);
				CU_ASSERT(mkfile(f.ns, ROOT, name, 8192) != 0);
				SMR_ASSERT_OK(smr_ns_sync(f.ns));
			}
			fs_close(&f);
		}
		CU_ASSERT_EQUAL(run_fsck(false, true, &r), SMR_FSCK_OK);
		CU_ASSERT_TRUE(f1_intact());
	}
}

/*
 * Both superblock copies damaged: their checksum (a flipped byte inside),
 * or their magic (wiped). mkfs alone writes them, so the repair rebuilds
 * them from the device and the newest checkpoint record, which carries the
 * UUID; open meanwhile says the filesystem is damaged, not "not smrfs".
 */
static void test_sb_both(void)
{
	for (int v = 0; v < 2 * K_NR; v++) {
		enum kind k = (enum kind)(v / 2);
		uint64_t second = k == K_ZLOG ? 2 * SMR_MIB : SMR_SB_SIZE;
		uint64_t at = v % 2 ? 300 : 0; /* the checksum, or the magic */
		struct smr_fsck_result r;
		struct smr_cow *c = NULL;
		struct smr_dev *d;
		int rc;

		populate(k, 60);
		flip(at);
		flip(second + at);
		SMR_ASSERT_OK(smr_dev_open(path, NULL, &d));
		rc = smr_cow_open(d, NULL, &c);
		CU_ASSERT(rc == -SMR_EFSCORRUPTED || rc == -SMR_EFSBADCRC);
		SMR_ASSERT_OK(smr_dev_close(d));

		CU_ASSERT_EQUAL(run_fsck(false, false, &r),
				SMR_FSCK_UNCORRECTED);
		CU_ASSERT_EQUAL(r.sb_bad, 2);
		CU_ASSERT(r.inodes > 60);
		CU_ASSERT_EQUAL(run_fsck(true, false, &r), SMR_FSCK_FIXED);
		CU_ASSERT_EQUAL(r.remaining, 0);
		CU_ASSERT_EQUAL(run_fsck(false, true, &r), SMR_FSCK_OK);
		CU_ASSERT_EQUAL(r.sb_bad, 0);
		mounts_clean();
		CU_ASSERT_TRUE(f1_intact());
	}
}

/* ------------------------------------------------------------------------
 * A B-tree node
 * ------------------------------------------------------------------------ */

/* The namespace tree's last leaf (inodes and their extents) and its second
 * (directory entries), in the checkpoint open takes. */
static void fs_leaves(uint64_t *last, uint64_t *second)
{
	uint64_t *addrs = NULL;
	size_t n = 0;
	int nth = 0;
	struct fs f;

	*last = *second = 0;
	SMR_ASSERT_OK(fs_open(&f, false));
	if (!f.cow)
		return;
	pthread_rwlock_rdlock(&f.cow->lock);
	SMR_ASSERT_OK(smr_bt_node_addrs_locked(f.cow, &addrs, &n));
	/* The walk meets the namespace tree's leaves in key order (the
	 * engine's own trees come after it). */
	for (size_t i = 0; i < n; i++) {
		uint8_t *nb = smr_cow_buf_alloc(f.cow->ns);
		const struct smr_blk_hdr *h = (const void *)nb;

		CU_ASSERT_FATAL(nb != NULL);
		SMR_ASSERT_OK(f.cow->sops->read(f.cow, addrs[i], nb,
						f.cow->ns));
		if (le64toh(h->owner) == SMR_TREE_FS &&
		    le16toh(h->level) == 0) {
			*last = addrs[i];
			if (nth++ == 1)
				*second = addrs[i];
		}
		smr_cow_buf_free(nb);
	}
	pthread_rwlock_unlock(&f.cow->lock);
	fs_close(&f);
	free(addrs);
	CU_ASSERT(n >= 3); /* a root and two leaves at least */
}

/* A damaged leaf of the namespace's tree: the last one (inodes and their
 * extents), the second (directory entries: names are lost, and the inodes
 * they named keep their other item or go to /lost+found), or both. The
 * check reports each and checks everything else. */
static void test_node(void)
{
	for (int v = 0; v < 3 * K_NR; v++) {
		int k = v / 3, mode = v % 3;
		struct smr_fsck_result r;
		uint64_t leaf, second;
		struct fs f;

		if (k == K_ZCNV)
			continue;
		populate((enum kind)k, 400);
		fs_leaves(&leaf, &second);
		CU_ASSERT_FATAL(leaf != 0 && second != 0 && leaf != second);
		if (mode != 1)
			flip(second + 5000);
		if (mode != 0)
			flip(leaf + 5000);

		CU_ASSERT_EQUAL(run_fsck(false, false, &r),
				SMR_FSCK_UNCORRECTED);
		CU_ASSERT(r.problems > 0);
		/* Each damaged node, and everything else: the namespace is
		 * walked past them. */
		CU_ASSERT_EQUAL(r.bad_nodes, mode == 2 ? 2 : 1);
		CU_ASSERT(r.inodes > 100);
		CU_ASSERT(r.entries > 100);
		CU_ASSERT(r.nodes > 2);
		/* The library refuses the node and carries on. */
		SMR_ASSERT_OK(fs_open(&f, true));
		if (f.ns) {
			uint64_t problems = 0;

			CU_ASSERT(smr_cow_check(f.cow) < 0);
			CU_ASSERT(smr_ns_check(f.ns, &problems) < 0);
			fs_close(&f);
		}
		/* The repair salvages the tree: the damaged leaf's items
		 * are dropped, the entries that named its inodes with
		 * them, and what only they referenced is given back. */
		CU_ASSERT_EQUAL(run_fsck(true, false, &r), SMR_FSCK_FIXED);
		CU_ASSERT(r.fixed > 0);
		CU_ASSERT_EQUAL(r.remaining, 0);
		CU_ASSERT_EQUAL(run_fsck(false, true, &r), SMR_FSCK_OK);
		CU_ASSERT_EQUAL(r.problems, 0);
		CU_ASSERT(mode ? r.inodes < 407 : r.inodes == 407);
		mounts_clean();
		CU_ASSERT_TRUE(f1_intact());
	}
}

/*
 * The namespace tree's directory leaf damaged: by one bit (@one_bit), which
 * every read puts back from the checksum, so the check sees every item and
 * the repair rebuilds the tree with nothing lost; or by four, with the
 * allocator state of both recoverable checkpoints damaged too (@states):
 * the salvage cannot run on a state of its own, so the repair rebuilds the
 * state, salvages, and audits the salvaged trees before its one commit
 * takes space (found by random bit flips: such images were left
 * unrepaired, the salvage's open refused), or with every checkpoint record
 * lost (@no_ckpt; the checkpoint is rebuilt from the trees). Nothing the
 * trees still reference is overwritten: the data reads back and scrubs
 * clean.
 */
static void leaf_damage(bool one_bit, bool states, bool no_ckpt)
{
	for (int k = 0; k < K_NR; k++) {
		struct smr_fsck_result r;
		uint64_t leaf, second;

		if (k == K_ZCNV)
			continue;
		populate((enum kind)k, 400);
		fs_leaves(&leaf, &second);
		CU_ASSERT_FATAL(second != 0);
		if (states)
			damage_alloc_states();
		if (no_ckpt)
			zero_ckpts(false);
		flip_mask(second + 5000, one_bit ? 0x08 : 0x5a);

		CU_ASSERT_EQUAL(run_fsck(false, false, &r),
				SMR_FSCK_UNCORRECTED);
		CU_ASSERT_EQUAL(r.bad_nodes, 1);
		if (no_ckpt)
			CU_ASSERT_EQUAL(r.ckpt_valid, 0);
		if (one_bit) {
			CU_ASSERT_EQUAL(r.inodes, 407);
			CU_ASSERT_EQUAL(r.entries, 407);
			CU_ASSERT_TRUE(f1_intact());
		}
		CU_ASSERT_EQUAL(run_fsck(true, false, &r), SMR_FSCK_FIXED);
		CU_ASSERT_EQUAL(r.remaining, 0);
		CU_ASSERT_EQUAL(run_fsck(false, true, &r), SMR_FSCK_OK);
		CU_ASSERT_EQUAL(r.problems, 0);
		CU_ASSERT_EQUAL(r.bad_data_blocks, 0);
		CU_ASSERT_EQUAL(r.inodes, 407);
		if (one_bit)
			CU_ASSERT_EQUAL(r.entries, 407);
		mounts_clean();
		CU_ASSERT_TRUE(f1_intact());
	}
}

static void test_node_bit(void) { leaf_damage(true, false, false); }
static void test_alloc_state_node(void) { leaf_damage(false, true, false); }

/*
 * Every checkpoint record lost, and the directory leaf of the newest
 * namespace tree damaged: the rebuilt checkpoint takes the newest root all
 * the same, and the salvage drops the leaf (the inodes it named go to
 * /lost+found). Taking an older tree instead would lose more: the newest
 * commit, or far more where the older trees' space was reused.
 */
static void test_ckpt_all_lost_node(void) { leaf_damage(false, false, true); }

/* Unlink populate()'s /d/file-with-a-long-name-NNNNNN for NNNNNN from
 * @from below @to in steps of @step, and commit. */
static void unlink_many(struct smr_ns *ns, int from, int to, int step)
{
	for (int i = from; i < to; i += step) {
		char name[64];

		snprintf(name, sizeof(name), "file-with-a-long-name-%06d", i);
		SMR_ASSERT_OK(smr_ns_unlink(ns, &cr, ino_d, name));
	}
	SMR_ASSERT_OK(smr_ns_sync(ns));
}

/* /d's file-with-a-long-name-NNNNNN of populate(): -ENOENT if it is not
 * there, -EIO if it is with other contents, else 0. */
static int many_file(struct smr_ns *ns, int i)
{
	size_t want = i % 7 ? 0 : 4096;
	struct smr_ns_attr a;
	char name[64], buf[4097];
	int rc;

	snprintf(name, sizeof(name), "file-with-a-long-name-%06d", i);
	rc = smr_ns_lookup(ns, ino_d, name, &a);
	if (rc)
		return rc;
	if (a.size != want ||
	    smr_ns_read(ns, a.ino, 0, sizeof(buf), buf) != (ssize_t)want)
		return -EIO;
	for (size_t j = 0; j < want; j++)
		if (buf[j] != (char)('a' + j % 23))
			return -EIO;
	return 0;
}

/* The namespace tree's root, shared by both checkpoints a mount can fall
 * back to: nothing of the tree can be read through it. The repair finds
 * the tree's leaves by a scan of the device and rebuilds the tree from
 * the newest copy of each: every file comes back with its contents, and
 * the files deleted in earlier commits (their leaves' older copies are
 * on the device too) stay deleted. */
static void test_node_root(void)
{
	for (int k = 0; k < K_NR; k++) {
		struct smr_fsck_result r;
		struct smr_ns_attr a;
		uint64_t root;
		struct fs f;

		if (k == K_ZCNV)
			continue;
		populate((enum kind)k, 400);
		/* Older copies of leaves: every tenth of the files deleted,
		 * then /d/f2 written again, each in a commit. */
		SMR_ASSERT_OK(fs_open(&f, true));
		unlink_many(f.ns, 5, 400, 10);
		CU_ASSERT_EQUAL(smr_ns_write(f.ns, &cr, ino_f2, 0, "XYZ", 3),
				3);
		SMR_ASSERT_OK(smr_ns_sync(f.ns));
		fs_close(&f);
		SMR_ASSERT_OK(fs_open(&f, false));
		CU_ASSERT_FATAL(f.cow->trees[SMR_TREE_FS].level > 0);
		root = f.cow->trees[SMR_TREE_FS].addr;
		fs_close(&f); /* a commit that leaves the tree as it is */
		flip(root + 5000);

		CU_ASSERT_EQUAL(run_fsck(false, false, &r),
				SMR_FSCK_UNCORRECTED);
		CU_ASSERT(r.problems > 0);
		CU_ASSERT_EQUAL(run_fsck(true, false, &r), SMR_FSCK_FIXED);
		CU_ASSERT_EQUAL(r.remaining, 0);
		CU_ASSERT_EQUAL(run_fsck(false, true, &r), SMR_FSCK_OK);
		CU_ASSERT_EQUAL(r.problems, 0);
		CU_ASSERT_EQUAL(r.inodes, 407 - 40);
		mounts_clean();
		CU_ASSERT_TRUE(f1_intact());
		SMR_ASSERT_OK(fs_open(&f, true));
		if (!f.ns)
			continue;
		for (int i = 0; i < 400; i++)
			CU_ASSERT_EQUAL(many_file(f.ns, i),
					i % 10 == 5 ? -ENOENT : 0);
		{
			char buf[9000];

			CU_ASSERT_EQUAL(smr_ns_read(f.ns, ino_f2, 0,
						    sizeof(buf), buf),
					(ssize_t)sizeof(buf));
			CU_ASSERT(!memcmp(buf, "XYZ", 3));
			for (size_t j = 3; j < sizeof(buf); j++)
				CU_ASSERT_FATAL(buf[j] == (char)('a' + j % 23));
		}
		SMR_ASSERT_OK(smr_ns_lookup(f.ns, ROOT, "link", &a));
		CU_ASSERT_EQUAL(a.ino, ino_f1);
		CU_ASSERT_EQUAL(a.nlink, 2);
		CU_ASSERT_EQUAL(smr_ns_lookup(f.ns, ROOT, "lost+found", &a),
				-ENOENT);
		fs_close(&f);
	}
}

/* Non-root nodes under a quarter full, counted from the nodes themselves
 * (the engine's own trees included). */
static uint64_t count_underfull(void)
{
	uint64_t *addrs = NULL, under = 0;
	size_t n = 0;
	struct fs f;

	SMR_ASSERT_OK(fs_open(&f, false));
	pthread_rwlock_rdlock(&f.cow->lock);
	SMR_ASSERT_OK(smr_bt_node_addrs_locked(f.cow, &addrs, &n));
	for (size_t i = 0; i < n; i++) {
		uint8_t *nb = smr_cow_buf_alloc(f.cow->ns);
		bool root = false;
		uint32_t used;

		CU_ASSERT_FATAL(nb != NULL);
		for (uint32_t id = 1; id <= SMR_COW_MAX_TREE; id++)
			root |= f.cow->trees[id].addr == addrs[i];
		SMR_ASSERT_OK(f.cow->sops->read(f.cow, addrs[i], nb,
						f.cow->ns));
		used = smr_node_level(nb) ?
			       smr_node_nritems(nb) *
				       (uint32_t)sizeof(struct smr_dkptr) :
			       smr_leaf_used(nb, f.cow->ns);
		if (!root && used < (f.cow->ns - SMR_NODE_HDR) / 4)
			under++;
		smr_cow_buf_free(nb);
	}
	pthread_rwlock_unlock(&f.cow->lock);
	fs_close(&f);
	free(addrs);
	return under;
}

/*
 * B-tree fill: deletion keeps non-root nodes a quarter full, but splits
 * that append leave nodes with one item, so underfull nodes are counted
 * (exactly, as the nodes say) and are no problem: images the engine made,
 * with many files created (which leaves one) and then every other one
 * removed (rebalanced), check clean.
 */
static void test_fill(void)
{
	for (int k = 0; k < K_ZCNV; k++) {
		struct smr_fsck_result r;
		struct fs f;

		populate((enum kind)k, 650);
		/* The files' creation split by appending: a node is left
		 * underfull (with this many files: the count decides whether
		 * the last split left one), and the image is clean. */
		CU_ASSERT_EQUAL(run_fsck(false, false, &r), SMR_FSCK_OK);
		CU_ASSERT(r.underfull_nodes > 0);
		CU_ASSERT_EQUAL(r.underfull_nodes, count_underfull());
		SMR_ASSERT_OK(fs_open(&f, true));
		unlink_many(f.ns, 0, 650, 2);
		fs_close(&f);
		CU_ASSERT_EQUAL(run_fsck(false, false, &r), SMR_FSCK_OK);
		CU_ASSERT_EQUAL(r.problems, 0);
		CU_ASSERT_EQUAL(r.underfull_nodes, count_underfull());
		CU_ASSERT(r.underfull_nodes < r.nodes);
		CU_ASSERT(r.nodes > 3);
	}
}

/* ------------------------------------------------------------------------
 * The namespace, changed through the item API
 * ------------------------------------------------------------------------ */

static struct smr_key key(uint64_t objid, uint8_t type, uint64_t off)
{
	struct smr_key k = { .objid = objid, .type = type, .offset = off };

	return k;
}

/* Set @ino's link count, or (@nlink UINT32_MAX) its size to @size. */
enum inode_field { F_NLINK, F_SIZE, F_MODE };

/* Set one field of inode @ino's item, behind the namespace's back. */
static void set_inode(uint64_t ino, enum inode_field field, uint64_t value)
{
	struct smr_key k = key(ino, SMR_NS_T_INODE, 0);
	struct smr_ns_inode_d d;
	size_t len = sizeof(d);
	struct smr_txn *t;
	struct fs f;

	SMR_ASSERT_OK(fs_open(&f, false));
	SMR_ASSERT_OK(smr_bt_lookup(f.cow, SMR_TREE_FS, &k, &d, &len));
	if (field == F_SIZE)
		d.size = htole64(value);
	else if (field == F_NLINK)
		d.nlink = htole32((uint32_t)value);
	else
		d.mode = htole32((uint32_t)value);
	SMR_ASSERT_OK(smr_txn_begin(f.cow, &t));
	SMR_ASSERT_OK(smr_bt_update(t, SMR_TREE_FS, &k, &d, sizeof(d)));
	smr_txn_end(t);
	fs_close(&f);
}

static void set_nlink(uint64_t ino, uint32_t nlink)
{
	set_inode(ino, F_NLINK, nlink);
}

/* Directories keep size 0: the root's and a subdirectory's set. */
static void test_dirsize(void)
{
	struct smr_fsck_result r;
	struct smr_ns_attr a;
	struct fs f;

	populate(K_FILE, 0);
	set_inode(ROOT, F_SIZE, 123456);
	set_inode(ino_sub, F_SIZE, 4096);
	CU_ASSERT_EQUAL(run_fsck(false, false, &r), SMR_FSCK_UNCORRECTED);
	CU_ASSERT_EQUAL(r.problems, 2);
	CU_ASSERT_EQUAL(run_fsck(true, false, &r), SMR_FSCK_FIXED);
	CU_ASSERT_EQUAL(r.fixed, 2);
	CU_ASSERT_EQUAL(r.remaining, 0);
	CU_ASSERT_EQUAL(run_fsck(false, false, &r), SMR_FSCK_OK);
	mounts_clean();
	SMR_ASSERT_OK(fs_open(&f, true));
	if (f.ns) {
		SMR_ASSERT_OK(smr_ns_getattr(f.ns, ROOT, &a));
		CU_ASSERT_EQUAL(a.size, 0);
		fs_close(&f);
	}
}

static void test_nlink(void)
{
	struct smr_ns_attr a;
	struct fs f;

	populate(K_FILE, 0);
	set_nlink(ino_f1, 7);
	set_nlink(ino_d, 9);
	check_repair_clean();
	SMR_ASSERT_OK(fs_open(&f, true));
	SMR_ASSERT_OK(smr_ns_getattr(f.ns, ino_f1, &a));
	CU_ASSERT_EQUAL(a.nlink, 2);
	SMR_ASSERT_OK(smr_ns_getattr(f.ns, ino_d, &a));
	CU_ASSERT_EQUAL(a.nlink, 3);
	fs_close(&f);
	mounts_clean();
}

/*
 * An access ACL out of step with the mode (the mode changed behind the
 * namespace's back): fsck -y sets the ACL's owner, group class and other
 * from the mode, as a chmod does, and keeps the named entry.
 */
static void test_acl(void)
{
	/* user::rw- user:1000:rw- group::r-- mask::rw- other::r-- */
	static const uint8_t acl[] = {
		2, 0, 0, 0,
		0x01, 0, 6, 0, 0xff, 0xff, 0xff, 0xff,
		0x02, 0, 6, 0, 0xe8, 0x03, 0, 0,
		0x04, 0, 4, 0, 0xff, 0xff, 0xff, 0xff,
		0x10, 0, 6, 0, 0xff, 0xff, 0xff, 0xff,
		0x20, 0, 4, 0, 0xff, 0xff, 0xff, 0xff,
	};
	const char *name = "system.posix_acl_access";
	uint8_t got[sizeof(acl) + 8], want[sizeof(acl)];
	struct smr_ns_attr a;
	struct fs f;

	populate(K_FILE, 0);
	SMR_ASSERT_OK(fs_open(&f, true));
	smr_ns_set_acl(f.ns, true);
	SMR_ASSERT_OK(smr_ns_setxattr(f.ns, &cr, ino_f1, name, acl,
				      sizeof(acl), 0));
	SMR_ASSERT_OK(smr_ns_sync(f.ns));
	fs_close(&f);
	set_inode(ino_f1, F_MODE, S_IFREG | 0640);
	check_repair_clean();
	SMR_ASSERT_OK(fs_open(&f, true));
	smr_ns_set_acl(f.ns, true);
	SMR_ASSERT_OK(smr_ns_getattr(f.ns, ino_f1, &a));
	CU_ASSERT_EQUAL(a.mode, S_IFREG | 0640);
	memcpy(want, acl, sizeof(acl));
	want[4 + 3 * 8 + 2] = 4; /* the mask: the mode's group r-- */
	want[4 + 4 * 8 + 2] = 0; /* other: --- */
	CU_ASSERT_EQUAL(smr_ns_getxattr(f.ns, &cr, ino_f1, name, got,
					sizeof(got)), (ssize_t)sizeof(acl));
	CU_ASSERT(!memcmp(got, want, sizeof(want)));
	fs_close(&f);
	mounts_clean();
}

static void delete_item(struct smr_key k)
{
	struct smr_txn *t;
	struct fs f;

	SMR_ASSERT_OK(fs_open(&f, false));
	SMR_ASSERT_OK(smr_txn_begin(f.cow, &t));
	SMR_ASSERT_OK(smr_bt_delete(t, SMR_TREE_FS, &k));
	smr_txn_end(t);
	fs_close(&f);
}

static void test_missing_inode(void)
{
	struct smr_fsck_result r;
	struct smr_ns_attr a;
	struct fs f;

	for (int k = 0; k < 2; k++) {
		populate((enum kind)k, 0);
		delete_item(key(ino_empty, SMR_NS_T_INODE, 0));
		/* A file with data, and a directory with entries: their
		 * items stay behind without them. */
		delete_item(key(ino_f2, SMR_NS_T_INODE, 0));
		delete_item(key(ino_d, SMR_NS_T_INODE, 0));
		CU_ASSERT_EQUAL(run_fsck(false, false, &r), SMR_FSCK_UNCORRECTED);
		CU_ASSERT_EQUAL(r.inodes, 4); /* root, f1, sub, sym */
		check_repair_clean();
		CU_ASSERT_EQUAL(run_fsck(false, false, &r), SMR_FSCK_OK);
		CU_ASSERT_EQUAL(r.extents, 1); /* f1's only */
		CU_ASSERT_EQUAL(r.leaked, 0);
		SMR_ASSERT_OK(fs_open(&f, true));
		SMR_ASSERT_RC(smr_ns_lookup(f.ns, ROOT, "d", &a), -ENOENT);
		/* f1 keeps its other name; sub goes to lost+found. */
		SMR_ASSERT_OK(smr_ns_lookup(f.ns, ROOT, "link", &a));
		CU_ASSERT_EQUAL(a.nlink, 1);
		SMR_ASSERT_OK(smr_ns_lookup(f.ns, ROOT, "lost+found", &a));
		fs_close(&f);
		mounts_clean();
	}
}

/* An entry named @name in @dir pointing at @ino, both items. */
static void add_entry(uint64_t dir, const char *name, uint64_t ino,
		      uint64_t seq)
{
	union {
		struct smr_ns_dirent_d d;
		uint8_t b[sizeof(struct smr_ns_dirent_d) + 64];
	} v;
	size_t nlen = strlen(name);
	uint64_t h = smr_hash64(name, nlen, SMR_NS_HASH_SEED) & ~0xffULL;
	struct smr_txn *t;
	struct fs f;
	struct smr_key k;

	memset(&v, 0, sizeof(v));
	v.d.ino = htole64(ino);
	v.d.dtype = DT_REG;
	v.d.name_len = htole16((uint16_t)nlen);
	memcpy(v.b + sizeof(v.d), name, nlen);
	SMR_ASSERT_OK(fs_open(&f, false));
	SMR_ASSERT_OK(smr_txn_begin(f.cow, &t));
	v.d.ref = htole64(seq);
	k = key(dir, SMR_NS_T_DIRENT, h);
	SMR_ASSERT_OK(smr_bt_insert(t, SMR_TREE_FS, &k, &v, sizeof(v.d) + nlen));
	v.d.ref = htole64(h);
	k = key(dir, SMR_NS_T_DIRINDEX, seq);
	SMR_ASSERT_OK(smr_bt_insert(t, SMR_TREE_FS, &k, &v, sizeof(v.d) + nlen));
	smr_txn_end(t);
	fs_close(&f);
}

static void test_dangling(void)
{
	struct smr_ns_attr a;
	struct fs f;

	populate(K_ZLOG, 0);
	/* What a create cut by an engine error leaves: the entry without
	 * its inode (sequence numbers below the directory's next one). */
	add_entry(ROOT, "ghost", 9999, 1000);
	check_repair_clean();
	SMR_ASSERT_OK(fs_open(&f, true));
	SMR_ASSERT_RC(smr_ns_lookup(f.ns, ROOT, "ghost", &a), -ENOENT);
	SMR_ASSERT_OK(smr_ns_lookup(f.ns, ROOT, "sym", &a));
	fs_close(&f);
	mounts_clean();
}

struct find_arg {
	const char *name;
	uint64_t hkey, seq;
	bool found;
};

static int find_cb(void *arg, const struct smr_key *k, const void *val,
		   size_t len)
{
	struct find_arg *fa = arg;
	struct smr_ns_dirent_d d;
	size_t nlen = strlen(fa->name);

	if (len != sizeof(d) + nlen)
		return 0;
	memcpy(&d, val, sizeof(d));
	if (memcmp((const uint8_t *)val + sizeof(d), fa->name, nlen))
		return 0;
	fa->hkey = k->offset;
	fa->seq = le64toh(d.ref);
	fa->found = true;
	return 1;
}

static void test_nameless(void)
{
	struct smr_key from, to;
	struct find_arg fa = { .name = "f2" };
	struct smr_ns_attr a, l;
	struct fs f;

	for (int k = 0; k < 2; k++) {
		populate((enum kind)k, 0);
		fa.name = "f2";
		SMR_ASSERT_OK(fs_open(&f, false));
		from = key(ino_d, SMR_NS_T_DIRENT, 0);
		to = key(ino_d, SMR_NS_T_DIRENT, UINT64_MAX);
		fa.found = false;
		SMR_ASSERT_OK(smr_bt_iterate(f.cow, SMR_TREE_FS, &from, &to,
					     find_cb, &fa));
		fs_close(&f);
		CU_ASSERT_FATAL(fa.found);
		delete_item(key(ino_d, SMR_NS_T_DIRENT, fa.hkey));
		delete_item(key(ino_d, SMR_NS_T_DIRINDEX, fa.seq));
		/* And a directory too. */
		from = key(ino_d, SMR_NS_T_DIRENT, 0);
		fa.name = "sub";
		SMR_ASSERT_OK(fs_open(&f, false));
		fa.found = false;
		SMR_ASSERT_OK(smr_bt_iterate(f.cow, SMR_TREE_FS, &from, &to,
					     find_cb, &fa));
		fs_close(&f);
		fa.name = "f2";
		CU_ASSERT_FATAL(fa.found);
		delete_item(key(ino_d, SMR_NS_T_DIRENT, fa.hkey));
		delete_item(key(ino_d, SMR_NS_T_DIRINDEX, fa.seq));

		check_repair_clean();
		SMR_ASSERT_OK(fs_open(&f, true));
		SMR_ASSERT_OK(smr_ns_lookup(f.ns, ROOT, "lost+found", &l));
		CU_ASSERT(S_ISDIR(l.mode));
		CU_ASSERT_EQUAL(l.nlink, 3);
		{
			char name[32];
			char buf[9000];

			snprintf(name, sizeof(name), "#%llu",
				 (unsigned long long)ino_f2);
			SMR_ASSERT_OK(smr_ns_lookup(f.ns, l.ino, name, &a));
			CU_ASSERT_EQUAL(a.ino, ino_f2);
			/* fsck keyed the entry by the namespace's own hash. */
			from = key(l.ino, SMR_NS_T_DIRENT, 0);
			to = key(l.ino, SMR_NS_T_DIRENT, UINT64_MAX);
			fa.name = name;
			fa.found = false;
			SMR_ASSERT_OK(smr_bt_iterate(f.cow, SMR_TREE_FS, &from,
						     &to, find_cb, &fa));
			CU_ASSERT_FATAL(fa.found);
			CU_ASSERT_EQUAL(fa.hkey & ~(uint64_t)0xff,
					smr_ns_name_hash(name, strlen(name)) &
						~(uint64_t)0xff);
			CU_ASSERT_EQUAL(a.nlink, 1);
			CU_ASSERT_EQUAL(smr_ns_read(f.ns, ino_f2, 0, sizeof(buf), buf),
					(ssize_t)sizeof(buf));
			CU_ASSERT_EQUAL(buf[100], 'a' + 100 % 23);
			snprintf(name, sizeof(name), "#%llu",
				 (unsigned long long)ino_sub);
			SMR_ASSERT_OK(smr_ns_lookup(f.ns, l.ino, name, &a));
			CU_ASSERT_EQUAL(a.ino, ino_sub);
			SMR_ASSERT_OK(smr_ns_lookup(f.ns, ino_sub, "..", &a));
			CU_ASSERT_EQUAL(a.ino, l.ino);
		}
		SMR_ASSERT_OK(smr_ns_getattr(f.ns, ino_d, &a));
		CU_ASSERT_EQUAL(a.nlink, 2);
		fs_close(&f);
		mounts_clean();
	}
}

static int count_cb(void *arg, const char *name, size_t namelen,
		    uint64_t ino, uint32_t dtype, uint64_t next)
{
	(void)name;
	(void)namelen;
	(void)ino;
	(void)dtype;
	(void)next;
	(*(int *)arg)++;
	return 0;
}

/* One of the two items of an entry lost: the other brings it back. */
static void test_halves(void)
{
	struct find_arg fa = { .name = "f1" };
	struct smr_key from, to;
	struct smr_ns_attr a;
	struct fs f;
	int n = 0;

	populate(K_ZLOG, 0);
	SMR_ASSERT_OK(fs_open(&f, false));
	from = key(ino_d, SMR_NS_T_DIRENT, 0);
	to = key(ino_d, SMR_NS_T_DIRENT, UINT64_MAX);
	SMR_ASSERT_OK(smr_bt_iterate(f.cow, SMR_TREE_FS, &from, &to, find_cb,
				     &fa));
	fs_close(&f);
	CU_ASSERT_FATAL(fa.found);
	/* /d/f1 loses its readdir item, /d/f2 its entry item, and a readdir
	 * item naming a missing inode appears in the root. */
	delete_item(key(ino_d, SMR_NS_T_DIRINDEX, fa.seq));
	SMR_ASSERT_OK(fs_open(&f, false));
	fa.name = "f2";
	fa.found = false;
	SMR_ASSERT_OK(smr_bt_iterate(f.cow, SMR_TREE_FS, &from, &to, find_cb,
				     &fa));
	fs_close(&f);
	CU_ASSERT_FATAL(fa.found);
	delete_item(key(ino_d, SMR_NS_T_DIRENT, fa.hkey));
	add_entry(ROOT, "ghost", 9999, 500);
	delete_item(key(ROOT, SMR_NS_T_DIRENT,
			smr_hash64("ghost", 5, SMR_NS_HASH_SEED) & ~0xffULL));

	check_repair_clean();
	SMR_ASSERT_OK(fs_open(&f, true));
	SMR_ASSERT_OK(smr_ns_lookup(f.ns, ino_d, "f1", &a));
	CU_ASSERT_EQUAL(a.ino, ino_f1);
	SMR_ASSERT_OK(smr_ns_lookup(f.ns, ino_d, "f2", &a));
	CU_ASSERT_EQUAL(a.ino, ino_f2);
	SMR_ASSERT_OK(smr_ns_readdir(f.ns, ino_d, 0, count_cb, &n));
	CU_ASSERT_EQUAL(n, 2 + 3); /* ".", "..", f1, f2, sub */
	n = 0;
	SMR_ASSERT_OK(smr_ns_readdir(f.ns, ROOT, 0, count_cb, &n));
	CU_ASSERT_EQUAL(n, 2 + 4); /* d, empty, link, sym */
	fs_close(&f);
	mounts_clean();
}

/* ------------------------------------------------------------------------
 * Orphans, data, space
 * ------------------------------------------------------------------------ */

static void test_orphan(void)
{
	struct smr_fsck_result r;
	struct smr_ns_attr a;
	struct fs f;

	populate(K_ZLOG, 0);
	SMR_ASSERT_OK(fs_open(&f, true));
	/* More than a handful, as a crash of a busy daemon leaves. */
	for (int i = 0; i < 100; i++) {
		char name[32];

		snprintf(name, sizeof(name), "open-%d", i);
		SMR_ASSERT_OK(smr_ns_create(f.ns, &cr, ROOT, name,
					    0644 | S_IFREG, &a));
		CU_ASSERT_EQUAL(smr_ns_write(f.ns, &cr, a.ino, 0, "data", 4),
				4);
		SMR_ASSERT_OK(smr_ns_unlink(f.ns, &cr, ROOT, name));
	}
	fs_close(&f); /* still open: they stay orphans */

	CU_ASSERT_EQUAL(run_fsck(false, false, &r), SMR_FSCK_OK);
	CU_ASSERT_EQUAL(r.orphans, 100);
	CU_ASSERT_EQUAL(r.problems, 0);
	CU_ASSERT_EQUAL(run_fsck(true, false, &r), SMR_FSCK_FIXED);
	CU_ASSERT_EQUAL(r.fixed, 100);
	CU_ASSERT_EQUAL(run_fsck(false, false, &r), SMR_FSCK_OK);
	CU_ASSERT_EQUAL(r.orphans, 0);
	mounts_clean();
}

struct ext_arg {
	uint64_t dev_off;
	bool found;
};

static int ext_cb(void *arg, const struct smr_key *k, const void *val,
		  size_t len)
{
	struct ext_arg *ea = arg;
	struct smr_ns_extent_d d;

	(void)k;
	if (len < sizeof(d))
		return 0;
	memcpy(&d, val, sizeof(d));
	ea->dev_off = le64toh(d.dev_off);
	ea->found = true;
	return 1;
}

static void test_scrub(void)
{
	for (int k = 0; k < 2; k++) {
		struct smr_key from, to;
		struct smr_fsck_result r;
		struct ext_arg ea = { 0 };
		char buf[16];
		struct fs f;

		populate((enum kind)k, 0);
		SMR_ASSERT_OK(fs_open(&f, false));
		from = key(ino_f2, SMR_NS_T_EXTENT, 0);
		to = key(ino_f2, SMR_NS_T_EXTENT, UINT64_MAX);
		SMR_ASSERT_OK(smr_bt_iterate(f.cow, SMR_TREE_FS, &from, &to,
					     ext_cb, &ea));
		fs_close(&f);
		CU_ASSERT_FATAL(ea.found);
		/* One bit of the second block: reads put it back. */
		flip_mask(ea.dev_off + 4096 + 10, 0x04);
		CU_ASSERT_EQUAL(run_fsck(false, false, &r), SMR_FSCK_OK);
		CU_ASSERT_EQUAL(run_fsck(false, true, &r), SMR_FSCK_UNCORRECTED);
		CU_ASSERT_EQUAL(r.bad_data_blocks, 1);
		SMR_ASSERT_OK(fs_open(&f, true));
		CU_ASSERT_EQUAL(smr_ns_read(f.ns, ino_f2, 4096, sizeof(buf), buf),
				(ssize_t)sizeof(buf));
		for (size_t i = 0; i < sizeof(buf); i++)
			CU_ASSERT_EQUAL(buf[i], (char)('a' + (4096 + i) % 23));
		fs_close(&f);
		/* More: the block fails. */
		flip(ea.dev_off + 4096 + 10);

		/* Without scrub the data is not read. */
		CU_ASSERT_EQUAL(run_fsck(false, false, &r), SMR_FSCK_OK);
		CU_ASSERT_EQUAL(run_fsck(false, true, &r), SMR_FSCK_UNCORRECTED);
		CU_ASSERT_EQUAL(r.bad_data_blocks, 1);
		CU_ASSERT_EQUAL(run_fsck(true, true, &r), SMR_FSCK_UNCORRECTED);
		CU_ASSERT_EQUAL(r.fixed, 0);
		SMR_ASSERT_OK(fs_open(&f, true));
		CU_ASSERT_EQUAL(smr_ns_read(f.ns, ino_f2, 4096, sizeof(buf), buf),
				-EIO);
		CU_ASSERT_EQUAL(smr_ns_read(f.ns, ino_f2, 0, sizeof(buf), buf),
				(ssize_t)sizeof(buf));
		fs_close(&f);
	}
}

/* A zone that lost its data behind the filesystem's back (its write
 * pointer went back): referenced data past the write pointer was never
 * written, and the repair drops it before the allocator writes over it:
 * the file reads zeros there, and a second check is clean. */
static void test_wp(void)
{
	struct smr_key from, to;
	struct smr_fsck_result r;
	struct ext_arg ea = { 0 };
	char zfile[4200], buf[16];
	struct fs f;

	populate(K_ZLOG, 0);
	SMR_ASSERT_OK(fs_open(&f, false));
	from = key(ino_f1, SMR_NS_T_EXTENT, 0);
	to = key(ino_f1, SMR_NS_T_EXTENT, UINT64_MAX);
	SMR_ASSERT_OK(smr_bt_iterate(f.cow, SMR_TREE_FS, &from, &to, ext_cb,
				     &ea));
	fs_close(&f);
	CU_ASSERT_FATAL(ea.found);
	snprintf(zfile, sizeof(zfile), "%s/seq-%06llu", path,
		 (unsigned long long)(ea.dev_off / (2 * SMR_MIB)));
	CU_ASSERT_EQUAL(truncate(zfile, (off_t)(ea.dev_off % (2 * SMR_MIB))), 0);

	CU_ASSERT_EQUAL(run_fsck(false, false, &r), SMR_FSCK_UNCORRECTED);
	CU_ASSERT(r.problems > 0);
	CU_ASSERT_EQUAL(run_fsck(true, false, &r), SMR_FSCK_FIXED);
	CU_ASSERT_EQUAL(r.remaining, 0);
	CU_ASSERT(r.fixed > 0);
	CU_ASSERT_EQUAL(run_fsck(false, true, &r), SMR_FSCK_OK);
	SMR_ASSERT_OK(fs_open(&f, true));
	if (f.ns) {
		static const char zeros[sizeof(buf)];

		memset(buf, 0xa5, sizeof(buf));
		CU_ASSERT_EQUAL(smr_ns_read(f.ns, ino_f1, 0, sizeof(buf), buf),
				(ssize_t)sizeof(buf));
		CU_ASSERT_EQUAL(memcmp(buf, zeros, sizeof(buf)), 0);
		fs_close(&f);
	}
}

/*
 * The tail of the metadata zone lost (a zone file of a zoned loop directory
 * cut short, or a device that lost writes it had acknowledged), through
 * the allocator states of both recoverable checkpoints. The cut tears the
 * node before them (@torn): the repair rebuilds the state and salvages the
 * tree, and the space audit leaves the torn node's block out as the
 * salvage does, where it used to count it as referenced data past the
 * write pointer and refuse every repair. Or it falls into the zeros after
 * the items of an earlier node, which still reads whole though the write
 * pointer lies inside it: the repair finishes the zone first, so that
 * nothing is written over the node, where the audit used to refuse. The
 * nodes the cut took are the reverse map's, rebuilt from the extents:
 * every file is kept. Before, fsck repaired neither and mount.smrfs
 * refused both.
 */
static void wp_meta(bool torn)
{
	struct smr_fsck_result r;
	uint64_t s1, s2, node, cut;
	uint8_t buf[16384];
	char zfile[4200];
	size_t used = 0;
	int fd;

	populate(K_ZLOG, 60);
	s1 = alloc_state_addr();
	CU_ASSERT_FATAL(s1 != 0);
	flip(s1 + 100);
	s2 = alloc_state_addr();
	CU_ASSERT_FATAL(s2 != 0 && s2 != s1);
	snprintf(zfile, sizeof(zfile), "%s/seq-%06llu", path,
		 (unsigned long long)(s1 / (2 * SMR_MIB)));
	fd = open(zfile, O_RDONLY);
	CU_ASSERT_FATAL(fd >= 0);
	/* The node before the states; or, untorn, the last one before them
	 * whose items end in its first half (the others fill it). */
	for (node = SMR_MIN(s1, s2) - sizeof(buf);
	     node > s1 - s1 % (2 * SMR_MIB); node -= 4096) {
		CU_ASSERT_EQUAL_FATAL(pread(fd, buf, sizeof(buf),
					    (off_t)(node % (2 * SMR_MIB))),
				      (ssize_t)sizeof(buf));
		if (memcmp(buf, "SNOD", 4))
			continue;
		for (used = sizeof(buf); used && !buf[used - 1]; used--)
			;
		if (torn || used <= sizeof(buf) / 2)
			break;
	}
	close(fd);
	CU_ASSERT_FATAL(!memcmp(buf, "SNOD", 4));
	CU_ASSERT_FATAL(used > 4096 || !torn);
	CU_ASSERT_FATAL(torn || used <= sizeof(buf) / 2);
	cut = node + (torn ? 4096 : (used + 4095) / 4096 * 4096);
	CU_ASSERT_EQUAL(truncate(zfile, (off_t)(cut % (2 * SMR_MIB))), 0);

	CU_ASSERT_EQUAL(run_fsck(false, false, &r), SMR_FSCK_UNCORRECTED);
	CU_ASSERT_EQUAL(r.bad_nodes, 1);
	CU_ASSERT_EQUAL(run_fsck(true, false, &r), SMR_FSCK_FIXED);
	CU_ASSERT_EQUAL(r.remaining, 0);
	CU_ASSERT_EQUAL(run_fsck(false, true, &r), SMR_FSCK_OK);
	CU_ASSERT_EQUAL(r.problems, 0);
	CU_ASSERT_EQUAL(r.bad_data_blocks, 0);
	CU_ASSERT_EQUAL(r.inodes, 67);
	mounts_clean();
	CU_ASSERT_TRUE(f1_intact());
}

static void test_wp_meta(void) { wp_meta(true); }
static void test_wp_node(void) { wp_meta(false); }

/* Space written and committed that nothing references: the zoned counter
 * is too high, the other modules lose it. */
static void test_leak(void)
{
	for (int k = 0; k < 2; k++) {
		struct smr_alloc_hint hint = { 0 };
		struct smr_extent x[4];
		struct smr_fsck_result r;
		void *buf = smr_dev_buf_alloc(8 * 4096);
		struct fs f;
		int n;

		populate((enum kind)k, 0);
		SMR_ASSERT_OK(fs_open(&f, false));
		n = smr_alloc_write(f.cow->alloc, buf, 8 * 4096, &hint,
				    SMR_STREAM_HOT, x, 4);
		CU_ASSERT(n >= 1);
		/* Settled as if referenced, and referenced by nothing. */
		for (int i = 0; i < n; i++)
			SMR_ASSERT_OK(smr_alloc_settle(f.cow->alloc, x[i].off,
						       x[i].len));
		SMR_ASSERT_OK(smr_cow_commit_forced(f.cow));
		fs_close(&f);
		smr_dev_buf_free(buf);

		CU_ASSERT_EQUAL(run_fsck(false, false, &r), SMR_FSCK_UNCORRECTED);
		if (k == K_FILE)
			CU_ASSERT_EQUAL(r.leaked, 8 * 4096);
		check_repair_clean();
		CU_ASSERT_EQUAL(run_fsck(false, false, &r), SMR_FSCK_OK);
		CU_ASSERT_EQUAL(r.leaked, 0);
		mounts_clean();
	}
}

/* ------------------------------------------------------------------------
 * The cleaner's reverse map
 * ------------------------------------------------------------------------ */

#define RM_ZONE (2 * SMR_MIB)

/* The first extent of @ino (its device offset), 0 if none. */
static uint64_t first_extent(struct smr_cow *cow, uint64_t ino)
{
	struct smr_key from = key(ino, SMR_NS_T_EXTENT, 0);
	struct smr_key to = key(ino, SMR_NS_T_EXTENT, UINT64_MAX);
	struct ext_arg ea = { 0 };

	SMR_ASSERT_OK(smr_bt_iterate(cow, SMR_TREE_FS, &from, &to, ext_cb,
				     &ea));
	return ea.found ? ea.dev_off : 0;
}

static uint64_t first_extent_of(uint64_t ino)
{
	uint64_t off = 0;
	struct fs f;

	SMR_ASSERT_OK(fs_open(&f, false));
	if (f.cow) {
		off = first_extent(f.cow, ino);
		fs_close(&f);
	}
	return off;
}

/* @len of rmap_set(): an item of the wrong size. */
#define RMAP_SET_BAD UINT64_MAX

/* Put (or, with @len 0, delete) the reverse-map entry at @off. */
static void rmap_set(uint64_t off, uint64_t len, uint64_t ino, uint64_t foff)
{
	struct smr_key k = key(off, SMR_RMAP_T_EXTENT, 0);
	struct smr_rmap_d d;
	struct smr_txn *t;
	struct fs f;

	memset(&d, 0, sizeof(d));
	d.len = htole64(len);
	d.owner_objid = htole64(ino);
	d.owner_type = SMR_NS_T_EXTENT;
	d.owner_offset = htole64(foff);
	SMR_ASSERT_OK(fs_open(&f, false));
	SMR_ASSERT_OK(smr_txn_begin(f.cow, &t));
	if (len)
		SMR_ASSERT_OK(smr_bt_put(t, SMR_TREE_RMAP, &k, &d,
					 len == RMAP_SET_BAD ? 16 : sizeof(d)));
	else
		SMR_ASSERT_OK(smr_bt_delete(t, SMR_TREE_RMAP, &k));
	smr_txn_end(t);
	fs_close(&f);
}

/*
 * populate(), then a 3 MiB file written after /d/f1 and /d/f2 and
 * unlinked: their zone is full (so the cleaner may take it) and holds
 * dead data. Returns where the unlinked file's data began.
 */
static uint64_t populate_cleanable(enum kind k)
{
	size_t len = 3 * SMR_MIB;
	char *buf = malloc(len);
	uint64_t ino, dead;
	struct fs f;

	CU_ASSERT_FATAL(buf != NULL);
	populate(k, 0);
	memset(buf, 0x3c, len);
	SMR_ASSERT_OK(fs_open(&f, true));
	ino = mkfile(f.ns, ROOT, "filler", 0);
	CU_ASSERT_FATAL(ino != 0);
	CU_ASSERT_EQUAL(smr_ns_write(f.ns, &cr, ino, 0, buf, len),
			(ssize_t)len);
	dead = first_extent(f.cow, ino);
	SMR_ASSERT_OK(smr_ns_unlink(f.ns, &cr, ROOT, "filler"));
	SMR_ASSERT_OK(smr_ns_sync(f.ns));
	fs_close(&f);
	free(buf);
	CU_ASSERT(dead != 0);
	return dead;
}

/* On a zoned device, the cleaner empties the zone at @off (which the
 * reverse map must describe whole) and the files read back; on every
 * device, the result checks clean with a map. */
static void clean_zone_of(uint64_t off)
{
	struct smr_cow_opts co = { .gc_off = true };
	struct smr_fsck_result r;
	uint32_t zno = (uint32_t)(off / RM_ZONE);
	struct fs f;

	if (cur_kind == K_FILE)
		goto check;
	memset(&f, 0, sizeof(f));
	SMR_ASSERT_OK(smr_dev_open(path, NULL, &f.dev));
	SMR_ASSERT_OK(smr_cow_open(f.dev, &co, &f.cow));
	SMR_ASSERT_OK(smr_ns_open(f.cow, NULL, &f.ns));
	CU_ASSERT(smr_alloc_zone_live(f.cow->alloc, zno) > 0);
	SMR_ASSERT_OK(smr_cow_clean_zone(f.cow, zno));
	CU_ASSERT_EQUAL(smr_alloc_zone_live(f.cow->alloc, zno), 0);
	CU_ASSERT_EQUAL(smr_dev_zone_cond(f.dev, zno), SMR_ZONE_COND_EMPTY);
	fs_close(&f);
	CU_ASSERT_TRUE(f1_intact());
check:
	CU_ASSERT_EQUAL(run_fsck(false, false, &r), SMR_FSCK_OK);
	CU_ASSERT_EQUAL(r.rmap_problems, 0);
	CU_ASSERT(r.rmap_entries > 0);
}

/*
 * A zone counting fewer live bytes than the trees reference (the
 * allocator state reads, but is wrong): the zone could be reset with
 * referenced data in it. Lowered by a block, or to zero: the allocator
 * then asks the reverse map before the reset and keeps the zone. The
 * repair rebuilds the allocator state from the write pointers and the
 * recount, and makes the unrelated repairs too (a link count), keeping the
 * counters since mkfs; the cleaner then empties the zone and the files read
 * back.
 */
static void test_zone_low(void)
{
	for (int v = 0; v < 4; v++) {
		int k = K_ZLOG + v / 2;
		bool to_zero = v % 2;
		struct smr_cow_gc_stats st0, st1;
		struct smr_fsck_result r;
		uint64_t off, lower;
		uint32_t zno;
		int64_t before, after;
		struct fs f;

		populate_cleanable((enum kind)k);
		off = first_extent_of(ino_f1);
		CU_ASSERT_FATAL(off != 0);
		zno = (uint32_t)(off / RM_ZONE);
		SMR_ASSERT_OK(fs_open(&f, false));
		before = smr_alloc_zone_live(f.cow->alloc, zno);
		CU_ASSERT_FATAL(before > 4096);
		lower = to_zero ? (uint64_t)before : 4096;
		SMR_ASSERT_OK(smr_alloc_free(f.cow->alloc, zno * RM_ZONE, lower));
		/* Counted, then past both recoverable checkpoints: a zone
		 * counted empty would be reset now. */
		for (int i = 0; i < 3; i++)
			SMR_ASSERT_OK(smr_cow_commit_forced(f.cow));
		after = smr_alloc_zone_live(f.cow->alloc, zno);
		CU_ASSERT_EQUAL(after, before - (int64_t)lower);
		CU_ASSERT_EQUAL(smr_dev_zone_cond(f.dev, zno),
				SMR_ZONE_COND_FULL);
		smr_cow_gc_stats(f.cow, &st0);
		fs_close(&f);
		CU_ASSERT_TRUE(f1_intact());
		set_nlink(ino_f2, 7);

		CU_ASSERT_EQUAL(run_fsck(false, false, &r),
				SMR_FSCK_UNCORRECTED);
		CU_ASSERT(r.problems >= 2);
		CU_ASSERT_EQUAL(run_fsck(true, false, &r), SMR_FSCK_FIXED);
		CU_ASSERT(r.fixed >= 2);
		CU_ASSERT_EQUAL(r.remaining, 0);
		CU_ASSERT_EQUAL(run_fsck(false, true, &r), SMR_FSCK_OK);
		CU_ASSERT_EQUAL(r.bad_data_blocks, 0);
		CU_ASSERT_TRUE(f1_intact());
		/* The counters went on from where they were. */
		SMR_ASSERT_OK(fs_open(&f, false));
		smr_cow_gc_stats(f.cow, &st1);
		fs_close(&f);
		CU_ASSERT(st0.user_bytes > 0);
		CU_ASSERT(st1.user_bytes >= st0.user_bytes);
		CU_ASSERT(st1.device_bytes >= st0.device_bytes);
		CU_ASSERT(st1.zones_reset >= st0.zones_reset);
		mounts_clean();
		clean_zone_of(off);
		CU_ASSERT_TRUE(f1_intact());
	}
}

enum rm_damage { RM_STALE, RM_MISSING, RM_OWNER, RM_OVERLAP, RM_BAD, RM_NR };
static const char *const rm_name[RM_NR] = { "stale", "missing", "owner",
					    "overlap", "bad" };

/*
 * Entries changed through the engine's item API: one over data nothing
 * references any more (stale), one taken out (missing: the cleaner could
 * never empty the zone), one naming the wrong file offset, a stale one
 * overlapping a live one, and an item that does not decode. Each is
 * found (4), the map rebuilt (1),
 * the next check clean (0), and the zone then cleanable.
 */
static void test_rmap(void)
{
	for (int v = 0; v < 2 * RM_NR; v++) {
		enum kind k = v < RM_NR ? K_FILE : K_ZLOG;
		enum rm_damage dmg = (enum rm_damage)(v % RM_NR);
		struct smr_fsck_result r;
		uint64_t dead, f1, f2, entries;

		dead = populate_cleanable(k);
		f1 = first_extent_of(ino_f1);
		f2 = first_extent_of(ino_f2);
		CU_ASSERT_FATAL(f1 && f2);
		CU_ASSERT_EQUAL(run_fsck(false, false, &r), SMR_FSCK_OK);
		entries = r.rmap_entries;
		CU_ASSERT(entries >= 2);

		switch (dmg) {
		case RM_STALE:
			rmap_set(dead, 8192, ino_f2, 12288);
			break;
		case RM_MISSING:
			rmap_set(f1, 0, 0, 0);
			break;
		case RM_OWNER:
			/* (f2's extent: its first two blocks; the rest is
			 * its tail block, in the tree.) */
			rmap_set(f2, 8192, ino_f2, 4096);
			break;
		case RM_OVERLAP:
			rmap_set(f1 + 4096, 4096, ino_f2, 0);
			break;
		case RM_BAD:
			rmap_set(dead, RMAP_SET_BAD, 0, 0);
			break;
		default:
			break;
		}
		CU_ASSERT_EQUAL(run_fsck(false, false, &r), SMR_FSCK_UNCORRECTED);
		/* Overlapping also names the wrong owner. */
		CU_ASSERT_EQUAL(r.rmap_problems, dmg == RM_OVERLAP ? 2 : 1);
		CU_ASSERT_EQUAL(r.problems, r.rmap_problems);
		if (r.rmap_problems != (dmg == RM_OVERLAP ? 2u : 1u))
			printf("(%s on %s: %llu problems) ", rm_name[dmg],
			       kind_name[k],
			       (unsigned long long)r.rmap_problems);
		check_repair_clean();
		mounts_clean();
		CU_ASSERT_TRUE(f1_intact());
		clean_zone_of(f1);
	}
}

/* Writes of one block each: an entry each, enough for a reverse map of
 * several leaves. */
#define RM_BLOCKS 1200

static bool big_intact(uint64_t ino)
{
	uint8_t buf[4096];
	bool ok = true;
	struct fs f;

	if (fs_open(&f, true))
		return false;
	for (uint64_t b = 0; ok && b < RM_BLOCKS; b++) {
		ok = smr_ns_read(f.ns, ino, b * 4096, sizeof(buf), buf) ==
		     (ssize_t)sizeof(buf);
		for (size_t i = 0; ok && i < sizeof(buf); i++)
			ok = buf[i] == (uint8_t)(b + i / 512);
	}
	fs_close(&f);
	return ok;
}

/* The root of the reverse map, as it is on a small filesystem: one leaf.
 * Open falls back to the previous checkpoint, or takes the newest anyway
 * when that one shares the root (reads through it fail); either way the
 * repair salvages the tree (empty) and then rebuilds the map. */
static void test_rmap_root(void)
{
	for (int k = 0; k < 2; k++) {
		uint64_t root;
		struct fs f;

		populate_cleanable((enum kind)k);
		SMR_ASSERT_OK(fs_open(&f, false));
		CU_ASSERT_EQUAL(f.cow->trees[SMR_TREE_RMAP].level, 0);
		root = f.cow->trees[SMR_TREE_RMAP].addr;
		fs_close(&f);
		CU_ASSERT_FATAL(root != 0);
		flip(root + 200);

		check_repair_clean();
		mounts_clean();
		clean_zone_of(first_extent_of(ino_f1));
	}
}

/* A file "big" of RM_BLOCKS blocks written each pair the wrong way round,
 * so that no two blocks' reverse-map entries join: an entry each, a
 * reverse map of several leaves. Committed; returns its inode. */
static uint64_t write_big(struct fs *f)
{
	uint64_t ino = mkfile(f->ns, ROOT, "big", 0);
	uint8_t buf[4096];

	CU_ASSERT_FATAL(ino != 0);
	for (uint64_t j = 0; j < RM_BLOCKS; j++) {
		uint64_t b = j ^ 1;

		for (size_t i = 0; i < sizeof(buf); i++)
			buf[i] = (uint8_t)(b + i / 512);
		CU_ASSERT_EQUAL(smr_ns_write(f->ns, &cr, ino, b * 4096, buf,
					     sizeof(buf)),
				(ssize_t)sizeof(buf));
	}
	SMR_ASSERT_OK(smr_ns_sync(f->ns));
	pthread_rwlock_rdlock(&f->cow->lock);
	CU_ASSERT_FATAL(f->cow->trees[SMR_TREE_RMAP].level >= 1);
	pthread_rwlock_unlock(&f->cow->lock);
	return ino;
}

/* The addresses of the reverse map's leaves, at most @max, into @leaves. */
static size_t rmap_leaves(struct fs *f, uint64_t *leaves, size_t max)
{
	uint8_t *nb = smr_cow_buf_alloc(f->cow->ns);
	uint64_t *addrs = NULL;
	size_t n = 0, got = 0;

	CU_ASSERT_FATAL(nb != NULL);
	pthread_rwlock_rdlock(&f->cow->lock);
	SMR_ASSERT_OK(smr_bt_node_addrs_locked(f->cow, &addrs, &n));
	for (size_t i = 0; i < n && got < max; i++) {
		const struct smr_blk_hdr *h = (const void *)nb;

		SMR_ASSERT_OK(f->cow->sops->read(f->cow, addrs[i], nb,
						 f->cow->ns));
		if (le64toh(h->owner) == SMR_TREE_RMAP &&
		    le16toh(h->level) == 0)
			leaves[got++] = addrs[i];
	}
	pthread_rwlock_unlock(&f->cow->lock);
	smr_cow_buf_free(nb);
	free(addrs);
	return got;
}

/* A damaged leaf of a reverse map of several leaves: the tree is salvaged
 * without it, and the map then rebuilt from the extent items. */
static void test_rmap_node(void)
{
	for (int k = 0; k < 2; k++) {
		uint64_t leaf = 0, ino, data;
		struct fs f;

		populate((enum kind)k, 0);
		SMR_ASSERT_OK(fs_open(&f, true));
		ino = write_big(&f);
		data = first_extent(f.cow, ino);
		CU_ASSERT_FATAL(rmap_leaves(&f, &leaf, 1) == 1);
		fs_close(&f);
		flip(leaf + 5000);

		check_repair_clean();
		mounts_clean();
		CU_ASSERT_TRUE(big_intact(ino));
		clean_zone_of(data);
		CU_ASSERT_TRUE(big_intact(ino));
	}
}

/*
 * Data in flight at the newest checkpoint (written with its reverse-map
 * entry, referenced by nothing yet) and every leaf of the reverse map
 * damaged. An open drops such data's entries (cow.c, cow_trim_released)
 * and so reads through a damaged leaf: the mount refuses, and the repair,
 * which opens the filesystem to salvage the tree, could not either
 * ("cannot open the filesystem to salvage its trees"). It must open past
 * them, salvage, and rebuild the map from the extent items.
 */
static void test_rmap_in_flight(void)
{
	for (int k = 0; k < 2; k++) {
		uint64_t leaves[64], ino, len = 64 * SMR_KIB;
		struct smr_data_extent ext[8];
		struct smr_key owner;
		size_t nleaves;
		uint8_t *buf;
		struct fs f;

		populate((enum kind)k, 0);
		SMR_ASSERT_OK(fs_open(&f, true));
		ino = write_big(&f);
		owner = (struct smr_key){ .objid = ino,
					  .type = SMR_NS_T_EXTENT,
					  .offset = RM_BLOCKS * 4096 };
		buf = smr_cow_buf_alloc(len);
		CU_ASSERT_FATAL(buf != NULL);
		memset(buf, 0x3c, len);
		CU_ASSERT_FATAL(smr_cow_data_write_owned(f.cow, SMR_DATA_HOT, 0,
							 &owner, buf, len, ext,
							 8, NULL) >= 1);
		smr_cow_buf_free(buf);
		SMR_ASSERT_OK(smr_cow_commit_forced(f.cow));
		nleaves = rmap_leaves(&f, leaves, SMR_ARRAY_SIZE(leaves));
		CU_ASSERT_FATAL(nleaves >= 2);
		/* The power goes before anything references the data. */
		smr_ns_close(f.ns);
		smr_cow_close_discard(f.cow);
		SMR_ASSERT_OK(smr_dev_close(f.dev));
		for (size_t i = 0; i < nleaves; i++)
			flip(leaves[i] + 5000);

		CU_ASSERT_NOT_EQUAL(fs_open(&f, true), 0);
		check_repair_clean();
		mounts_clean();
		CU_ASSERT_TRUE(big_intact(ino));
	}
}

/* Copy the image (a file, or a zoned loop directory's zone files). */
static void copy_image(const char *from, const char *to)
{
	char cmd[9000];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s' && cp -a '%s' '%s'", to, from,
		 to);
	CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
}

/* A power cut at every write of a repair: afterwards the filesystem is
 * either as before the repair (4) or repaired (0), and a repair then
 * finishes the job. */
static void test_powercut(void)
{
	for (int k = 0; k < 4; k++) {
		char orig[4200], work[4096];
		int before = 0, after = 0;
		bool tear = k >= 2;
		bool cut = true;

		populate((enum kind)(k % 2), 30);
		set_nlink(ino_f1, 7);
		add_entry(ROOT, "ghost", 9999, 1000);
		rmap_set(first_extent_of(ino_f2), 0, 0, 0);
		snprintf(orig, sizeof(orig), "%s.orig", path);
		copy_image(path, orig);
		memcpy(work, path, sizeof(work));
		for (uint64_t n = 0; cut && n < 500; n++) {
			/* The cut write lost, or torn after its first block. */
			struct smr_fault_rule rule = {
				.what = tear ? SMR_FAULT_TEAR_WRITE :
					       SMR_FAULT_DROP_WRITES,
				.after = n, .tear_bytes = 4096,
			};
			struct smr_fsck_opts o = {
				.device = work, .repair = true,
			};
			struct smr_fsck_result r;
			struct smr_dev *lower, *dev;
			struct smr_fault *fault;
			int st;

			copy_image(orig, work);
			SMR_ASSERT_OK(smr_dev_open(work, NULL, &lower));
			SMR_ASSERT_OK(smr_fault_open(lower, &fault, &dev));
			SMR_ASSERT_OK(smr_fault_arm(fault, &rule));
			o.dev = dev;
			smr_fsck_run(&o, &r);
			cut = smr_fault_is_cut(fault);
			smr_dev_close(dev);
			smr_dev_close(lower);
			smr_fault_free(fault);

			st = run_fsck(false, false, &r);
			CU_ASSERT(st == SMR_FSCK_UNCORRECTED || st == SMR_FSCK_OK);
			before += st == SMR_FSCK_UNCORRECTED;
			after += st == SMR_FSCK_OK;
			if (st != SMR_FSCK_UNCORRECTED && st != SMR_FSCK_OK)
				fprintf(stderr, "cut after %llu writes: %d\n",
					(unsigned long long)n, st);
			st = run_fsck(true, false, &r);
			CU_ASSERT(st == SMR_FSCK_FIXED || st == SMR_FSCK_OK);
			CU_ASSERT_EQUAL(run_fsck(false, false, &r), SMR_FSCK_OK);
			if (!cut)
				CU_ASSERT(n > 1);
		}
		CU_ASSERT(!cut);
		/* Cuts before the repair's commit and after it. */
		CU_ASSERT(before > 0);
		CU_ASSERT(after > 0);
		printf("(%s%s: %d cuts before the repair was durable, %d after) ",
		       kind_name[k % 2], tear ? " torn" : "", before, after);
	}
}

/* ------------------------------------------------------------------------
 * Cancelling
 * ------------------------------------------------------------------------ */

struct cancel_at {
	unsigned int phase;     /* cancel at this phase... */
	uint64_t done;          /* ... once this many are done */
	volatile sig_atomic_t flag;
};

static void cancel_progress(void *arg, unsigned int phase, const char *name,
			    uint64_t done, uint64_t total)
{
	struct cancel_at *c = arg;

	(void)name;
	(void)total;
	if (phase == c->phase && done >= c->done)
		c->flag = 1;
}

/* A checksum of the image file. */
static uint64_t image_hash(void)
{
	size_t len = 64 * SMR_MIB;
	char *buf = malloc(len);
	uint64_t h = 0;
	int fd = open(path, O_RDONLY);

	CU_ASSERT_FATAL(buf != NULL && fd >= 0);
	CU_ASSERT_EQUAL(pread(fd, buf, len, 0), (ssize_t)len);
	h = smr_hash64(buf, len, 0);
	close(fd);
	free(buf);
	return h;
}

/*
 * Cancelled in the middle of the walk (a check), before the repairs and
 * just before the repair's commit: status 32, and the image is byte for
 * byte what it was; a run afterwards repairs as if nothing happened.
 */
static void test_cancel(void)
{
	static const struct { unsigned int phase; uint64_t done; } at[] = {
		{ 4, 20 }, { 5, 0 }, { 5, 1 }, { 5, 2 },
	};

	populate(K_FILE, 60);
	set_nlink(ino_f2, 9);
	for (size_t i = 0; i < SMR_ARRAY_SIZE(at); i++) {
		struct cancel_at c = { at[i].phase, at[i].done, 0 };
		struct smr_fsck_opts o = {
			.device = path, .repair = true,
			.progress = cancel_progress, .progress_arg = &c,
			.cancel = &c.flag,
		};
		struct smr_fsck_result r;
		uint64_t h = image_hash();

		CU_ASSERT_EQUAL(smr_fsck_run(&o, &r), SMR_FSCK_CANCELED);
		CU_ASSERT_EQUAL(r.fixed, 0);
		CU_ASSERT_EQUAL(image_hash(), h);
		/* A check still finds the problem. */
		CU_ASSERT_EQUAL(run_fsck(false, false, &r),
				SMR_FSCK_UNCORRECTED);
	}
	check_repair_clean();
	mounts_clean();
}

/* ------------------------------------------------------------------------
 * Messages
 * ------------------------------------------------------------------------ */

static char logged[16384];

static void log_capture(enum smr_log_level level, const char *msg)
{
	size_t n = strlen(logged);

	if (level <= SMR_LOG_WARN)
		snprintf(logged + n, sizeof(logged) - n, "%s\n", msg);
}

/*
 * Every problem line says what becomes of it: an extent past its file's
 * size is not repaired (and says so), a link count is reported once, by
 * fsck's own walk, with what it would do.
 */
static void test_messages(void)
{
	struct smr_fsck_result r;

	populate(K_FILE, 0);
	set_inode(ino_f2, F_SIZE, 100);
	set_nlink(ino_empty, 5);
	logged[0] = 0;
	smr_log_set_sink(log_capture);
	CU_ASSERT_EQUAL(run_fsck(false, false, &r), SMR_FSCK_UNCORRECTED);
	smr_log_set_sink(NULL);
	CU_ASSERT_EQUAL(r.remaining, r.problems);
	CU_ASSERT_PTR_NOT_NULL(strstr(logged, "extent past the size 100 (not repaired)"));
	CU_ASSERT_PTR_NOT_NULL(strstr(logged, "link count 5, 1 counted (would set it)"));
	CU_ASSERT_PTR_NOT_NULL(strstr(logged, "nlink 5 but 1 names (fsck.smrfs -y repairs it)"));
	CU_ASSERT_EQUAL(run_fsck(true, false, &r), SMR_FSCK_UNCORRECTED);
	CU_ASSERT(r.fixed >= 1);
	CU_ASSERT(r.remaining >= 1);
}

static const struct smr_test fsck_tests[] = {
	{ "clean", test_clean },
	{ "operational", test_operational },
	{ "sb_copy", test_sb_copy },
	{ "sb_both", test_sb_both },
	{ "ckpt", test_ckpt },
	{ "ckpt_newest", test_ckpt_newest },
	{ "ckpt_zeroed", test_ckpt_zeroed },
	{ "ckpt_all_lost", test_ckpt_all_lost },
	{ "ckpt_all_lost_cut", test_ckpt_all_lost_cut },
	{ "sb_ckpt_all_lost", test_sb_ckpt_all_lost },
	{ "sb_ckpt_all_lost_zoned_old", test_sb_ckpt_all_lost_zoned_old },
	{ "scan_progress_cancel", test_scan_progress_cancel },
	{ "ckpt_all_lost_node", test_ckpt_all_lost_node },
	{ "ckpt_bit", test_ckpt_bit },
	{ "root_newest", test_root_newest },
	{ "alloc_state", test_alloc_state },
	{ "alloc_state_bit", test_alloc_state_bit },
	{ "node", test_node },
	{ "node_bit", test_node_bit },
	{ "alloc_state_node", test_alloc_state_node },
	{ "node_root", test_node_root },
	{ "fill", test_fill },
	{ "nlink", test_nlink },
	{ "acl", test_acl },
	{ "dirsize", test_dirsize },
	{ "missing_inode", test_missing_inode },
	{ "dangling", test_dangling },
	{ "nameless", test_nameless },
	{ "halves", test_halves },
	{ "orphan", test_orphan },
	{ "scrub", test_scrub },
	{ "leak", test_leak },
	{ "wp", test_wp },
	{ "wp_meta", test_wp_meta },
	{ "wp_node", test_wp_node },
	{ "zone_low", test_zone_low },
	{ "rmap", test_rmap },
	{ "rmap_root", test_rmap_root },
	{ "rmap_node", test_rmap_node },
	{ "rmap_in_flight", test_rmap_in_flight },
	{ "powercut", test_powercut },
	{ "cancel", test_cancel },
	{ "messages", test_messages },
	{ NULL, NULL },
};

static const struct smr_suite suites[] = {
	{ "fsck", fsck_tests },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return smr_test_main(argc, argv, suites);
}
