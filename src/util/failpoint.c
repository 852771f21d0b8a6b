/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * failpoint.c - named places where a test can make the process die.
 *
 * The daemon calls smr_failpoint_init() once at start; it reads
 * SMRFS_FAILPOINT ("name[:count][:stop][,...]"). Code marks a place with
 * smr_failpoint("commit.after_nodes"); the count-th time a named point is
 * passed (the first by default), the process sends itself SIGKILL: no
 * handler, no atexit, no flush, exactly what kill -9 from outside does, but
 * at a known step. With ":stop" it sends itself SIGSTOP instead and goes
 * on when continued (SIGCONT), so that a test can hold it at that step.
 * docs/design/failures.md lists the points.
 *
 * The table is a process-wide setting of the program, like the log
 * threshold, not filesystem state: it is set before any thread starts and
 * only read (and its hit counters bumped atomically) afterwards. When no
 * failpoint is armed a failpoint costs one predictable branch.
 */
#include "util/smr.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FP_MAX 8
#define FP_NAME_MAX 48

bool smr_failpoints_armed;

static struct {
	char name[FP_NAME_MAX];
	uint64_t count; /* the hit that acts, 1-based */
	uint64_t hits;  /* atomic */
	bool stop;      /* SIGSTOP, not SIGKILL */
} fp_table[FP_MAX];
static unsigned int fp_n;

/* "name[:count][:stop]" into the table. */
static int fp_add(const char *spec)
{
	const char *colon = strchr(spec, ':');
	size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
	uint64_t count = 1;
	bool stop = false;

	if (!len || len >= FP_NAME_MAX || fp_n == FP_MAX)
		return -EINVAL;
	if (colon && colon[1] >= '0' && colon[1] <= '9') {
		char *end;

		count = strtoull(colon + 1, &end, 10);
		if (!count || (*end && *end != ':'))
			return -EINVAL;
		colon = *end ? end : NULL;
	}
	if (colon) {
		if (strcmp(colon + 1, "stop"))
			return -EINVAL;
		stop = true;
	}
	memcpy(fp_table[fp_n].name, spec, len);
	fp_table[fp_n].name[len] = 0;
	fp_table[fp_n].count = count;
	fp_table[fp_n].hits = 0;
	fp_table[fp_n].stop = stop;
	fp_n++;
	return 0;
}

int smr_failpoint_set(const char *spec)
{
	char *copy, *save = NULL, *s;
	int rc = 0;

	smr_failpoints_armed = false;
	fp_n = 0;
	if (!spec || !*spec)
		return 0;
	copy = strdup(spec);
	if (!copy)
		return -ENOMEM;
	for (s = strtok_r(copy, ",", &save); s && !rc;
	     s = strtok_r(NULL, ",", &save))
		rc = fp_add(s);
	free(copy);
	if (rc) {
		fp_n = 0;
		return rc;
	}
	smr_failpoints_armed = fp_n > 0;
	return 0;
}

int smr_failpoint_init(void)
{
	const char *spec = getenv("SMRFS_FAILPOINT");
	int rc = smr_failpoint_set(spec);

	if (rc)
		smr_err("SMRFS_FAILPOINT='%s': expected "
			"name[:count][:stop][,...]", spec);
	else if (smr_failpoints_armed)
		smr_warn("failpoints armed: %s (the process kills or stops "
			 "itself there)", spec);
	return rc;
}

void smr_failpoint_hit(const char *name)
{
	for (unsigned int i = 0; i < fp_n; i++) {
		char msg[128];
		int len;

		if (strcmp(fp_table[i].name, name))
			continue;
		if (__atomic_add_fetch(&fp_table[i].hits, 1, __ATOMIC_RELAXED) !=
		    fp_table[i].count)
			return;
		/* Straight to the descriptor: nothing buffered survives. */
		len = snprintf(msg, sizeof(msg),
			       "smrfs: failpoint %s reached (hit %llu): %s\n",
			       name, (unsigned long long)fp_table[i].count,
			       fp_table[i].stop ? "SIGSTOP" : "SIGKILL");
		if (len > 0 && write(STDERR_FILENO, msg, (size_t)len) < 0)
			len = 0;
		if (fp_table[i].stop) {
			kill(getpid(), SIGSTOP);
			return;
		}
		kill(getpid(), SIGKILL);
		_exit(137); /* not reached */
	}
}
