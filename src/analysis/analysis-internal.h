/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the two files of the analysis (analysis/analysis.h) share, and nothing for use outside
 * them: analysis.c builds it (the devpts instances, what /dev/ptmx is and which instance it
 * serves); reachability.c computes, for it, which mounts are reachable, covered or stacked.
 */
#pragma once

#include "analysis/analysis.h"

/* a->parent, a->stacked_on, a->covered_by and a->reachable (allocated, one per mount) filled
 * from a->snap's mount table; a->cover_work counts the bytes hashed. 0, or -ENOMEM. Whatever
 * it indexed is released before it returns. */
int analysis_reachability(struct analysis *a);
