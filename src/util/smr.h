/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * smr.h - definitions shared by every layer of smrfs: error codes, logging,
 * small helpers. Nothing here knows about devices or the on-disk format.
 *
 * Error convention (all layers): a function returns 0 or a positive count on
 * success and a negative errno on failure. Never -1 with errno set. The FUSE
 * adapter is the one place where a negative errno becomes FUSE's positive one.
 */
#ifndef SMR_SMR_H
#define SMR_SMR_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A structure on disk is inconsistent (a failed verifier, a bad pointer). */
#define SMR_EFSCORRUPTED EUCLEAN
/* A checksum did not match. */
#define SMR_EFSBADCRC EBADMSG

#define SMR_KIB (1024ULL)
#define SMR_MIB (1024ULL * 1024)
#define SMR_GIB (1024ULL * 1024 * 1024)
#define SMR_TIB (1024ULL * 1024 * 1024 * 1024)

#define SMR_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define SMR_MIN(a, b) ((a) < (b) ? (a) : (b))
#define SMR_MAX(a, b) ((a) > (b) ? (a) : (b))
#define SMR_DIV_ROUND_UP(n, d) (((n) + (d) - 1) / (d))
#define SMR_ROUND_UP(n, a) (SMR_DIV_ROUND_UP(n, a) * (a))
#define SMR_ROUND_DOWN(n, a) ((n) / (a) * (a))
#define SMR_IS_POW2(x) ((x) != 0 && ((x) & ((x) - 1)) == 0)

#define smr_container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

#define smr_likely(x) __builtin_expect(!!(x), 1)
#define smr_unlikely(x) __builtin_expect(!!(x), 0)

/* ------------------------------------------------------------------------
 * Logging
 *
 * Every message goes through smr_log(). By default it goes to stderr with a
 * "smrfs: " prefix; a program may redirect it (the daemon sends it to syslog
 * once it detaches) with smr_log_set_sink(). The level threshold defaults to
 * SMR_LOG_INFO; SMR_LOG_DEBUG messages appear only after
 * smr_log_set_level(SMR_LOG_DEBUG).
 * ------------------------------------------------------------------------ */
enum smr_log_level {
	SMR_LOG_ERR = 3,
	SMR_LOG_WARN = 4,
	SMR_LOG_NOTICE = 5,
	SMR_LOG_INFO = 6,
	SMR_LOG_DEBUG = 7,
};

typedef void (*smr_log_sink_fn)(enum smr_log_level level, const char *msg);

void smr_log(enum smr_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void smr_vlog(enum smr_log_level level, const char *fmt, va_list ap);
void smr_log_set_level(enum smr_log_level level);
/* NULL restores the default stderr sink. */
void smr_log_set_sink(smr_log_sink_fn sink);

#define smr_err(...) smr_log(SMR_LOG_ERR, __VA_ARGS__)
#define smr_warn(...) smr_log(SMR_LOG_WARN, __VA_ARGS__)
#define smr_info(...) smr_log(SMR_LOG_INFO, __VA_ARGS__)
#define smr_debug(...) smr_log(SMR_LOG_DEBUG, __VA_ARGS__)

/*
 * Report a corruption found at @where (a device byte offset, or UINT64_MAX if
 * none) with the function and line that found it; returns -SMR_EFSCORRUPTED so
 * that callers can write `return smr_corrupt(off, "bad level");`.
 */
#define smr_corrupt(where, why) \
	smr_corrupt_at((where), (why), __func__, __LINE__)
int smr_corrupt_at(uint64_t where, const char *why, const char *func, int line);

/* ------------------------------------------------------------------------
 * Sizes
 * ------------------------------------------------------------------------ */

/*
 * Parse a size such as "4096", "256M", "1.5G" or "2T" (K/M/G/T/P, binary
 * multiples, optional "iB"/"B" suffix, case-insensitive) into bytes.
 * Returns 0, or -EINVAL for a malformed string, -ERANGE on overflow.
 */
int smr_parse_size(const char *s, uint64_t *bytes);

/*
 * Open /dev/null into whichever of descriptors 0, 1 and 2 is closed, so
 * that nothing the program opens later takes their place. Call first in
 * main(). 0, or the negative errno of open(2).
 */
int smr_stdio_guard(void);

/* Format @bytes for humans ("256 MiB", "1.50 GiB") into @buf; returns buf. */
char *smr_format_size(uint64_t bytes, char *buf, size_t len);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t smr_now_ns(void);

/*
 * Make room for element @n of the array *@p of *@cap elements of @size
 * bytes (realloc, doubling): 0, or -ENOMEM with the array unchanged.
 */
int smr_array_grow(void **p, size_t *cap, size_t n, size_t size);

/* A UUID as text: 36 characters (8-4-4-4-12 lowercase hexadecimal digits)
 * and the NUL; returns @buf. */
#define SMR_UUID_STR_LEN 37
char *smr_uuid_format(const uint8_t u[16], char buf[SMR_UUID_STR_LEN]);
/* Parse 32 hexadecimal digits, any case, dashes anywhere between them:
 * 0, or -EINVAL. */
int smr_uuid_parse(const char *s, uint8_t out[16]);

/* Undo, in place, the octal escapes (\040 for a space) of a field of
 * /proc/self/mounts or /proc/self/mountinfo. */
void smr_mtab_unescape(char *s);

/*
 * The newest mount on @path (absolute, symbolic links resolved) in
 * /proc/self/mountinfo: its type ("fuse.smrfs") and its per-mount options
 * ("rw,nosuid,relatime") into the buffers given (either may be NULL), cut
 * to fit. 0, -ENOENT where nothing is mounted there, or -errno.
 */
int smr_mountinfo_find(const char *path, char *fstype, size_t fstype_len,
		       char *opts, size_t opts_len);

/* ------------------------------------------------------------------------
 * Failpoints (tests of process death)
 *
 * smr_failpoint("commit.after_nodes") marks a step; a program that called
 * smr_failpoint_init() with SMRFS_FAILPOINT="commit.after_nodes:3" in its
 * environment kills itself with SIGKILL the third time it passes there;
 * with "commit.after_nodes:3:stop" it stops itself (SIGSTOP) instead, for
 * a test to hold it there and continue it. Unarmed, a failpoint is one branch on smr_failpoints_armed. The names in
 * use are listed in docs/design/failures.md.
 * ------------------------------------------------------------------------ */
extern bool smr_failpoints_armed;

/* Arm from SMRFS_FAILPOINT ("name[:count][:stop][,...]"); call before any thread
 * starts. Returns 0 (also when unset), or -EINVAL (logged) for a bad spec. */
int smr_failpoint_init(void);
/* Arm from @spec as above (NULL or "" disarms); for tests. */
int smr_failpoint_set(const char *spec);
void smr_failpoint_hit(const char *name);

#define smr_failpoint(name)                             \
	do {                                            \
		if (smr_unlikely(smr_failpoints_armed)) \
			smr_failpoint_hit(name);        \
	} while (0)

#endif /* SMR_SMR_H */
