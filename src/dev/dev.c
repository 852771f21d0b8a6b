/* SPDX-License-Identifier: GPL-2.0-or-later */
/* dev.c - the device handle: dispatch to backends, zone cache queries. */
#include "dev/dev.h"

const char *smr_zone_type_str(uint8_t type)
{
	switch (type) {
	case SMR_ZONE_TYPE_CNV: return "CONVENTIONAL";
	case SMR_ZONE_TYPE_SEQ: return "SEQ_WRITE_REQUIRED";
	case SMR_ZONE_TYPE_SEQ_PREF: return "SEQ_WRITE_PREFERRED";
	default: return "UNKNOWN";
	}
}
