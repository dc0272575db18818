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
#include <sys/types.h>

/* The descriptor (O_PATH, a directory), or a negative errno. */
int procfs_fd(void);
/* Run mount(2)-like calls that need a path to a magic link: "self/fd/N" is resolved relative to
 * the caller's /proc by changing the working directory there for the call. */
int procfs_chdir(int *saved_cwd);
void procfs_chdir_back(int saved_cwd);
/* One read of a short file of /proc (path relative to dir_fd: "PID/stat" under /proc) into buf,
 * NUL-terminated: its length, or a negative errno (buf "" then). A file longer than size - 1 is
 * cut there. */
int procfs_read_short(int dir_fd, const char *path, char *buf, size_t size);
/* A process's name (its comm file, path relative to dir_fd: "comm" under an open /proc/PID, or
 * "PID/comm" under /proc) into buf, without its newline; "" and a negative errno when it
 * cannot be read. */
int procfs_read_comm(int dir_fd, const char *path, char *buf, size_t size);
/* The processes a /proc lists now (path relative to dir_fd), in its order (ascending pids):
 * 0 and a malloc'ed array, or a negative errno. */
int procfs_list_pids(int dir_fd, const char *path, pid_t **ret, size_t *ret_n);
/* The pty number of the master open on fd name of the process whose /proc/PID is pid_dir (the
 * tty-index of its fdinfo): 0, or a negative errno (-ENOENT: not a pty master). */
int procfs_master_index(int pid_dir, const char *name, unsigned *ret);
