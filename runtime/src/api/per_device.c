/* SPDX-License-Identifier: Apache-2.0 */
/* The per-device resource table: one ref per device, retained while stored,
 * made lazily from the plain resource of the build when never set. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "backend.h"
#include "fork.h"
#include "internal.h"
#include "lock.h"

static struct {
  pthread_mutex_t lock;
  cmr_resource_ref *entries; /* ops == NULL: empty */
  int count;
} cmr_table = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The entries are also read without the lock (cmr_take_entry_unlocked, on
 * every call of PyTorch's entry points): a writer, holding the lock, makes
 * the sequence odd while it stores an entry's two words, and a reader that
 * saw it odd or moved takes its read again. Entries are stored and loaded
 * atomically, word by word; the table's array, once made, stays. Half the
 * sequence is cmr_per_device_resource_changes: one store per change, whose
 * end is the count's step, so a reader that sees the count it saw before
 * its own read of an entry knows that entry is still the table's. */
static _Atomic size_t cmr_table_sequence;

static void cmr_entry_store(int device, cmr_resource_ref ref) {
  size_t sequence = atomic_load_explicit(&cmr_table_sequence, memory_order_relaxed);
  atomic_store_explicit(&cmr_table_sequence, sequence + 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  __atomic_store_n(&cmr_table.entries[device].ops, ref.ops, __ATOMIC_RELAXED);
  __atomic_store_n(&cmr_table.entries[device].self, ref.self, __ATOMIC_RELAXED);
  atomic_store_explicit(&cmr_table_sequence, sequence + 2, memory_order_release);
}

/* A share of `device`'s entry taken without the lock: false when there is
 * no table or entry yet, the entry is not a counted cmr resource (a
 * foreign one's retain is its own), or it kept changing: the locked way
 * then. An entry replaced meanwhile whose resource is still alive is
 * taken: the call is ordered before the replacement. */
static bool cmr_take_entry_unlocked(int device, cmr_resource_ref *out) {
  cmr_resource_ref *entries = __atomic_load_n(&cmr_table.entries, __ATOMIC_ACQUIRE);
  if (entries == NULL || device < 0 || device >= __atomic_load_n(&cmr_table.count, __ATOMIC_RELAXED)) return false;
  for (int tries = 0; tries < 4; ++tries) {
    size_t before = atomic_load_explicit(&cmr_table_sequence, memory_order_acquire);
    cmr_resource_ref ref = {.ops = __atomic_load_n(&entries[device].ops, __ATOMIC_RELAXED),
                            .self = __atomic_load_n(&entries[device].self, __ATOMIC_RELAXED)};
    atomic_thread_fence(memory_order_acquire);
    if ((before & 1) != 0 || atomic_load_explicit(&cmr_table_sequence, memory_order_relaxed) != before) continue;
    if (ref.ops == NULL || !(ref.ops->flags & CMR_OPS_FLAG_COUNTED)) return false;
    if (cmr_object_try_retain(ref.self)) {
      *out = ref;
      return true;
    }
  }
  return false;
}

size_t cmr_per_device_resource_changes(void) {
  return atomic_load_explicit(&cmr_table_sequence, memory_order_acquire) / 2;
}

/* Sizes the table on first use. Call with the lock held. */
static cmr_status cmr_table_ensure(const char *what) {
  if (cmr_table.entries != NULL) {
    return CMR_SUCCESS;
  }
  int count = 0;
  cmr_status status = cmr_backend_device_count(&count);
  if (status != CMR_SUCCESS) {
    return cmr_error_context(status, "%s", what);
  }
  cmr_resource_ref *entries = calloc((size_t)count, sizeof *entries);
  if (entries == NULL) {
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "%s: no memory for a table of %d devices", what, count);
  }
  __atomic_store_n(&cmr_table.count, count, __ATOMIC_RELAXED);
  __atomic_store_n(&cmr_table.entries, entries, __ATOMIC_RELEASE); /* after the count: unlocked readers */
  return CMR_SUCCESS;
}

/* Sizes the table and checks `device`. Call with the lock held. */
static cmr_status cmr_table_check_device(int device, const char *what) {
  cmr_status status = cmr_table_ensure(what);
  if (status == CMR_SUCCESS && (device < 0 || device >= cmr_table.count)) {
    status = cmr_error(CMR_ERROR_UNKNOWN_DEVICE, "%s: device %d is not in [0, %d)", what, device, cmr_table.count);
  }
  return status;
}

/* The resource CMR_RESOURCE describes, with the one share the table keeps
 * (the stack's own shares go: the top holds what it stands on). */
static cmr_status cmr_make_from_environment(const char *expression, cmr_resource_ref *out) {
  cmr_stack *stack = NULL;
  cmr_status status = cmr_stack_parse(expression, &stack);
  if (status != CMR_SUCCESS) return cmr_error_context(status, "CMR_RESOURCE=\"%s\"", expression);
  status = cmr_stack_ref(stack, out);
  if (status == CMR_SUCCESS) status = cmr_ref_hold(*out, "CMR_RESOURCE");
  cmr_stack_destroy(stack);
  return status;
}

/* The default resource: CMR_RESOURCE's stack when the variable is set, else
 * the plain resource of the build; with the one share the table keeps. The
 * current device is the one the entry is for while it is made. */
static cmr_status cmr_make_default(cmr_resource_ref *out) {
  const char *expression = getenv("CMR_RESOURCE");
  if (expression != NULL && expression[0] != '\0') return cmr_make_from_environment(expression, out);
#if CMR_WITH_CUDA
  cmr_cuda_resource *resource = NULL;
  cmr_status status = cmr_cuda_resource_create(&resource);
  if (status == CMR_SUCCESS) {
    *out = cmr_cuda_resource_ref(resource);
  }
#else
  cmr_system_resource *resource = NULL;
  cmr_status status = cmr_system_resource_create(&resource);
  if (status == CMR_SUCCESS) {
    *out = cmr_system_resource_ref(resource);
  }
#endif
  /* The handle's share becomes the table's. */
  return status == CMR_SUCCESS ? cmr_handle_hand_over(resource, "the default resource") : status;
}

/* Makes the default of `device` on that device, then restores the current one. */
static cmr_status cmr_make_default_on(int device, cmr_resource_ref *out, const char *what) {
  int current = 0;
  cmr_status status = cmr_backend_get_device(&current);
  if (status == CMR_SUCCESS && current != device) {
    status = cmr_backend_set_device(device);
  }
  if (status == CMR_SUCCESS) {
    status = cmr_make_default(out);
    if (current != device) {
      cmr_status restored = cmr_backend_set_device(current);
      if (status == CMR_SUCCESS && restored != CMR_SUCCESS) {
        cmr_ref_drop(*out);
        status = restored;
      }
    }
  }
  if (status != CMR_SUCCESS) {
    return cmr_error_context(status, "%s: making the default resource of device %d", what, device);
  }
  return CMR_SUCCESS;
}

/* The log's name for what an entry holds. */
static const char *cmr_entry_name(cmr_resource_ref ref) {
  const char *name = "nothing (reset: the default is made at the next get)";
  if (ref.ops != NULL && cmr_ref_type_name(ref, &name) != CMR_SUCCESS) name = "an unnamed resource";
  return name;
}

/* The entry of `device` (made first if empty); with `share`, a share of it
 * taken while the table still holds its own, so no replacement can come
 * between reading the entry and retaining it. */
static cmr_status cmr_get_as(int device, bool share, cmr_resource_ref *out, const char *what) {
  if (out == NULL) {
    return cmr_error(CMR_ERROR_NULL_POINTER, "%s: out is NULL", what);
  }
  *out = (cmr_resource_ref){0};
  if (share && cmr_take_entry_unlocked(device, out)) return CMR_SUCCESS;
  cmr_mutex_lock(&cmr_table.lock);
  cmr_status status = cmr_table_check_device(device, what);
  if (status == CMR_SUCCESS && cmr_table.entries[device].ops == NULL) {
    cmr_resource_ref made = {0};
    status = cmr_make_default_on(device, &made, what);
    if (status == CMR_SUCCESS) {
      cmr_entry_store(device, made);
      cmr_log(CMR_LOG_DEBUG, "%s: device %d: default resource made: %s", what, device,
              cmr_entry_name(cmr_table.entries[device]));
    }
  }
  if (status == CMR_SUCCESS && share) {
    status = cmr_ref_hold(cmr_table.entries[device], what);
  }
  if (status == CMR_SUCCESS) {
    *out = cmr_table.entries[device];
  }
  cmr_mutex_unlock(&cmr_table.lock);
  return status;
}

/* Stores `ref` (ops == NULL: empties the entry) and drops what was there. */
static cmr_status cmr_replace_as(int device, cmr_resource_ref ref, const char *what) {
  cmr_resource_ref old = {0};
  cmr_mutex_lock(&cmr_table.lock);
  cmr_status status = cmr_table_check_device(device, what);
  if (status == CMR_SUCCESS) {
    if (ref.ops != NULL) {
      status = cmr_ref_hold(ref, what);
    }
  }
  if (status == CMR_SUCCESS) {
    old = cmr_table.entries[device];
    cmr_entry_store(device, ref);
    cmr_log(CMR_LOG_DEBUG, "%s: device %d: %s in place of %s", what, device, cmr_entry_name(ref), cmr_entry_name(old));
  }
  cmr_mutex_unlock(&cmr_table.lock);
  /* Outside the lock: the last release may run arbitrary finalizers. */
  if (old.ops != NULL) {
    cmr_ref_drop(old);
  }
  return status;
}

static cmr_status cmr_set_as(int device, cmr_resource_ref ref, const char *what) {
  cmr_status status = cmr_ref_check(ref, what);
  if (status != CMR_SUCCESS) {
    return status;
  }
  return cmr_replace_as(device, ref, what);
}

static cmr_status cmr_current_as(int *device, const char *what) {
  cmr_status status = cmr_backend_get_device(device);
  if (status != CMR_SUCCESS) {
    return cmr_error_context(status, "%s", what);
  }
  return CMR_SUCCESS;
}

cmr_status cmr_get_per_device_resource_ref(int device, cmr_resource_ref *out) {
  return cmr_get_as(device, false, out, "cmr_get_per_device_resource_ref");
}

cmr_status cmr_acquire_per_device_resource_ref(int device, cmr_resource_ref *out) {
  return cmr_get_as(device, true, out, "cmr_acquire_per_device_resource_ref");
}

cmr_status cmr_set_per_device_resource_ref(int device, cmr_resource_ref ref) {
  return cmr_set_as(device, ref, "cmr_set_per_device_resource_ref");
}

cmr_status cmr_reset_per_device_resource_ref(int device) {
  return cmr_replace_as(device, (cmr_resource_ref){0}, "cmr_reset_per_device_resource_ref");
}

static cmr_status cmr_get_current_as(bool share, cmr_resource_ref *out, const char *what) {
  if (out == NULL) {
    return cmr_error(CMR_ERROR_NULL_POINTER, "%s: out is NULL", what);
  }
  *out = (cmr_resource_ref){0};
  int device = 0;
  cmr_status status = cmr_current_as(&device, what);
  return status != CMR_SUCCESS ? status : cmr_get_as(device, share, out, what);
}

cmr_status cmr_get_current_device_resource_ref(cmr_resource_ref *out) {
  return cmr_get_current_as(false, out, "cmr_get_current_device_resource_ref");
}

cmr_status cmr_acquire_current_device_resource_ref(cmr_resource_ref *out) {
  return cmr_get_current_as(true, out, "cmr_acquire_current_device_resource_ref");
}

cmr_status cmr_set_current_device_resource_ref(cmr_resource_ref ref) {
  static const char what[] = "cmr_set_current_device_resource_ref";
  int device = 0;
  cmr_status status = cmr_current_as(&device, what);
  return status != CMR_SUCCESS ? status : cmr_set_as(device, ref, what);
}

cmr_status cmr_reset_current_device_resource_ref(void) {
  static const char what[] = "cmr_reset_current_device_resource_ref";
  int device = 0;
  cmr_status status = cmr_current_as(&device, what);
  return status != CMR_SUCCESS ? status : cmr_replace_as(device, (cmr_resource_ref){0}, what);
}

/* ---- fork (fork.h) ------------------------------------------------------------ */

static bool cmr_per_device_fork_try_take(void) { return pthread_mutex_trylock(&cmr_table.lock) == 0; }

static void cmr_per_device_fork_give(void) { cmr_mutex_unlock(&cmr_table.lock); }

/* The entries are the parent's (object.h): forgotten, not released, and
 * the next get makes this process's default. The count moves, so a
 * binding's cache of what it resolved is stale. */
static void cmr_per_device_fork_child(void) {
  for (int i = 0; i < cmr_table.count; i++) cmr_entry_store(i, (cmr_resource_ref){0});
}

CMR_FORK_PART(CMR_FORK_PER_DEVICE, cmr_per_device_fork_try_take, NULL, cmr_per_device_fork_give,
              cmr_per_device_fork_child)

/* At exit, the table's shares go (a resource nobody else holds is freed),
 * each outside the lock (its last release may run arbitrary finalizers).
 * The array stays: a reader without the lock may still be looking at it,
 * and the next get after this makes the entry anew. */
__attribute__((destructor(200))) static void cmr_table_release_all(void) {
  for (int i = 0;; i++) {
    cmr_mutex_lock(&cmr_table.lock);
    if (i >= cmr_table.count) {
      cmr_mutex_unlock(&cmr_table.lock);
      return;
    }
    cmr_resource_ref dropped = cmr_table.entries[i];
    cmr_entry_store(i, (cmr_resource_ref){0});
    cmr_mutex_unlock(&cmr_table.lock);
    if (dropped.ops != NULL) cmr_ref_drop(dropped);
  }
}
