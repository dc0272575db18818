/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The picture of a stack for the text report: the mounts at one mountpoint, bottom to top, each
 * with its mount id, type, device and options, whether a path reaches it, the instance
 * /dev/ptmx allocates on marked, and the processes the snapshot found holding ptys on it. Drawn
 * from the snapshot and the analysis alone (a live audit and a snapshot file draw the same), in
 * printable ASCII only; every string from the audited system goes through util/escape.h.
 */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "analysis/analysis.h"
#include "checks/checks.h"

/* The mountpoints drawn so far in one report block: findings about the same stack draw it once,
 * under the first of them; a report draws at most STACK_PICTURES_MAX places. */
#define STACK_PICTURES_MAX 8
struct stack_pictures {
	const char *drawn[STACK_PICTURES_MAX];
	size_t n;
};

/* Under a finding, the stacks it is about: when it names two devpts instances, a devpts mount
 * no path reaches, the host's own instance (a namespace audit), or /dev/ptmx leading to an
 * instance that is not at /dev/pts. Each place of its mounts is drawn once per *drawn (and
 * /dev/pts beside them when /dev/ptmx leads elsewhere). Returns how many places it drew, or
 * -EIO. */
int stack_picture_write(FILE *f, const struct analysis *a, const struct finding *fi,
			struct stack_pictures *drawn, bool color);

/* The picture of the mounts at mountpoint, whatever they are: "stack at MP, bottom to top:" and
 * a line for each layer, indented by indent spaces. 0, or -EIO. */
int stack_picture_draw(FILE *f, const struct analysis *a, const char *mountpoint, unsigned indent,
		       bool color);
