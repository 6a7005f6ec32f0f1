/* SPDX-License-Identifier: Apache-2.0 */
/* What happens at fork (fork.c): handlers that make a child of a process
 * with threads inside cmr usable. Each process-wide lock of the runtime is
 * a part, added by the file that owns it (CMR_FORK_PART, at load): the
 * handlers take every part before the fork, in the order below, and give
 * them back after it, in the parent and in the child (whose one thread is
 * the one that took them); in the child they first reset what held the
 * parent's objects: every object and handle alive at the fork is the
 * parent's (object.h), and the tables start without them. A file that is
 * not linked has no lock to take, so a static link takes what it uses.
 *
 * The order, outermost first. The first three may be held across calls
 * that take other locks (making the default resource, ending a stream's
 * lists, a cycle check), so they are taken by trying, all three or none;
 * the others are held only for a few instructions that take no lock but
 * the log's, so they are waited for. */
#ifndef CMR_FORK_H
#define CMR_FORK_H

#include <stdbool.h>

typedef enum cmr_fork_order {
  CMR_FORK_PER_DEVICE,   /* the per-device table: starts empty in the child */
  CMR_FORK_STREAM_ENDS,  /* the tracked stream lists: none tracked in the child */
  CMR_FORK_TOPOLOGY,     /* the topology lock */
  CMR_FORK_LEDGERS,      /* the shared ledgers' shards */
  CMR_FORK_LIVE_STREAMS, /* the live streams: the parent's in the child */
  CMR_FORK_STREAM_IDS,   /* the made streams' ids (CUDA build): none known in the child */
  CMR_FORK_OBJECTS,      /* the slot table: the live slots become the parent's */
  CMR_FORK_HISTORY,      /* the history's control lock: the child starts without a history */
  CMR_FORK_LOG,          /* the log's sink and the local-time lock */
  CMR_FORK_PARTS
} cmr_fork_order;

/* A part: try_take for an outer lock (taken all or none, by trying), else
 * take (which waits); give; child (or NULL), run in the child while every
 * part is still held. */
typedef struct cmr_fork_part {
  bool (*try_take)(void);
  void (*take)(void);
  void (*give)(void);
  void (*child)(void);
} cmr_fork_part;

/* Adds `part` at `order` (once each); the first call registers the handlers. */
void cmr_fork_add(cmr_fork_order order, const cmr_fork_part *part);

/* Adds this file's part when the library is loaded. */
#define CMR_FORK_PART(order, ...)                                         \
  static const cmr_fork_part cmr_fork_part_of_this_file = {__VA_ARGS__};  \
  __attribute__((constructor)) static void cmr_fork_add_this_file(void) { \
    cmr_fork_add(order, &cmr_fork_part_of_this_file);                     \
  }

/* Whether this process is a child forked from a process that had loaded
 * cmr (then objects made before the fork are the parent's). */
bool cmr_fork_is_child(void);

#endif /* CMR_FORK_H */
