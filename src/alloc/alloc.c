/* SPDX-License-Identifier: GPL-2.0-or-later */
/* alloc.c - the allocator registry and the locking wrappers. */
#include "alloc/alloc.h"

const char *smr_stream_str(enum smr_stream s)
{
	static const char *const names[SMR_STREAM_NR] = {
		"meta", "hot", "cold", "reloc",
	};

	return (unsigned int)s < SMR_STREAM_NR ? names[s] : "unknown";
}
