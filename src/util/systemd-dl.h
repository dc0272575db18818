/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libsystemd and libudev, loaded when first needed instead of at every start: the daemon needs
 * them (its event loop, sd_notify(), udev's monitor), a one-shot command at most to journal
 * what repair did. Linked at start, the two libraries and the six they pull in (libgcrypt,
 * liblzma, libzstd, liblz4, libcap, libgpg-error) cost every `ptsguard audit` about 70 page
 * faults and the dynamic linker's work, and a host without them could not run the audit.
 *
 * Include this header instead of <systemd/...> and <libudev.h>: the calls below go through
 * pointers that systemd_dl_load() fills, under the libraries' own names. Calling one before a
 * successful systemd_dl_load() is a bug (a NULL pointer).
 */
#pragma once

#include <libudev.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <systemd/sd-journal.h>

/* X(library, function) for every function ptsguard calls. */
#define SYSTEMD_DL_FUNCTIONS(X)                                                                    \
	X(SYSTEMD, sd_event_add_io)                                                                \
	X(SYSTEMD, sd_event_add_signal)                                                            \
	X(SYSTEMD, sd_event_add_time)                                                              \
	X(SYSTEMD, sd_event_exit)                                                                  \
	X(SYSTEMD, sd_event_loop)                                                                  \
	X(SYSTEMD, sd_event_new)                                                                   \
	X(SYSTEMD, sd_event_ref)                                                                   \
	X(SYSTEMD, sd_event_set_watchdog)                                                          \
	X(SYSTEMD, sd_event_source_disable_unref)                                                  \
	X(SYSTEMD, sd_event_source_get_enabled)                                                    \
	X(SYSTEMD, sd_event_source_get_event)                                                      \
	X(SYSTEMD, sd_event_source_get_io_fd)                                                      \
	X(SYSTEMD, sd_event_source_get_time)                                                       \
	X(SYSTEMD, sd_event_source_set_description)                                                \
	X(SYSTEMD, sd_event_source_set_enabled)                                                    \
	X(SYSTEMD, sd_event_source_set_io_events)                                                  \
	X(SYSTEMD, sd_event_source_set_io_fd)                                                      \
	X(SYSTEMD, sd_event_source_set_prepare)                                                    \
	X(SYSTEMD, sd_event_source_set_time)                                                       \
	X(SYSTEMD, sd_event_source_set_time_accuracy)                                              \
	X(SYSTEMD, sd_event_unref)                                                                 \
	X(SYSTEMD, sd_journal_sendv_with_location)                                                 \
	X(SYSTEMD, sd_notify)                                                                      \
	X(SYSTEMD, sd_notifyf)                                                                     \
	X(SYSTEMD, sd_watchdog_enabled)                                                            \
	X(UDEV, udev_device_get_action)                                                            \
	X(UDEV, udev_device_get_seqnum)                                                            \
	X(UDEV, udev_device_get_subsystem)                                                         \
	X(UDEV, udev_device_get_sysname)                                                           \
	X(UDEV, udev_device_unref)                                                                 \
	X(UDEV, udev_monitor_enable_receiving)                                                     \
	X(UDEV, udev_monitor_filter_add_match_subsystem_devtype)                                   \
	X(UDEV, udev_monitor_get_fd)                                                               \
	X(UDEV, udev_monitor_new_from_netlink)                                                     \
	X(UDEV, udev_monitor_receive_device)                                                       \
	X(UDEV, udev_monitor_set_receive_buffer_size)                                              \
	X(UDEV, udev_monitor_unref)                                                                \
	X(UDEV, udev_new)                                                                          \
	X(UDEV, udev_unref)

#define SYSTEMD_DL_DECLARE(lib, name) extern __typeof__(name) *systemd_dl_##name;
SYSTEMD_DL_FUNCTIONS(SYSTEMD_DL_DECLARE)
#undef SYSTEMD_DL_DECLARE

/* Load both libraries and every function above, once (later calls answer as the first did).
 * 0, or -ELIBACC with *error (static, may be NULL) saying which library or function is
 * missing. */
int systemd_dl_load(const char **error);

#ifndef SYSTEMD_DL_NO_REDIRECT
#define sd_event_add_io			  (*systemd_dl_sd_event_add_io)
#define sd_event_add_signal		  (*systemd_dl_sd_event_add_signal)
#define sd_event_add_time		  (*systemd_dl_sd_event_add_time)
#define sd_event_exit			  (*systemd_dl_sd_event_exit)
#define sd_event_loop			  (*systemd_dl_sd_event_loop)
#define sd_event_new			  (*systemd_dl_sd_event_new)
#define sd_event_ref			  (*systemd_dl_sd_event_ref)
#define sd_event_set_watchdog		  (*systemd_dl_sd_event_set_watchdog)
#define sd_event_source_disable_unref	  (*systemd_dl_sd_event_source_disable_unref)
#define sd_event_source_get_enabled	  (*systemd_dl_sd_event_source_get_enabled)
#define sd_event_source_get_event	  (*systemd_dl_sd_event_source_get_event)
#define sd_event_source_get_io_fd	  (*systemd_dl_sd_event_source_get_io_fd)
#define sd_event_source_get_time	  (*systemd_dl_sd_event_source_get_time)
#define sd_event_source_set_description	  (*systemd_dl_sd_event_source_set_description)
#define sd_event_source_set_enabled	  (*systemd_dl_sd_event_source_set_enabled)
#define sd_event_source_set_io_events	  (*systemd_dl_sd_event_source_set_io_events)
#define sd_event_source_set_io_fd	  (*systemd_dl_sd_event_source_set_io_fd)
#define sd_event_source_set_prepare	  (*systemd_dl_sd_event_source_set_prepare)
#define sd_event_source_set_time	  (*systemd_dl_sd_event_source_set_time)
#define sd_event_source_set_time_accuracy (*systemd_dl_sd_event_source_set_time_accuracy)
#define sd_event_unref			  (*systemd_dl_sd_event_unref)
#define sd_journal_sendv_with_location	  (*systemd_dl_sd_journal_sendv_with_location)
#define sd_notify			  (*systemd_dl_sd_notify)
#define sd_notifyf			  (*systemd_dl_sd_notifyf)
#define sd_watchdog_enabled		  (*systemd_dl_sd_watchdog_enabled)
#define udev_device_get_action		  (*systemd_dl_udev_device_get_action)
#define udev_device_get_seqnum		  (*systemd_dl_udev_device_get_seqnum)
#define udev_device_get_subsystem	  (*systemd_dl_udev_device_get_subsystem)
#define udev_device_get_sysname		  (*systemd_dl_udev_device_get_sysname)
#define udev_device_unref		  (*systemd_dl_udev_device_unref)
#define udev_monitor_enable_receiving	  (*systemd_dl_udev_monitor_enable_receiving)
#define udev_monitor_filter_add_match_subsystem_devtype                                            \
	(*systemd_dl_udev_monitor_filter_add_match_subsystem_devtype)
#define udev_monitor_get_fd		     (*systemd_dl_udev_monitor_get_fd)
#define udev_monitor_new_from_netlink	     (*systemd_dl_udev_monitor_new_from_netlink)
#define udev_monitor_receive_device	     (*systemd_dl_udev_monitor_receive_device)
#define udev_monitor_set_receive_buffer_size (*systemd_dl_udev_monitor_set_receive_buffer_size)
#define udev_monitor_unref		     (*systemd_dl_udev_monitor_unref)
#define udev_new			     (*systemd_dl_udev_new)
#define udev_unref			     (*systemd_dl_udev_unref)
#endif
