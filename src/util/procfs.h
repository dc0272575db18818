/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The caller's own /proc, held by a descriptor opened at first use. A child that has entered
 * another mount namespace and root (repair --namespace) still reads itself and the host's
 * processes through it: the /proc it would find by path there belongs to that namespace, may
 * be another pid namespace's (where "self" does not resolve), or may be missing. Call
 * procfs_fd() once before entering, so the descriptor is opened on the host.
 */
#pragma once

#include <stddef.h>

/* The descriptor (O_PATH, a directory), or a negative errno. */
int procfs_fd(void);
/* Run mount(2)-like calls that need a path to a magic link: "self/fd/N" is resolved relative to
 * the caller's /proc by changing the working directory there for the call. */
int procfs_chdir(int *saved_cwd);
void procfs_chdir_back(int saved_cwd);
/* A process's name (its comm file, path relative to dir_fd: "comm" under an open /proc/PID, or
 * "PID/comm" under /proc) into buf, without its newline; "" and a negative errno when it
 * cannot be read. */
int procfs_read_comm(int dir_fd, const char *path, char *buf, size_t size);
