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
#include <stddef.h>
#include <time.h>

#include "fork.h"

/* Written by constructors at load, before any thread of the program's. */
static const cmr_fork_part *cmr_fork_parts[CMR_FORK_PARTS];
static _Atomic bool cmr_forked;

bool cmr_fork_is_child(void) { return atomic_load_explicit(&cmr_forked, memory_order_relaxed); }

/* Gives back the parts in [from, to), in reverse order. */
static void cmr_fork_give_range(int from, int to) {
  for (int order = to - 1; order >= from; --order) {
    if (cmr_fork_parts[order] != NULL) cmr_fork_parts[order]->give();
  }
}

/* The outer parts (a try_take each), all or none: a thread holding one of
 * them may be waiting for another (in any order), so none is waited for
 * while another is held. Returns the order after the last outer part taken,
 * or -1 when one was busy (then none is held). */
static int cmr_fork_try_take_outer(void) {
  int order = 0;
  for (; order < CMR_FORK_PARTS; ++order) {
    const cmr_fork_part *part = cmr_fork_parts[order];
    if (part == NULL) continue;
    if (part->try_take == NULL) break;
    if (!part->try_take()) {
      cmr_fork_give_range(0, order);
      return -1;
    }
  }
  return order;
}

/* Until the outer parts are free at once: yields first, then sleeps a
 * little between tries (their holders keep them for a call, not for long). */
static int cmr_fork_take_outer(void) {
  int after;
  for (unsigned attempt = 0; (after = cmr_fork_try_take_outer()) < 0; ++attempt) {
    if (attempt < 64) {
      sched_yield();
    } else {
      struct timespec pause = {0, 100 * 1000};
      nanosleep(&pause, NULL);
    }
  }
  return after;
}

static void cmr_fork_prepare(void) {
  for (int order = cmr_fork_take_outer(); order < CMR_FORK_PARTS; ++order) {
    if (cmr_fork_parts[order] != NULL) cmr_fork_parts[order]->take();
  }
}

static void cmr_fork_parent(void) { cmr_fork_give_range(0, CMR_FORK_PARTS); }

/* Resets run while the parts are still held: nothing can see a table half
 * reset (the child has one thread, but a handler of another library may
 * call cmr). */
static void cmr_fork_child(void) {
  atomic_store_explicit(&cmr_forked, true, memory_order_relaxed);
  for (int order = 0; order < CMR_FORK_PARTS; ++order) {
    const cmr_fork_part *part = cmr_fork_parts[order];
    if (part != NULL && part->child != NULL) part->child();
  }
  cmr_fork_give_range(0, CMR_FORK_PARTS);
}

/* If registering fails (no memory for the handlers, at load), a fork works
 * as it would without them. */
void cmr_fork_add(cmr_fork_order order, const cmr_fork_part *part) {
  static bool registered;
  if (!registered) {
    registered = true;
    (void)pthread_atfork(cmr_fork_prepare, cmr_fork_parent, cmr_fork_child);
  }
  cmr_fork_parts[order] = part;
}
