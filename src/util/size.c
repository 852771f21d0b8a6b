/* SPDX-License-Identifier: GPL-2.0-or-later */
/* size.c - human sizes in and out. */
#include "util/smr.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int smr_parse_size(const char *s, uint64_t *bytes)
{
	static const char units[] = "KMGTP";
	unsigned long long whole;
	long double value;
	char *end;
	int shift = 0;

	if (!s || !*s || *s == '-' || isspace((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	whole = strtoull(s, &end, 10);
	if (errno)
		return -ERANGE;
	if (end == s)
		return -EINVAL;
	value = whole;
	if (*end == '.') {
		char *frac_end;
		long double frac = strtold(end, &frac_end);

		if (frac_end == end + 1)
			return -EINVAL;
		value += frac;
		end = frac_end;
	}
	if (*end) {
		const char *u = strchr(units, toupper((unsigned char)*end));

		if (!u)
			return -EINVAL;
		shift = 10 * (int)(u - units + 1);
		end++;
		if (!strcasecmp(end, "iB") || !strcasecmp(end, "B"))
			end += strlen(end);
		if (*end)
			return -EINVAL;
	}
	value = ldexpl(value, shift);
	if (value >= 18446744073709551615.0L)
		return -ERANGE;
	if (value != floorl(value))
		return -EINVAL;
	*bytes = (uint64_t)value;
	return 0;
}

char *smr_format_size(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB",
					     "PiB", "EiB" };
	unsigned int u = 0;
	double v = bytes;

	while (v >= 1024 && u + 1 < SMR_ARRAY_SIZE(units)) {
		v /= 1024;
		u++;
	}
	if (u == 0 || v == (uint64_t)v)
		snprintf(buf, len, "%.0f %s", v, units[u]);
	else
		snprintf(buf, len, "%.2f %s", v, units[u]);
	return buf;
}
