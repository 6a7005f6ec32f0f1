/* SPDX-License-Identifier: Apache-2.0 */
/* The fork handlers (fork.h says what they take, and in which order). They
 * are registered when the library is loaded, so a fork at any time finds
 * them; a fork from inside a cmr call (a callback resource's function, the
 * blocking hook) is not supported: the forking thread may hold a lock the
 * handlers wait for. Nor does a fork end while another thread holds one of
 * the locks it takes and waits, directly or not, for something the forking
 * thread holds, such as Python's GIL: a stream's end, heard under the
 * tracked lists' lock, waits for a pool's growth lock, which a third thread
 * may hold across a call of a Python callback upstream. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "fork.h"

static _Atomic bool cmr_forked;

bool cmr_fork_is_child(void) { return atomic_load_explicit(&cmr_forked, memory_order_relaxed); }

/* The locks that may be held across others, all or none: a thread holding
 * one of them may be waiting for another (in any order), so none is waited
 * for while another is held. */
static bool cmr_fork_try_take_outer(void) {
  if (!cmr_per_device_fork_try_take()) return false;
  if (cmr_stream_ends_fork_try_take()) {
    if (cmr_topology_fork_try_take()) return true;
    cmr_stream_ends_fork_give();
  }
  cmr_per_device_fork_give();
  return false;
}

static void cmr_fork_give_outer(void) {
  cmr_topology_fork_give();
  cmr_stream_ends_fork_give();
  cmr_per_device_fork_give();
}

/* Until all three are free at once: yields first, then sleeps a little
 * between tries (their holders keep them for a call, not for long). */
static void cmr_fork_take_outer(void) {
  for (unsigned attempt = 0; !cmr_fork_try_take_outer(); ++attempt) {
    if (attempt < 64) {
      sched_yield();
    } else {
      struct timespec pause = {0, 100 * 1000};
      nanosleep(&pause, NULL);
    }
  }
}

static void cmr_fork_prepare(void) {
  cmr_fork_take_outer();
  cmr_ledgers_fork_take();
  cmr_live_streams_fork_take();
#if CMR_WITH_CUDA
  cmr_stream_ids_fork_take();
#endif
  cmr_objects_fork_take();
  cmr_log_fork_take();
}

static void cmr_fork_give_all(void) {
  cmr_log_fork_give();
  cmr_objects_fork_give();
#if CMR_WITH_CUDA
  cmr_stream_ids_fork_give();
#endif
  cmr_live_streams_fork_give();
  cmr_ledgers_fork_give();
  cmr_fork_give_outer();
}

static void cmr_fork_parent(void) { cmr_fork_give_all(); }

/* Resets run while the locks are still held: nothing can see a table half
 * reset (the child has one thread, but a handler of another library may
 * call cmr). */
static void cmr_fork_child(void) {
  atomic_store_explicit(&cmr_forked, true, memory_order_relaxed);
  cmr_per_device_fork_child();
  cmr_stream_ends_fork_child();
  cmr_live_streams_fork_child();
#if CMR_WITH_CUDA
  cmr_stream_ids_fork_child();
#endif
  cmr_objects_fork_child();
  cmr_fork_give_all();
}

/* If registering fails (no memory for the handlers, at load), a fork works
 * as it would without them. */
__attribute__((constructor)) static void cmr_fork_register(void) {
  (void)pthread_atfork(cmr_fork_prepare, cmr_fork_parent, cmr_fork_child);
}
