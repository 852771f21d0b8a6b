/* SPDX-License-Identifier: GPL-2.0-or-later */
/* cow.c - placeholder until the COW engine lands. */
#include "util/smr.h"
