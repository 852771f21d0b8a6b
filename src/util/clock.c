/* SPDX-License-Identifier: GPL-2.0-or-later */
/* clock.c - the monotonic clock, for intervals and deadlines. */
#include "util/smr.h"

#include <time.h>

uint64_t smr_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}
