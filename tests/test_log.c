/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_log.c - the fsync log of the COW engine: records written by
 * smr_cow_fsync instead of commits, cut off by a power cut (the fault
 * device drops every later write) and replayed at the next open, on every
 * allocator and checkpoint placement; a record whose data or piece is
 * damaged stops the replay there; a read-only open leaves the records for
 * the next read-write one (replaying them in memory if asked); a full ring
 * falls back to commits.
 */
#include "testutil.h"

#include <endian.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cow/cow_priv.h"
#include "cowtest.h"
#include "dev/fault.h"

#define ZONE (1 * SMR_MIB)
#define NR_ZONES 96
#define FILE_SIZE (96 * SMR_MIB)
#define BS 4096
#define NF 3         /* files */
#define NB 24        /* blocks a file may hold */
#define INO0 256
#define T_INODE 1
#define T_EXTENT 5

enum kind { K_FILE, K_ZLOOP_CNV, K_ZLOOP_SEQ, K_ZLOOP_CAP };

static const char *make_dev(enum kind k, const char *tag)
{
	static char path[512];
	const char *dir = smr_test_tmpdir(tag);

	if (k == K_FILE) {
		int fd;

		snprintf(path, sizeof(path), "%s/img", dir);
		fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
		CU_ASSERT_FATAL(fd >= 0);
		CU_ASSERT_FATAL(ftruncate(fd, (off_t)FILE_SIZE) == 0);
		close(fd);
	} else {
		struct smr_zloop_params p = {
			.capacity = NR_ZONES * ZONE, .zone_size = ZONE,
			.nr_cnv = k == K_ZLOOP_CNV ? 4 : 0,
			.zone_cap = k == K_ZLOOP_CAP ? 768 * SMR_KIB : 0,
			.max_active = k == K_ZLOOP_CAP ? 5 : 0,
			.max_open = k == K_ZLOOP_CAP ? 5 : 0,
		};

		snprintf(path, sizeof(path), "%s/zl", dir);
		SMR_ASSERT_OK(smr_zloop_create(path, &p));
	}
	return path;
}

/* What the tree holds: per file and block, the device offset of its data
 * and the checksum of that data (0 = no block); and the inode's round. */
struct model {
	uint64_t off[NF][NB];
	uint64_t csum[NF][NB];
	uint64_t round[NF];
};

struct ext_val {
	uint64_t off, csum;
};

static void fill(uint8_t *buf, uint64_t seed)
{
	for (size_t i = 0; i < BS; i += 8) {
		uint64_t x = seed * 0x9e3779b97f4a7c15ULL + i;

		memcpy(buf + i, &x, 8);
	}
}

/* One file operation of round @r: overwrite block @b of file @f, or drop
 * it (a punched hole), in a transaction of its own. */
static void op(struct smr_cow *c, struct model *m, uint8_t *buf, int f,
	       int b, uint64_t seed, bool drop)
{
	struct smr_key k = { INO0 + (uint64_t)f, T_EXTENT, (uint64_t)b * BS };
	struct smr_key ik = { INO0 + (uint64_t)f, T_INODE, 0 };
	struct smr_data_extent e;
	struct ext_val v;
	struct smr_txn *t;

	if (!drop) {
		fill(buf, seed);
		CU_ASSERT_FATAL(smr_cow_data_write_owned(c, SMR_DATA_HOT, 0,
							 &k, buf, BS, &e, 1,
							 NULL) == 1);
	}
	SMR_ASSERT_OK(smr_txn_begin(c, &t));
	if (m->off[f][b])
		SMR_ASSERT_OK(smr_cow_data_free(t, m->off[f][b], BS));
	if (drop) {
		if (m->off[f][b])
			SMR_ASSERT_OK(smr_bt_delete(t, SMR_TREE_FS, &k));
		m->off[f][b] = m->csum[f][b] = 0;
	} else {
		v.off = e.off;
		v.csum = smr_hash64(buf, BS, 0);
		SMR_ASSERT_OK(smr_bt_put(t, SMR_TREE_FS, &k, &v, sizeof(v)));
		SMR_ASSERT_OK(smr_cow_data_settle(t, e.off, BS));
		m->off[f][b] = v.off;
		m->csum[f][b] = v.csum;
	}
	m->round[f]++;
	SMR_ASSERT_OK(smr_bt_put(t, SMR_TREE_FS, &ik, &m->round[f],
				 sizeof(m->round[f])));
	smr_txn_end(t);
}

/* A round: a few writes and holes over the files, then fsync. */
static void round_run(struct smr_cow *c, struct model *m, uint8_t *buf,
		      unsigned int r)
{
	for (unsigned int i = 0; i < 6; i++) {
		int f = (int)((r * 7 + i) % NF);
		int b = (int)((r * 13 + i * 5) % NB);

		op(c, m, buf, f, b, (uint64_t)r * 100 + i + 1, i == 5 && r % 2);
	}
	SMR_ASSERT_OK(smr_cow_fsync(c));
}

/* The engine holds exactly @m: every item, every block's data, the space
 * audit (allocator counters against what is referenced) and the tree
 * check. */
static void expect(struct smr_cow *c, const struct model *m)
{
	struct smr_data_extent refs[NF * NB];
	struct smr_cow_space_check sc;
	uint8_t *buf = smr_cow_buf_alloc(BS);
	size_t nr = 0;

	for (int f = 0; f < NF; f++) {
		struct smr_key ik = { INO0 + (uint64_t)f, T_INODE, 0 };
		uint64_t round = 0;
		size_t len = sizeof(round);
		int rc = smr_bt_lookup(c, SMR_TREE_FS, &ik, &round, &len);

		CU_ASSERT_EQUAL(rc, m->round[f] ? 0 : -ENOENT);
		CU_ASSERT_EQUAL(round, m->round[f]);
		for (int b = 0; b < NB; b++) {
			struct smr_key k = { INO0 + (uint64_t)f, T_EXTENT,
					     (uint64_t)b * BS };
			struct ext_val v = { 0 };

			len = sizeof(v);
			rc = smr_bt_lookup(c, SMR_TREE_FS, &k, &v, &len);
			CU_ASSERT_EQUAL(rc, m->off[f][b] ? 0 : -ENOENT);
			if (rc)
				continue;
			CU_ASSERT_EQUAL(v.off, m->off[f][b]);
			CU_ASSERT_EQUAL(v.csum, m->csum[f][b]);
			SMR_ASSERT_OK(smr_cow_data_read(c, v.off, buf, BS));
			CU_ASSERT_EQUAL(smr_hash64(buf, BS, 0), v.csum);
			refs[nr].off = v.off;
			refs[nr++].len = BS;
		}
	}
	SMR_ASSERT_OK(smr_cow_check(c));
	SMR_ASSERT_OK(smr_cow_check_space(c, refs, nr, false, &sc));
	CU_ASSERT_EQUAL(sc.problems, 0);
	CU_ASSERT_EQUAL(sc.leaked, 0);
	smr_cow_buf_free(buf);
}

static const struct smr_cow_opts log_opts = {
	.commit_secs = 3600, .gc_off = true, .fsync_log = true,
};

/* Format without LOG_FREES, as builds before it did: every record then
 * carries every free since the checkpoint (regular files only). */
static bool old_frees;

static void clear_log_frees(struct smr_sb *sb)
{
	sb->features_incompat &= ~SMR_FEAT_INCOMPAT_LOG_FREES;
}

/* Format with the ring of 16 slots that builds before the 4 MiB ring made
 * on regular files (0: the ring as made now). */
static uint32_t old_slots;

static void set_old_slots(struct smr_sb *sb)
{
	sb->ckpt_nr_slots = old_slots;
	sb->features_incompat &= ~SMR_FEAT_INCOMPAT_BIG_RING;
}

/* A device in a state after @rounds fsync'd rounds and a power cut;
 * models[r] is the state after round r (0: the commit before). */
static const char *run_and_cut(enum kind k, const char *alloc,
			       const char *tag, unsigned int rounds,
			       struct model *models, unsigned int commit_at)
{
	static const uint8_t uuid[16] = { 0x10, 0x9, 1, 2, 3 };
	struct smr_format_opts fo = { .uuid = uuid, .alloc = alloc };
	struct smr_fault_rule cut = { .what = SMR_FAULT_DROP_WRITES };
	const char *path = make_dev(k, tag);
	uint8_t *buf = smr_cow_buf_alloc(BS);
	struct smr_dev *lower, *dev;
	struct smr_cow_stats st;
	struct smr_fault *f;
	struct smr_cow *c;

	SMR_ASSERT_OK(smr_dev_open(path, NULL, &lower));
	SMR_ASSERT_OK(smr_cow_format(lower, &fo, NULL));
	if (old_frees || old_slots) {
		smr_dev_close(lower);
		if (old_frees)
			smr_test_rewrite_sb(path, clear_log_frees);
		if (old_slots)
			smr_test_rewrite_sb(path, set_old_slots);
		SMR_ASSERT_OK(smr_dev_open(path, NULL, &lower));
	}
	SMR_ASSERT_OK(smr_fault_open(lower, &f, &dev));
	SMR_ASSERT_OK(smr_test_cow_open(dev, &log_opts, &c));
	CU_ASSERT_FATAL(c != NULL);
	CU_ASSERT_EQUAL(c->log_frees_delta, !old_frees);
	memset(&models[0], 0, sizeof(models[0]));
	/* The first fsync after open commits: the log follows only a
	 * checkpoint this engine wrote. */
	op(c, &models[0], buf, 0, 0, 999, false);
	SMR_ASSERT_OK(smr_cow_fsync(c));
	for (unsigned int r = 1; r <= rounds; r++) {
		models[r] = models[r - 1];
		round_run(c, &models[r], buf, r);
		if (r == commit_at)
			SMR_ASSERT_OK(smr_cow_commit(c));
	}
	smr_cow_get_stats(c, &st);
	CU_ASSERT(st.log_records >= 1);
	SMR_ASSERT_OK(smr_fault_arm(f, &cut));
	smr_cow_close(c);
	smr_dev_close(dev);
	smr_dev_close(lower);
	smr_fault_free(f);
	smr_cow_buf_free(buf);
	return path;
}

static struct smr_cow *reopen(const char *path, const struct smr_cow_opts *o,
			      struct smr_dev **devp, struct smr_cow_info *info)
{
	struct smr_cow *c = NULL;

	SMR_ASSERT_OK(smr_dev_open(path, NULL, devp));
	SMR_ASSERT_OK(smr_test_cow_open(*devp, o, &c));
	if (c && info)
		smr_cow_info(c, info);
	return c;
}

static void replay(enum kind k, const char *alloc)
{
	struct model *m = calloc(9, sizeof(*m));
	struct smr_cow_info info;
	struct smr_dev *dev;
	struct smr_cow *c;
	const char *path = run_and_cut(k, alloc, "log-replay", 8, m, 0);

	c = reopen(path, &log_opts, &dev, &info);
	CU_ASSERT_FATAL(c != NULL);
	CU_ASSERT_EQUAL(info.log_replayed, 8);
	expect(c, &m[8]);
	/* Replayed and committed: the state survives more commits and a
	 * reopen, with its space accounted for. */
	SMR_ASSERT_OK(smr_cow_commit_forced(c));
	SMR_ASSERT_OK(smr_cow_commit_forced(c));
	SMR_ASSERT_OK(smr_cow_close(c));
	smr_dev_close(dev);
	c = reopen(path, &log_opts, &dev, &info);
	CU_ASSERT_EQUAL(info.log_replayed, 0);
	expect(c, &m[8]);
	SMR_ASSERT_OK(smr_cow_close(c));
	smr_dev_close(dev);
	free(m);
}

static void test_replay_file_rot(void) { replay(K_FILE, "rotational"); }
static void test_replay_file_flash(void) { replay(K_FILE, "flash"); }
static void test_replay_zloop_cnv(void) { replay(K_ZLOOP_CNV, NULL); }
static void test_replay_zloop(void) { replay(K_ZLOOP_SEQ, NULL); }
static void test_replay_zloop_cap(void) { replay(K_ZLOOP_CAP, NULL); }

/* A filesystem made before LOG_FREES: the last record's frees are all. */
static void test_replay_old_frees(void)
{
	old_frees = true;
	replay(K_FILE, "flash");
	old_frees = false;
}

/* Records after a commit in the middle: only those after it replay. */
static void test_commit_between(void)
{
	struct model *m = calloc(7, sizeof(*m));
	struct smr_cow_info info;
	struct smr_dev *dev;
	struct smr_cow *c;
	const char *path = run_and_cut(K_FILE, NULL, "log-between", 6, m, 3);

	c = reopen(path, &log_opts, &dev, &info);
	CU_ASSERT_FATAL(c != NULL);
	CU_ASSERT_EQUAL(info.log_replayed, 3);
	expect(c, &m[6]);
	SMR_ASSERT_OK(smr_cow_close(c));
	smr_dev_close(dev);
	free(m);
}

/* @rounds fsyncs, cut: how many records the reopen replayed, with the
 * state of the last round checked. */
static unsigned int ring_run(const char *tag, unsigned int rounds)
{
	struct model *m = calloc(rounds + 1, sizeof(*m));
	struct smr_cow_info info;
	struct smr_dev *dev;
	struct smr_cow *c;
	const char *path;

	CU_ASSERT_FATAL(m != NULL);
	path = run_and_cut(K_FILE, NULL, tag, rounds, m, 0);
	c = reopen(path, &log_opts, &dev, &info);
	CU_ASSERT_FATAL(c != NULL);
	expect(c, &m[rounds]);
	SMR_ASSERT_OK(smr_cow_close(c));
	smr_dev_close(dev);
	free(m);
	return (unsigned int)info.log_replayed;
}

/* A regular file's ring holds 252 slots: 100 fsyncs are 100 records, no
 * commit. More fsyncs than it has slots: some commit, nothing is lost. */
static void test_ring_full(void)
{
	unsigned int n;

	CU_ASSERT_EQUAL(ring_run("log-ring", 100), 100);
	n = ring_run("log-full", 300);
	CU_ASSERT(n >= 1 && n < 250);
}

/* A filesystem made with the old ring of 16 slots keeps it. */
static void test_ring_old(void)
{
	unsigned int n;

	old_slots = 16;
	n = ring_run("log-old-ring", 27);
	old_slots = 0;
	CU_ASSERT(n >= 1 && n < 14);
}

/*
 * Many changes of the same keys between two records: only the last of
 * each may count at replay, whatever came before it (a shorter or longer
 * value, a delete, a put after a delete), also with more keys than the
 * log's table of recent keys has slots.
 */
#define RK_KEYS 40

static void rk_val(uint8_t *v, size_t len, uint64_t seed)
{
	for (size_t i = 0; i < len; i++)
		v[i] = (uint8_t)(seed * 31 + i);
}

static void test_repeat_keys(void)
{
	static const uint8_t uuid[16] = { 0x10, 0x9, 1, 2, 3, 4 };
	struct smr_format_opts fo = { .uuid = uuid };
	struct smr_fault_rule cut = { .what = SMR_FAULT_DROP_WRITES };
	const char *path = make_dev(K_ZLOOP_SEQ, "log-repeat");
	size_t want_len[RK_KEYS] = { 0 };
	uint64_t want_seed[RK_KEYS] = { 0 };
	uint8_t v[64], got[64];
	struct smr_dev *lower, *dev;
	struct smr_cow_info info;
	struct smr_fault *f;
	struct smr_cow *c;
	struct smr_txn *t;
	uint64_t seed = 1;

	SMR_ASSERT_OK(smr_dev_open(path, NULL, &lower));
	SMR_ASSERT_OK(smr_cow_format(lower, &fo, NULL));
	SMR_ASSERT_OK(smr_fault_open(lower, &f, &dev));
	SMR_ASSERT_OK(smr_test_cow_open(dev, &log_opts, &c));
	CU_ASSERT_FATAL(c != NULL);
	/* The first fsync (of a change) commits; the second writes a
	 * record. */
	SMR_ASSERT_OK(smr_txn_begin(c, &t));
	rk_val(v, 8, 0);
	SMR_ASSERT_OK(smr_bt_put(t, SMR_TREE_FS,
				 &(struct smr_key){ 999, T_INODE, 0 }, v, 8));
	smr_txn_end(t);
	SMR_ASSERT_OK(smr_cow_fsync(c));
	for (int round = 0; round < 6; round++) {
		SMR_ASSERT_OK(smr_txn_begin(c, &t));
		for (int i = 0; i < RK_KEYS; i++) {
			struct smr_key k = { 1000 + (uint64_t)i, T_INODE, 0 };
			/* The first four keys change six times a round,
			 * as a file's inode does with every write. */
			int reps = i < 4 ? 6 : 1;

			for (int rep = 0; rep < reps; rep++) {
				/* Lengths go up and down, the last of a
				 * round no longer than the one before; some
				 * changes are deletes, put again later. */
				size_t len = rep == 5 ? 8 :
					     8 + (size_t)((i + round + rep * 3) %
							  7) * 8;

				if ((i + round + rep) % 3 == 0 &&
				    (round + rep) % 2) {
					if (want_len[i])
						SMR_ASSERT_OK(smr_bt_delete(t,
							SMR_TREE_FS, &k));
					want_len[i] = 0;
					continue;
				}
				rk_val(v, len, ++seed);
				SMR_ASSERT_OK(smr_bt_put(t, SMR_TREE_FS, &k, v,
							 len));
				want_len[i] = len;
				want_seed[i] = seed;
			}
		}
		smr_txn_end(t);
	}
	SMR_ASSERT_OK(smr_cow_fsync(c));
	SMR_ASSERT_OK(smr_fault_arm(f, &cut));
	smr_cow_close(c);
	smr_dev_close(dev);
	smr_dev_close(lower);
	smr_fault_free(f);

	c = reopen(path, &log_opts, &dev, &info);
	CU_ASSERT_FATAL(c != NULL);
	CU_ASSERT_EQUAL(info.log_replayed, 1);
	for (int i = 0; i < RK_KEYS; i++) {
		struct smr_key k = { 1000 + (uint64_t)i, T_INODE, 0 };
		size_t len = sizeof(got);
		int rc = smr_bt_lookup(c, SMR_TREE_FS, &k, got, &len);

		CU_ASSERT_EQUAL(rc, want_len[i] ? 0 : -ENOENT);
		if (rc)
			continue;
		CU_ASSERT_EQUAL(len, want_len[i]);
		rk_val(v, want_len[i], want_seed[i]);
		CU_ASSERT(!memcmp(got, v, want_len[i]));
	}
	SMR_ASSERT_OK(smr_cow_check(c));
	SMR_ASSERT_OK(smr_cow_close(c));
	smr_dev_close(dev);
}

/* Open @dev with @o and expect @pending records left, @replayed replayed,
 * and the state of @m. */
static void ro_open_expect(struct smr_dev *dev, const struct smr_cow_opts *o,
			   uint32_t pending, uint32_t replayed,
			   const struct model *m)
{
	struct smr_cow_info info;
	struct smr_cow *c;

	SMR_ASSERT_OK(smr_test_cow_open(dev, o, &c));
	CU_ASSERT_FATAL(c != NULL);
	smr_cow_info(c, &info);
	CU_ASSERT_EQUAL(info.log_pending, pending);
	CU_ASSERT_EQUAL(info.log_replayed, replayed);
	expect(c, m);
	SMR_ASSERT_OK(smr_cow_close(c));
}

/* Read-only: the records stay; the state is the checkpoint's, or with
 * replay_ro the replayed one, in memory only. */
static void test_read_only(void)
{
	static const struct smr_cow_opts ro = { .read_only = true };
	static const struct smr_cow_opts ro_replay = { .read_only = true,
						       .replay_ro = true };
	struct model *m = calloc(5, sizeof(*m));
	struct smr_cow_info info;
	struct smr_dev *dev;
	struct smr_cow *c;
	const char *path = run_and_cut(K_ZLOOP_SEQ, NULL, "log-ro", 4, m, 0);

	SMR_ASSERT_OK(smr_dev_open(path, &(struct smr_dev_opts){ .read_only = true },
				   &dev));
	ro_open_expect(dev, &ro, 4, 0, &m[0]);
	ro_open_expect(dev, &ro_replay, 0, 4, &m[4]);
	smr_dev_close(dev);
	c = reopen(path, &log_opts, &dev, &info);
	CU_ASSERT_EQUAL(info.log_replayed, 4);
	expect(c, &m[4]);
	SMR_ASSERT_OK(smr_cow_close(c));
	smr_dev_close(dev);
	free(m);
}

/* The file and offset holding device byte @off. */
static void backing(enum kind k, const char *path, uint64_t off, char *file,
		    size_t len, uint64_t *foff)
{
	if (k == K_FILE) {
		snprintf(file, len, "%s", path);
		*foff = off;
		return;
	}
	snprintf(file, len, "%s/seq-%06u", path, (uint32_t)(off / ZONE));
	*foff = off % ZONE;
}

static void flip(enum kind k, const char *path, uint64_t off)
{
	char file[600];
	uint64_t foff;
	uint8_t b;
	int fd;

	backing(k, path, off, file, sizeof(file), &foff);
	fd = open(file, O_RDWR);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_FATAL(pread(fd, &b, 1, (off_t)foff) == 1);
	b ^= 0x41;
	CU_ASSERT_FATAL(pwrite(fd, &b, 1, (off_t)foff) == 1);
	close(fd);
}

/* Where the piece of the record with the highest sequence number is. */
static uint64_t last_piece(enum kind k, const char *path)
{
	uint8_t buf[128];
	uint64_t best = 0, best_seq = 0;

	for (uint64_t a = k == K_FILE ? 65536 : 4096;
	     a < (k == K_FILE ? 4 * SMR_MIB : 2 * ZONE);
	     a += SMR_CKPT_SIZE) {
		const struct smr_dlog *d = (const void *)buf;
		char file[600];
		uint64_t foff;
		int fd;

		if (k != K_FILE && a % ZONE == 0)
			a += 4096;
		backing(k, path, a, file, sizeof(file), &foff);
		fd = open(file, O_RDONLY);
		CU_ASSERT_FATAL(fd >= 0);
		if (pread(fd, buf, sizeof(buf), (off_t)foff) == (ssize_t)sizeof(buf) &&
		    le32toh(d->hdr.magic) == SMR_MAGIC_LOG &&
		    le64toh(d->seq) > best_seq) {
			best_seq = le64toh(d->seq);
			best = a;
		}
		close(fd);
	}
	CU_ASSERT(best != 0);
	return best;
}

/*
 * Damage in the last record (its piece, or the data it claims: a write
 * that did not reach the disk) stops the replay before it: the state is
 * that of the fsync before, which returned.
 */
static void damaged(enum kind k, bool data)
{
	struct model *m = calloc(6, sizeof(*m));
	struct smr_cow_info info;
	struct smr_dev *dev;
	struct smr_cow *c;
	const char *path = run_and_cut(k, NULL, "log-damaged", 5, m, 0);

	if (data) {
		uint64_t off = 0;

		/* A block the last round wrote. */
		for (int f = 0; f < NF && !off; f++)
			for (int b = 0; b < NB && !off; b++)
				if (m[5].off[f][b] &&
				    m[5].off[f][b] != m[4].off[f][b])
					off = m[5].off[f][b];
		CU_ASSERT_FATAL(off != 0);
		flip(k, path, off + 100);
	} else {
		flip(k, path, last_piece(k, path) + 200);
	}
	c = reopen(path, &log_opts, &dev, &info);
	CU_ASSERT_FATAL(c != NULL);
	CU_ASSERT_EQUAL(info.log_replayed, 4);
	expect(c, &m[4]);
	SMR_ASSERT_OK(smr_cow_close(c));
	smr_dev_close(dev);
	free(m);
}

static void test_bad_data_file(void) { damaged(K_FILE, true); }
static void test_bad_data_zloop(void) { damaged(K_ZLOOP_SEQ, true); }
static void test_bad_piece_file(void) { damaged(K_FILE, false); }
static void test_bad_piece_zloop(void) { damaged(K_ZLOOP_SEQ, false); }

/*
 * A record that verifies but frees space outside the data area (the
 * superblock's, say) is refused as damaged, with the records after it:
 * replay never hands such space to the allocator.
 */
static void test_bad_free(void)
{
	static const uint8_t uuid[16] = { 0x10, 0x9, 1, 2, 3 };
	struct model *m = calloc(6, sizeof(*m));
	const char *path = run_and_cut(K_FILE, NULL, "log-badfree", 5, m, 0);
	uint64_t addr = last_piece(K_FILE, path);
	uint8_t *blk = smr_dev_buf_alloc(SMR_CKPT_SIZE);
	uint8_t *payload = malloc(SMR_CKPT_SIZE);
	const struct smr_dlog *d = (const void *)blk;
	struct smr_cow fake = { 0 };
	struct smr_dlog_head h;
	struct smr_dextent x;
	struct smr_cow_info info;
	struct smr_dev *dev;
	struct smr_cow *c;
	size_t at, total;
	int fd = open(path, O_RDWR);

	CU_ASSERT_FATAL(fd >= 0 && blk && payload);
	CU_ASSERT_FATAL(pread(fd, blk, SMR_CKPT_SIZE, (off_t)addr) ==
			(ssize_t)SMR_CKPT_SIZE);
	CU_ASSERT_FATAL(le32toh(d->nr_pieces) == 1);
	total = le64toh(d->total);
	memcpy(payload, blk + sizeof(*d), total);
	memcpy(&h, payload, sizeof(h));
	CU_ASSERT_FATAL(le32toh(h.nr_frees) >= 1);
	/* The first free: the filesystem's first blocks. */
	at = sizeof(h) + le32toh(h.nr_claims) * sizeof(struct smr_dlog_claim);
	memcpy(&x, payload + at, sizeof(x));
	x.off = 0;
	memcpy(payload + at, &x, sizeof(x));
	memcpy(fake.sb.uuid, uuid, sizeof(uuid));
	fake.gen = le64toh(d->hdr.gen);
	SMR_ASSERT_OK(smr_log_seal(&fake, payload, total, le64toh(d->seq), blk,
				   &addr, 1));
	CU_ASSERT_FATAL(pwrite(fd, blk, SMR_CKPT_SIZE, (off_t)addr) ==
			(ssize_t)SMR_CKPT_SIZE);
	close(fd);
	c = reopen(path, &log_opts, &dev, &info);
	CU_ASSERT_FATAL(c != NULL);
	CU_ASSERT_EQUAL(info.log_replayed, 4);
	expect(c, &m[4]);
	SMR_ASSERT_OK(smr_cow_close(c));
	smr_dev_close(dev);
	smr_dev_buf_free(blk);
	free(payload);
	free(m);
}

/* The piece codec: identity checks. */
static void test_piece_codec(void)
{
	static const uint8_t uuid[16] = { 1, 2, 3 };
	static const uint8_t other[16] = { 9 };
	struct smr_cow c = { 0 };
	uint8_t *blk = smr_dev_buf_alloc(SMR_CKPT_SIZE);
	uint8_t payload[64] = { 0 };
	struct smr_log_piece p;
	uint64_t addr = 65536;

	memcpy(c.sb.uuid, uuid, 16);
	c.gen = 7;
	SMR_ASSERT_OK(smr_log_seal(&c, payload, sizeof(payload), 3, blk,
				   &addr, 1));
	SMR_ASSERT_OK(smr_log_piece_decode(blk, addr, uuid, &p));
	CU_ASSERT_EQUAL(p.gen, 7);
	CU_ASSERT_EQUAL(p.seq, 3);
	CU_ASSERT_EQUAL(p.total, sizeof(payload));
	/* Another filesystem, another place, a torn piece. */
	CU_ASSERT(smr_log_piece_decode(blk, addr, other, &p) < 0);
	CU_ASSERT(smr_log_piece_decode(blk, addr + SMR_CKPT_SIZE, uuid, &p) < 0);
	memset(blk + 4096, 0, 4096);
	blk[8192] ^= 1;
	CU_ASSERT(smr_log_piece_decode(blk, addr, uuid, &p) < 0);
	smr_dev_buf_free(blk);
}

static const struct smr_test log_tests[] = {
	{ "piece_codec", test_piece_codec },
	{ "replay_file_rotational", test_replay_file_rot },
	{ "replay_file_flash", test_replay_file_flash },
	{ "replay_zloop_cnv", test_replay_zloop_cnv },
	{ "replay_zloop", test_replay_zloop },
	{ "replay_zloop_cap", test_replay_zloop_cap },
	{ "replay_old_frees", test_replay_old_frees },
	{ "commit_between", test_commit_between },
	{ "ring_full", test_ring_full },
	{ "ring_old", test_ring_old },
	{ "repeat_keys", test_repeat_keys },
	{ "read_only", test_read_only },
	{ "bad_data_file", test_bad_data_file },
	{ "bad_data_zloop", test_bad_data_zloop },
	{ "bad_piece_file", test_bad_piece_file },
	{ "bad_piece_zloop", test_bad_piece_zloop },
	{ "bad_free", test_bad_free },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	static const struct smr_suite suites[] = {
		{ "log", log_tests },
		{ NULL, NULL },
	};

	smr_log_set_level(getenv("SMR_TEST_VERBOSE") ? SMR_LOG_DEBUG : SMR_LOG_ERR - 1);
	return smr_test_main(argc, argv, suites);
}
