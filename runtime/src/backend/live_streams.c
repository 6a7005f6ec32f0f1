/* SPDX-License-Identifier: Apache-2.0 */
/* The live streams (see live_streams.h): a sorted array of handles under a
 * mutex, searched by bisection. Creating and destroying a stream are rare
 * next to allocations, and no allocation or free looks here. In a child
 * (fork.h) the parent's streams stay in the array with their lowest bit
 * set (handles are aligned addresses or host tokens, whose low bits are
 * clear), which keeps it sorted: a parent's entry sorts right after the
 * handle it marks. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fork.h"
#include "internal.h"
#include "live_streams.h"
#include "lock.h"

static struct {
  pthread_mutex_t lock;
  uintptr_t *handles; /* ascending */
  size_t count;
  size_t capacity;
} cmr_live = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0};

/* Where `handle` is, or would be inserted, in the sorted handles. The lock held. */
static size_t cmr_live_position(uintptr_t handle) {
  size_t low = 0, high = cmr_live.count;
  while (low < high) {
    size_t middle = low + (high - low) / 2;
    if (cmr_live.handles[middle] < handle) {
      low = middle + 1;
    } else {
      high = middle;
    }
  }
  return low;
}

static const uintptr_t cmr_parents_bit = 1;

static bool cmr_live_at(size_t position, uintptr_t handle) {
  return position < cmr_live.count && cmr_live.handles[position] == handle;
}

/* Takes out the entry at `position`. The lock held. */
static void cmr_live_take_out(size_t position) {
  cmr_live.count--;
  memmove(cmr_live.handles + position, cmr_live.handles + position + 1,
          (cmr_live.count - position) * sizeof *cmr_live.handles);
  if (cmr_live.count == 0) { /* nothing kept once every stream is gone */
    free(cmr_live.handles);
    cmr_live.handles = NULL;
    cmr_live.capacity = 0;
  }
}

cmr_status cmr_live_streams_add(cmr_stream stream) {
  uintptr_t handle = (uintptr_t)stream;
  cmr_status status = CMR_SUCCESS;
  cmr_mutex_lock(&cmr_live.lock);
  size_t position = cmr_live_position(handle);
  if (cmr_live_at(position, handle | cmr_parents_bit)) {
    cmr_live.handles[position] = handle; /* the parent's stream of that handle is forgotten */
  } else if (!cmr_live_at(position, handle)) {
    if (cmr_live.count == cmr_live.capacity) {
      size_t capacity = cmr_live.capacity ? cmr_live.capacity * 2 : 16;
      uintptr_t *grown = realloc(cmr_live.handles, capacity * sizeof *grown);
      if (grown != NULL) {
        cmr_live.handles = grown;
        cmr_live.capacity = capacity;
      }
    }
    if (cmr_live.count < cmr_live.capacity) {
      memmove(cmr_live.handles + position + 1, cmr_live.handles + position,
              (cmr_live.count - position) * sizeof *cmr_live.handles);
      cmr_live.handles[position] = handle;
      cmr_live.count++;
    } else {
      status = cmr_error(CMR_ERROR_OUT_OF_MEMORY, "no host memory to record stream %p", (void *)stream);
    }
  }
  cmr_mutex_unlock(&cmr_live.lock);
  return status;
}

/* Whether `handle` is in the set (taken out when `take`), under its lock. */
static bool cmr_live_find(uintptr_t handle, bool take) {
  cmr_mutex_lock(&cmr_live.lock);
  size_t position = cmr_live_position(handle);
  bool found = cmr_live_at(position, handle);
  if (found && take) cmr_live_take_out(position);
  cmr_mutex_unlock(&cmr_live.lock);
  return found;
}

bool cmr_live_streams_remove(cmr_stream stream) { return cmr_live_find((uintptr_t)stream, true); }

/* A stream the parent made, looked up in a forked child: its entry carries
 * the parents' bit. */
static bool cmr_live_find_parents(cmr_stream stream, bool take) {
  uintptr_t handle = (uintptr_t)stream;
  if (!cmr_fork_is_child() || (handle & cmr_parents_bit) != 0) return false;
  return cmr_live_find(handle | cmr_parents_bit, take);
}

bool cmr_live_streams_forget_parents(cmr_stream stream) { return cmr_live_find_parents(stream, true); }

bool cmr_live_streams_parents(cmr_stream stream) { return cmr_live_find_parents(stream, false); }

bool cmr_live_streams_contains(cmr_stream stream) { return cmr_live_find((uintptr_t)stream, false); }

/* ---- fork (fork.h) ------------------------------------------------------------ */

static void cmr_live_streams_fork_take(void) { cmr_mutex_lock(&cmr_live.lock); }

static void cmr_live_streams_fork_give(void) { cmr_mutex_unlock(&cmr_live.lock); }

static void cmr_live_streams_fork_child(void) {
  for (size_t i = 0; i < cmr_live.count; ++i) cmr_live.handles[i] |= cmr_parents_bit;
}

CMR_FORK_PART(CMR_FORK_LIVE_STREAMS, NULL, cmr_live_streams_fork_take, cmr_live_streams_fork_give,
              cmr_live_streams_fork_child)
