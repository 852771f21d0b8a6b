/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * log.c - the one logging path of smrfs.
 *
 * The sink and threshold are process-wide settings of the program (like
 * openlog(3)), not filesystem state, so they live here rather than in a handle.
 * A program changes them while its threads log (the daemon swaps sinks while
 * the commit timer, the cleaner and the device's threads run), so both are
 * read and written atomically: a message goes to the old sink or to the new
 * one, and a sink set with its data ready finds that data (release/acquire).
 */
#include "util/smr.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

static enum smr_log_level smr_log_threshold = SMR_LOG_INFO;
static smr_log_sink_fn smr_log_sink;

void smr_log_set_level(enum smr_log_level level)
{
	__atomic_store_n(&smr_log_threshold, level, __ATOMIC_RELAXED);
}

void smr_log_set_sink(smr_log_sink_fn sink)
{
	__atomic_store_n(&smr_log_sink, sink, __ATOMIC_RELEASE);
}

void smr_vlog(enum smr_log_level level, const char *fmt, va_list ap)
{
	smr_log_sink_fn sink;
	char msg[1024];

	if (level > __atomic_load_n(&smr_log_threshold, __ATOMIC_RELAXED))
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	sink = __atomic_load_n(&smr_log_sink, __ATOMIC_ACQUIRE);
	if (sink) {
		sink(level, msg);
		return;
	}
	fprintf(stderr, "smrfs: %s%s\n",
		level <= SMR_LOG_ERR ? "error: " :
		level == SMR_LOG_WARN ? "warning: " : "", msg);
}

void smr_log(enum smr_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	smr_vlog(level, fmt, ap);
	va_end(ap);
}

int smr_corrupt_at(uint64_t where, const char *why, const char *func, int line)
{
	if (where == UINT64_MAX)
		smr_err("corruption: %s (%s:%d)", why, func, line);
	else
		smr_err("corruption at byte %" PRIu64 ": %s (%s:%d)", where, why,
			func, line);
	return -SMR_EFSCORRUPTED;
}
