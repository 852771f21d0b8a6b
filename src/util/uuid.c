/* SPDX-License-Identifier: GPL-2.0-or-later */
/* uuid.c - UUIDs as text: 8-4-4-4-12 hexadecimal digits. */
#include <ctype.h>
#include <errno.h>

#include "util/smr.h"

char *smr_uuid_format(const uint8_t u[16], char buf[SMR_UUID_STR_LEN])
{
	static const char hex[] = "0123456789abcdef";
	char *p = buf;

	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			*p++ = '-';
		*p++ = hex[u[i] >> 4];
		*p++ = hex[u[i] & 15];
	}
	*p = '\0';
	return buf;
}

int smr_uuid_parse(const char *s, uint8_t out[16])
{
	int n = 0;

	for (; *s && n < 32; s++) {
		int v;

		if (*s == '-')
			continue;
		if (!isxdigit((unsigned char)*s))
			return -EINVAL;
		v = isdigit((unsigned char)*s) ? *s - '0' :
			tolower((unsigned char)*s) - 'a' + 10;
		if (n % 2 == 0)
			out[n / 2] = (uint8_t)(v << 4);
		else
			out[n / 2] |= (uint8_t)v;
		n++;
	}
	return n == 32 && !*s ? 0 : -EINVAL;
}
