/* SPDX-License-Identifier: Apache-2.0 */
/* What happens at fork (fork.c): the handlers that make a child of a
 * process with threads inside cmr usable, and the pieces of the runtime
 * each one calls. A process-wide lock of the runtime is listed here, and
 * fork.c takes it before fork, in the order below, and gives it back
 * after, in the parent and in the child (whose one thread is the one that
 * took it). The child then resets what held the parent's objects: every
 * object and handle alive at the fork is the parent's (object.h), and its
 * tables start without them.
 *
 * The order, outermost first. The first three may be held across calls
 * that take other locks (making the default resource, ending a stream's
 * lists, a cycle check), so they are taken by trying, all three or none;
 * the others are held only for a few instructions that take no lock but
 * the log's, so they are waited for:
 *   per-device table, tracked stream lists, topology,
 *   shared ledgers, live streams, stream ids (CUDA build), slot table, log, local time. */
#ifndef CMR_FORK_H
#define CMR_FORK_H

#include <stdbool.h>

/* Whether this process is a child forked from a process that had loaded
 * cmr (then objects made before the fork are the parent's). */
bool cmr_fork_is_child(void);

bool cmr_per_device_fork_try_take(void);
void cmr_per_device_fork_give(void);
void cmr_per_device_fork_child(void); /* the table starts empty */

bool cmr_stream_ends_fork_try_take(void);
void cmr_stream_ends_fork_give(void);
void cmr_stream_ends_fork_child(void); /* no stream lists tracked */

bool cmr_topology_fork_try_take(void);
void cmr_topology_fork_give(void);

void cmr_ledgers_fork_take(void);
void cmr_ledgers_fork_give(void);

void cmr_live_streams_fork_take(void);
void cmr_live_streams_fork_give(void);
void cmr_live_streams_fork_child(void); /* the live streams become the parent's */

#if CMR_WITH_CUDA
void cmr_stream_ids_fork_take(void);
void cmr_stream_ids_fork_give(void);
void cmr_stream_ids_fork_child(void); /* no stream known */
#endif

void cmr_objects_fork_take(void);
void cmr_objects_fork_give(void);
void cmr_objects_fork_child(void); /* the live slots become the parent's */

void cmr_log_fork_take(void);
void cmr_log_fork_give(void);

#endif /* CMR_FORK_H */
