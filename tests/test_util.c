/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_util.c - size parsing and formatting; failpoints; the log from
 * several threads; the block checksum helpers. */
#include "testutil.h"

#include <endian.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "format/blk.h"
#include "format/ondisk.h"
#include "format/sb.h"
#include "util/smr.h"

static void test_parse_size(void)
{
	static const struct {
		const char *s;
		int rc;
		uint64_t v;
	} cases[] = {
		{ "0", 0, 0 },
		{ "4096", 0, 4096 },
		{ "4k", 0, 4096 },
		{ "256M", 0, 256 * SMR_MIB },
		{ "256MiB", 0, 256 * SMR_MIB },
		{ "1.5G", 0, 1536 * SMR_MIB },
		{ "2T", 0, 2 * SMR_TIB },
		{ "20tb", 0, 20 * SMR_TIB },
		{ "", -EINVAL, 0 },
		{ "-1", -EINVAL, 0 },
		{ "12X", -EINVAL, 0 },
		{ "1.", -EINVAL, 0 },
		{ "1.3k", -EINVAL, 0 }, /* not a whole number of bytes */
		{ "M", -EINVAL, 0 },
		{ "16P", 0, 16 * 1024 * SMR_TIB },
		{ "16384P", -ERANGE, 0 },
		{ "99999999999999999999", -ERANGE, 0 },
	};

	for (size_t i = 0; i < SMR_ARRAY_SIZE(cases); i++) {
		uint64_t v = 0;
		int rc = smr_parse_size(cases[i].s, &v);

		if (rc != cases[i].rc || (rc == 0 && v != cases[i].v))
			fprintf(stderr, "parse \"%s\": rc %d value %llu\n",
				cases[i].s, rc, (unsigned long long)v);
		CU_ASSERT_EQUAL(rc, cases[i].rc);
		if (rc == 0)
			CU_ASSERT_EQUAL(v, cases[i].v);
	}
}

static void test_format_size(void)
{
	char buf[32];

	CU_ASSERT_STRING_EQUAL(smr_format_size(512, buf, sizeof(buf)), "512 B");
	CU_ASSERT_STRING_EQUAL(smr_format_size(256 * SMR_MIB, buf, sizeof(buf)),
			       "256 MiB");
	CU_ASSERT_STRING_EQUAL(smr_format_size(1536 * SMR_MIB, buf, sizeof(buf)),
			       "1.50 GiB");
}

static int verify_ok(const void *blk, size_t len, uint64_t addr)
{
	const uint8_t *b = blk;

	(void)len;
	return b[64] == 0xee ? smr_corrupt(addr, "payload byte 64 is 0xee") : 0;
}

static const struct smr_blk_ops test_ops = {
	.name = "test block",
	.magic = SMR_MAGIC('T', 'E', 'S', 'T'),
	.verify = verify_ok,
};

/* Mount table fields: \040 and the like undone, anything else kept. */
static void test_mtab_unescape(void)
{
	static const struct {
		const char *in, *out;
	} c[] = {
		{ "/dev/sda", "/dev/sda" },
		{ "/mnt/a\\040b", "/mnt/a b" },
		{ "tab\\011x\\134y", "tab\tx\\y" },
		{ "no\\8escape", "no\\8escape" },
		{ "cut\\04", "cut\\04" },
		{ "", "" },
	};

	for (size_t i = 0; i < SMR_ARRAY_SIZE(c); i++) {
		char buf[64];

		snprintf(buf, sizeof(buf), "%s", c[i].in);
		smr_mtab_unescape(buf);
		CU_ASSERT_STRING_EQUAL(buf, c[i].out);
	}
}

/* The mount table: /proc is a proc mount, with per-mount options; a path
 * nothing is mounted on is -ENOENT; a buffer too small gets a cut copy. */
static void test_mountinfo_find(void)
{
	char type[32], opts[256], small[3];

	if (smr_mountinfo_find("/proc", type, sizeof(type), opts,
			       sizeof(opts))) {
		CU_PASS("no /proc mount here");
		return;
	}
	CU_ASSERT_STRING_EQUAL(type, "proc");
	CU_ASSERT(!strncmp(opts, "rw", 2) || !strncmp(opts, "ro", 2));
	SMR_ASSERT_RC(smr_mountinfo_find("/proc/self", type, sizeof(type),
					 NULL, 0), -ENOENT);
	SMR_ASSERT_OK(smr_mountinfo_find("/proc", small, sizeof(small),
					 NULL, 0));
	CU_ASSERT_STRING_EQUAL(small, "pr");
}

/* UUIDs: formatted 8-4-4-4-12, parsed back with or without dashes, in
 * either case; anything else refused. */
static void test_uuid_text(void)
{
	static const uint8_t u[16] = { 0x01, 0x23, 0x45, 0x67, 0x89, 0xab,
				       0xcd, 0xef, 0xfe, 0xdc, 0xba, 0x98,
				       0x76, 0x54, 0x32, 0x10 };
	static const char *const bad[] = {
		"", "0123456789abcdeffedcba987654321",
		"0123456789abcdeffedcba98765432100",
		"0123456789abcdeffedcba987654321g", "01234567 89abcdef",
	};
	char buf[SMR_UUID_STR_LEN];
	uint8_t out[16];

	CU_ASSERT_STRING_EQUAL(smr_uuid_format(u, buf),
			       "01234567-89ab-cdef-fedc-ba9876543210");
	SMR_ASSERT_OK(smr_uuid_parse(buf, out));
	CU_ASSERT_EQUAL(memcmp(out, u, 16), 0);
	memset(out, 0, sizeof(out));
	SMR_ASSERT_OK(smr_uuid_parse("0123456789ABCDEFFEDCBA9876543210", out));
	CU_ASSERT_EQUAL(memcmp(out, u, 16), 0);
	for (size_t i = 0; i < SMR_ARRAY_SIZE(bad); i++)
		SMR_ASSERT_RC(smr_uuid_parse(bad[i], out), -EINVAL);
}

static void test_blk_seal_verify(void)
{
	static const uint8_t uuid[16] = { 1, 2, 3, 4 };
	static const uint8_t other[16] = { 9 };
	uint8_t blk[4096];
	struct smr_blk_expect exp = { .addr = 8192, .gen = 7, .owner = 5,
				      .uuid = uuid };

	memset(blk, 0x5a, sizeof(blk));
	smr_blk_hdr_init(blk, &test_ops, sizeof(blk), 8192, 7, 5, uuid, 0);
	SMR_ASSERT_OK(smr_blk_seal(blk, sizeof(blk), &test_ops));
	SMR_ASSERT_OK(smr_blk_verify(blk, sizeof(blk), &test_ops, &exp));

	/* Every single-byte flip outside the csum field is caught. */
	for (size_t i = 0; i < sizeof(blk); i += 97) {
		if (i >= 8 && i < 16)
			continue;
		blk[i] ^= 0x01;
		CU_ASSERT_NOT_EQUAL(
			smr_blk_verify(blk, sizeof(blk), &test_ops, &exp), 0);
		blk[i] ^= 0x01;
	}
	/* Identity mismatches. */
	exp.addr = 4096;
	SMR_ASSERT_RC(smr_blk_verify(blk, sizeof(blk), &test_ops, &exp),
		      -SMR_EFSCORRUPTED);
	exp.addr = 8192;
	exp.gen = 6;
	SMR_ASSERT_RC(smr_blk_verify(blk, sizeof(blk), &test_ops, &exp),
		      -SMR_EFSCORRUPTED);
	exp.gen = 0;
	exp.uuid = other;
	SMR_ASSERT_RC(smr_blk_verify(blk, sizeof(blk), &test_ops, &exp),
		      -SMR_EFSCORRUPTED);
	exp.uuid = uuid;
	/* A checksum mismatch is EBADMSG. */
	blk[100] ^= 0xff;
	SMR_ASSERT_RC(smr_blk_verify(blk, sizeof(blk), &test_ops, &exp),
		      -SMR_EFSBADCRC);
	blk[100] ^= 0xff;
	/* The type verifier runs on read and refuses to seal. */
	blk[64] = 0xee;
	SMR_ASSERT_RC(smr_blk_seal(blk, sizeof(blk), &test_ops),
		      -SMR_EFSCORRUPTED);
}

/* The header as the block claims it, and the quiet form of the checks. */
static void test_blk_decode_matches(void)
{
	static const uint8_t uuid[16] = { 1, 2, 3, 4 };
	static const uint8_t other[16] = { 9 };
	uint8_t blk[4096];
	struct smr_blk_expect exp = { .addr = 8192, .uuid = uuid };
	struct smr_blk_id id;

	memset(blk, 0x5a, sizeof(blk));
	smr_blk_hdr_init(blk, &test_ops, sizeof(blk), 8192, 7, 5, uuid, 3);
	SMR_ASSERT_OK(smr_blk_seal(blk, sizeof(blk), &test_ops));
	smr_blk_hdr_decode(blk, &id);
	CU_ASSERT_EQUAL(id.magic, test_ops.magic);
	CU_ASSERT_EQUAL(id.len, sizeof(blk));
	CU_ASSERT_EQUAL(id.csum, smr_blk_csum(blk, sizeof(blk)));
	CU_ASSERT_EQUAL(id.addr, 8192);
	CU_ASSERT_EQUAL(id.gen, 7);
	CU_ASSERT_EQUAL(id.owner, 5);
	CU_ASSERT_EQUAL(id.level, 3);
	CU_ASSERT_EQUAL(memcmp(id.uuid, uuid, sizeof(uuid)), 0);

	CU_ASSERT_TRUE(smr_blk_matches(blk, sizeof(blk), &test_ops, &exp));
	exp.gen = 7;
	exp.owner = 5;
	CU_ASSERT_TRUE(smr_blk_matches(blk, sizeof(blk), &test_ops, &exp));
	/* Every header byte and some of the rest, flipped, is refused. */
	for (size_t i = 0; i < sizeof(blk); i += i < 64 ? 1 : 97) {
		blk[i] ^= 0x01;
		CU_ASSERT_FALSE(smr_blk_matches(blk, sizeof(blk), &test_ops,
						&exp));
		blk[i] ^= 0x01;
	}
	CU_ASSERT_FALSE(smr_blk_matches(blk, sizeof(blk) - 512, &test_ops,
					&exp));
	CU_ASSERT_FALSE(smr_blk_matches(blk, 32, &test_ops, &exp));
	exp.addr = 4096;
	CU_ASSERT_FALSE(smr_blk_matches(blk, sizeof(blk), &test_ops, &exp));
	exp.addr = 8192;
	exp.gen = 6;
	CU_ASSERT_FALSE(smr_blk_matches(blk, sizeof(blk), &test_ops, &exp));
	exp.gen = 0;
	exp.owner = 4;
	CU_ASSERT_FALSE(smr_blk_matches(blk, sizeof(blk), &test_ops, &exp));
	exp.owner = 0;
	exp.uuid = other;
	CU_ASSERT_FALSE(smr_blk_matches(blk, sizeof(blk), &test_ops, &exp));
	exp.uuid = NULL;
	CU_ASSERT_TRUE(smr_blk_matches(blk, sizeof(blk), &test_ops, &exp));
}

/* A checkpoint's unused roots and its tail past the pending extents must be
 * zero: a nonzero byte anywhere there (the first, one inside, the last) is
 * refused, even under a checksum that matches. */
static void test_ckpt_zero_tail(void)
{
	static const uint8_t uuid[16] = { 9, 8, 7 };
	static struct smr_ckpt ck, out;
	uint8_t *blk = malloc(SMR_CKPT_SIZE);
	struct smr_dckpt *d = (struct smr_dckpt *)blk;
	size_t tail = sizeof(*d) + 2 * sizeof(struct smr_dextent);
	size_t at[] = { tail, tail + 1, (tail + SMR_CKPT_SIZE) / 2,
			SMR_CKPT_SIZE - 1,
			offsetof(struct smr_dckpt, roots[1]),
			offsetof(struct smr_dckpt, roots[SMR_CKPT_MAX_ROOTS]) - 1 };

	CU_ASSERT_FATAL(blk != NULL);
	ck.gen = 5;
	ck.prev_gen = 4;
	ck.nr_roots = 1;
	ck.roots[0].tree = 1;
	ck.nr_pending = 2;
	ck.pending[0].off = 1 << 20;
	ck.pending[0].len = 4096;
	ck.pending[1].off = 2 << 20;
	ck.pending[1].len = 8192;
	SMR_ASSERT_OK(smr_ckpt_to_disk(&ck, uuid, blk, SMR_CKPT_SIZE, 65536));
	SMR_ASSERT_OK(smr_ckpt_from_disk(blk, SMR_CKPT_SIZE, 65536, uuid, &out));
	CU_ASSERT_EQUAL(out.nr_pending, 2);
	for (size_t i = 0; i < SMR_ARRAY_SIZE(at); i++) {
		blk[at[i]] = 0x40;
		d->hdr.csum = htole64(smr_blk_csum(blk, SMR_CKPT_SIZE));
		SMR_ASSERT_RC(smr_ckpt_from_disk(blk, SMR_CKPT_SIZE, 65536, uuid,
						 &out), -SMR_EFSCORRUPTED);
		blk[at[i]] = 0;
		d->hdr.csum = htole64(smr_blk_csum(blk, SMR_CKPT_SIZE));
		SMR_ASSERT_OK(smr_ckpt_from_disk(blk, SMR_CKPT_SIZE, 65536,
						 uuid, &out));
	}
	free(blk);
}

/* One flipped bit anywhere in a checkpoint record (its header, its
 * checksum, a root, its zero tail) is found and flipped back; two are not,
 * and the record is left as it was. */
static void test_ckpt_fix_bit(void)
{
	static const uint8_t uuid[16] = { 9, 8, 7 };
	static struct smr_ckpt ck, out;
	uint8_t *blk = malloc(SMR_CKPT_SIZE), *good = malloc(SMR_CKPT_SIZE);
	size_t at[] = { 17, offsetof(struct smr_blk_hdr, csum) + 3,
			offsetof(struct smr_dckpt, roots[0]) + 9,
			SMR_CKPT_SIZE / 2, SMR_CKPT_SIZE - 1 };

	CU_ASSERT_FATAL(blk != NULL && good != NULL);
	ck.gen = 5;
	ck.prev_gen = 4;
	ck.nr_roots = 1;
	ck.roots[0].tree = 1;
	ck.roots[0].addr = 1 << 22;
	ck.roots[0].gen = 5;
	SMR_ASSERT_OK(smr_ckpt_to_disk(&ck, uuid, good, SMR_CKPT_SIZE, 65536));
	for (size_t i = 0; i < SMR_ARRAY_SIZE(at); i++) {
		memcpy(blk, good, SMR_CKPT_SIZE);
		blk[at[i]] ^= 0x10;
		CU_ASSERT(smr_ckpt_from_disk(blk, SMR_CKPT_SIZE, 65536, uuid,
					     &out) < 0);
		SMR_ASSERT_OK(smr_ckpt_fix_bit(blk, SMR_CKPT_SIZE, 65536, uuid));
		CU_ASSERT(memcmp(blk, good, SMR_CKPT_SIZE) == 0);
		SMR_ASSERT_OK(smr_ckpt_from_disk(blk, SMR_CKPT_SIZE, 65536,
						 uuid, &out));
		CU_ASSERT_EQUAL(out.roots[0].addr, 1 << 22);
	}
	memcpy(blk, good, SMR_CKPT_SIZE);
	blk[100] ^= 0x01;
	blk[9000] ^= 0x80;
	memcpy(good, blk, SMR_CKPT_SIZE);
	SMR_ASSERT_RC(smr_ckpt_fix_bit(blk, SMR_CKPT_SIZE, 65536, uuid),
		      -SMR_EFSBADCRC);
	CU_ASSERT(memcmp(blk, good, SMR_CKPT_SIZE) == 0);
	free(blk);
	free(good);
}

/* Pass @name @n times in a child; returns the child's wait status, and in
 * *@stops how often it stopped itself (each time continued). */
static int failpoint_child(const char *spec, const char *name, int n,
			   int *stops)
{
	int status = -1;
	pid_t pid = fork();

	if (pid == 0) {
		if (smr_failpoint_set(spec))
			_exit(2);
		for (int i = 0; i < n; i++)
			smr_failpoint(name);
		_exit(0);
	}
	CU_ASSERT_FATAL(pid > 0);
	*stops = 0;
	for (;;) {
		CU_ASSERT_FATAL(waitpid(pid, &status, WUNTRACED) == pid);
		if (!WIFSTOPPED(status))
			return status;
		++*stops;
		CU_ASSERT_FATAL(kill(pid, SIGCONT) == 0);
	}
}

static void test_failpoint(void)
{
	int st, stops;

	/* Malformed specs are refused and arm nothing. */
	SMR_ASSERT_RC(smr_failpoint_set("a:"), -EINVAL);
	SMR_ASSERT_RC(smr_failpoint_set("a:0"), -EINVAL);
	SMR_ASSERT_RC(smr_failpoint_set("a:x"), -EINVAL);
	SMR_ASSERT_RC(smr_failpoint_set(":3"), -EINVAL);
	SMR_ASSERT_RC(smr_failpoint_set("a:2:halt"), -EINVAL);
	SMR_ASSERT_RC(smr_failpoint_set("a:2x"), -EINVAL);
	SMR_ASSERT_RC(smr_failpoint_set("a::stop"), -EINVAL);
	CU_ASSERT(!smr_failpoints_armed);
	SMR_ASSERT_OK(smr_failpoint_set("a.b:2,c"));
	CU_ASSERT(smr_failpoints_armed);
	SMR_ASSERT_OK(smr_failpoint_set(NULL));
	CU_ASSERT(!smr_failpoints_armed);
	/* Unarmed, and armed elsewhere: passing does nothing. */
	smr_failpoint("a.b");
	st = failpoint_child("x:1", "a.b", 5, &stops);
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* The count-th pass kills with SIGKILL, not before. */
	st = failpoint_child("a.b:3", "a.b", 2, &stops);
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	st = failpoint_child("x,a.b:3", "a.b", 3, &stops);
	CU_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	st = failpoint_child("a.b", "a.b", 1, &stops);
	CU_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	/* ":stop" stops there, and the process goes on once continued. */
	st = failpoint_child("a.b:2:stop", "a.b", 3, &stops);
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0 && stops == 1);
	st = failpoint_child("a.b:stop", "a.b", 1, &stops);
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0 && stops == 1);
	st = failpoint_child("a.b:2:stop", "a.b", 1, &stops);
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0 && stops == 0);
}

/*
 * The log sink and level change while other threads log (the daemon swaps
 * sinks with the commit timer and the cleaner running): every message goes
 * to one sink or the other, none is lost, and under ThreadSanitizer no
 * access to the settings races.
 */
static unsigned long log_seen[2];

static void log_sink_a(enum smr_log_level level, const char *msg)
{
	(void)level;
	(void)msg;
	__atomic_fetch_add(&log_seen[0], 1, __ATOMIC_RELAXED);
}

static void log_sink_b(enum smr_log_level level, const char *msg)
{
	(void)level;
	(void)msg;
	__atomic_fetch_add(&log_seen[1], 1, __ATOMIC_RELAXED);
}

enum { LOG_MSGS = 20000 };

static void *log_thread(void *arg)
{
	(void)arg;
	for (int i = 0; i < LOG_MSGS; i++)
		smr_err("message %d", i);
	return NULL;
}

static void test_log_sink_threads(void)
{
	pthread_t th[2];

	log_seen[0] = log_seen[1] = 0;
	smr_log_set_sink(log_sink_a);
	for (int i = 0; i < 2; i++)
		CU_ASSERT_EQUAL_FATAL(
			pthread_create(&th[i], NULL, log_thread, NULL), 0);
	for (int i = 0; i < 2000; i++) {
		smr_log_set_sink(i & 1 ? log_sink_a : log_sink_b);
		smr_log_set_level(i & 1 ? SMR_LOG_INFO : SMR_LOG_ERR);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	smr_log_set_sink(NULL);
	smr_log_set_level(SMR_LOG_ERR + 0);
	CU_ASSERT_EQUAL(log_seen[0] + log_seen[1], 2 * LOG_MSGS);
}

static const struct smr_test util_tests[] = {
	{ "failpoint", test_failpoint },
	{ "parse_size", test_parse_size },
	{ "format_size", test_format_size },
	{ "mtab_unescape", test_mtab_unescape },
	{ "uuid_text", test_uuid_text },
	{ "mountinfo_find", test_mountinfo_find },
	{ "log_sink_threads", test_log_sink_threads },
	{ NULL, NULL },
};

static const struct smr_test blk_tests[] = {
	{ "blk_seal_verify", test_blk_seal_verify },
	{ "blk_decode_matches", test_blk_decode_matches },
	{ "ckpt_zero_tail", test_ckpt_zero_tail },
	{ "ckpt_fix_bit", test_ckpt_fix_bit },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	static const struct smr_suite suites[] = {
		{ "util", util_tests },
		{ "blk", blk_tests },
		{ NULL, NULL },
	};

	smr_log_set_level(SMR_LOG_ERR + 0);
	return smr_test_main(argc, argv, suites);
}
