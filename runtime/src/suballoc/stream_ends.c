/* SPDX-License-Identifier: Apache-2.0 */
/* Keys that end (see stream_ends.h). The tracked stream_lists are an array
 * under one mutex, held across each notification: a stream_lists is
 * untracked (first thing at its destruction) only between notifications.
 * Lock order: this mutex, then the stream_lists' own locks. */
#include <pthread.h>
#include <stdlib.h>

#include "backend.h"
#include "lock.h"
#include "stream_ends.h"

static pthread_mutex_t cmr_tracked_lock = PTHREAD_MUTEX_INITIALIZER;
static cmr_stream_lists **cmr_tracked;
static size_t cmr_tracked_count, cmr_tracked_capacity;

CMR_HOT_THREAD_LOCAL uint64_t cmr_thread_key;
static _Atomic uint64_t cmr_next_thread_key = 1;
static pthread_once_t cmr_thread_exit_once = PTHREAD_ONCE_INIT;
static pthread_key_t cmr_thread_exit;
static bool cmr_thread_exit_made;

cmr_status cmr_stream_ends_track(cmr_stream_lists *lists) {
  cmr_status status = CMR_SUCCESS;
  cmr_mutex_lock(&cmr_tracked_lock);
  if (cmr_tracked_count == cmr_tracked_capacity) {
    size_t capacity = cmr_tracked_capacity ? cmr_tracked_capacity * 2 : 16;
    cmr_stream_lists **grown = realloc(cmr_tracked, capacity * sizeof *grown);
    if (grown != NULL) {
      cmr_tracked = grown;
      cmr_tracked_capacity = capacity;
    } else {
      status = cmr_error(CMR_ERROR_OUT_OF_MEMORY, "no host memory to track a resource's stream lists");
    }
  }
  if (status == CMR_SUCCESS) cmr_tracked[cmr_tracked_count++] = lists;
  cmr_mutex_unlock(&cmr_tracked_lock);
  return status;
}

void cmr_stream_ends_untrack(cmr_stream_lists *lists) {
  cmr_mutex_lock(&cmr_tracked_lock);
  for (size_t i = 0; i < cmr_tracked_count; ++i) {
    if (cmr_tracked[i] == lists) {
      cmr_tracked[i] = cmr_tracked[--cmr_tracked_count];
      break;
    }
  }
  cmr_mutex_unlock(&cmr_tracked_lock);
}

static void cmr_key_ended(uint64_t key, cmr_stream order_on) {
  cmr_mutex_lock(&cmr_tracked_lock);
  for (size_t i = 0; i < cmr_tracked_count; ++i) cmr_stream_lists_key_ended(cmr_tracked[i], key, order_on);
  cmr_mutex_unlock(&cmr_tracked_lock);
}

/* The thread's lists hold blocks freed on the default streams; an event on
 * the legacy default stream comes after work on both (a per-thread default
 * stream synchronizes with it). The key is reset, so a destructor of some
 * other library that allocates after this one gets a new key (and this
 * destructor runs again for it). */
static void cmr_thread_exited(void *key) {
  cmr_thread_key = 0;
  cmr_key_ended((uint64_t)(uintptr_t)key, CMR_DEFAULT_STREAM);
}

static void cmr_make_thread_exit(void) {
  cmr_thread_exit_made = pthread_key_create(&cmr_thread_exit, cmr_thread_exited) == 0;
}

_Static_assert(sizeof(void *) >= sizeof(uint64_t), "a thread's key travels as its thread-specific value");

/* Without a thread-specific slot (none left, no memory) the thread's lists
 * stay until found empty, as a foreign stream's do. */
uint64_t cmr_stream_ends_thread_key(void) {
  cmr_thread_key = CMR_THREAD_KEY_BIT | atomic_fetch_add(&cmr_next_thread_key, 1);
  pthread_once(&cmr_thread_exit_once, cmr_make_thread_exit);
  if (cmr_thread_exit_made) (void)pthread_setspecific(cmr_thread_exit, (void *)(uintptr_t)cmr_thread_key);
  return cmr_thread_key;
}

/* A made stream is keyed by its id in every stream_lists; the event that
 * orders its last frees is recorded on it while it still exists. Without
 * an id (a failed driver call) nobody hears: its lists go once found empty. */
void cmr_stream_ends_stream(cmr_stream stream) {
  uint64_t id = 0;
  if (cmr_backend_stream_kind_of(stream) != CMR_BACKEND_STREAM_MADE) return;
  if (cmr_backend_stream_id(stream, &id) != CMR_SUCCESS) return;
  cmr_key_ended(id, stream);
}

size_t cmr_stream_ends_list_records(void) {
  size_t records = 0;
  cmr_mutex_lock(&cmr_tracked_lock);
  for (size_t i = 0; i < cmr_tracked_count; ++i) records += cmr_stream_lists_records(cmr_tracked[i]);
  cmr_mutex_unlock(&cmr_tracked_lock);
  return records;
}
