/* Counted objects: an atomic reference count, a magic that says whether the
 * object is alive, and a bounded quarantine of released shells so that a use
 * soon after the last release reads the poison instead of reused memory. */
#include <pthread.h>
#include <stdlib.h>

#include "internal.h"

#define CMR_MAGIC_POISONED 0xdeadc0deu

enum { CMR_QUARANTINE_CAPACITY = 4096 };

/* A FIFO ring of released shells. Once closed (at process exit) shells are
 * freed at once. */
static struct {
  pthread_mutex_t lock;
  cmr_object *shells[CMR_QUARANTINE_CAPACITY];
  size_t oldest;
  size_t count;
  bool closed;
} cmr_quarantine = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Keep `shell`; returns the shell to free now (the evicted oldest, or `shell`
 * itself after close), or NULL. */
static cmr_object *cmr_quarantine_push(cmr_object *shell) {
  cmr_object *evicted = NULL;
  pthread_mutex_lock(&cmr_quarantine.lock);
  if (cmr_quarantine.closed) {
    evicted = shell;
  } else {
    if (cmr_quarantine.count == CMR_QUARANTINE_CAPACITY) {
      evicted = cmr_quarantine.shells[cmr_quarantine.oldest];
      cmr_quarantine.oldest = (cmr_quarantine.oldest + 1) % CMR_QUARANTINE_CAPACITY;
      cmr_quarantine.count--;
    }
    size_t slot = (cmr_quarantine.oldest + cmr_quarantine.count) % CMR_QUARANTINE_CAPACITY;
    cmr_quarantine.shells[slot] = shell;
    cmr_quarantine.count++;
  }
  pthread_mutex_unlock(&cmr_quarantine.lock);
  return evicted;
}

/* Runs after the other runtime destructors (lower priority numbers run later
 * at exit), so shells released by them are freed too. */
__attribute__((destructor(101))) static void cmr_quarantine_drain(void) {
  pthread_mutex_lock(&cmr_quarantine.lock);
  for (size_t i = 0; i < cmr_quarantine.count; i++) {
    free(cmr_quarantine.shells[(cmr_quarantine.oldest + i) % CMR_QUARANTINE_CAPACITY]);
  }
  cmr_quarantine.count = 0;
  cmr_quarantine.closed = true;
  pthread_mutex_unlock(&cmr_quarantine.lock);
}

void cmr_object_init(cmr_object *object, void (*finalize)(cmr_object *object)) {
  atomic_init(&object->references, 1);
  object->finalize = finalize;
  atomic_store_explicit(&object->magic, CMR_MAGIC_LIVE, memory_order_release);
}

cmr_status cmr_object_check(const cmr_object *object, const char *what) {
  if (object == NULL) {
    return cmr_error(CMR_ERROR_NULL_POINTER, "%s: handle is NULL", what);
  }
  uint32_t magic = atomic_load_explicit(&object->magic, memory_order_acquire);
  if (magic == CMR_MAGIC_LIVE) {
    return CMR_SUCCESS;
  }
  if (magic == CMR_MAGIC_POISONED) {
    return cmr_error(CMR_ERROR_DESTROYED_HANDLE, "%s: handle %p was already destroyed", what,
                     (const void *)object);
  }
  return cmr_error(CMR_ERROR_DESTROYED_HANDLE, "%s: handle %p is not a live cmr handle", what,
                   (const void *)object);
}

void cmr_object_retain(cmr_object *object) {
  /* Never bring a released object back: a count of 0 stays 0. */
  uint32_t count = atomic_load_explicit(&object->references, memory_order_relaxed);
  while (count != 0 && !atomic_compare_exchange_weak_explicit(&object->references, &count, count + 1,
                                                              memory_order_relaxed,
                                                              memory_order_relaxed)) {
  }
}

void cmr_object_release(cmr_object *object) {
  uint32_t count = atomic_load_explicit(&object->references, memory_order_relaxed);
  do {
    if (count == 0) {
      return; /* already released: finalize ran once, never again */
    }
  } while (!atomic_compare_exchange_weak_explicit(&object->references, &count, count - 1,
                                                  memory_order_acq_rel, memory_order_relaxed));
  if (count != 1) {
    return;
  }
  if (object->finalize != NULL) {
    object->finalize(object);
  }
  atomic_store_explicit(&object->magic, CMR_MAGIC_POISONED, memory_order_release);
  free(cmr_quarantine_push(object));
}
