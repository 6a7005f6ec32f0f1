/* SPDX-License-Identifier: Apache-2.0 */
/* Counted objects behind generation-checked slots (object.h says why). The
 * table grows a page of slots at a time and never shrinks: its memory is
 * bounded by the most objects and handles alive at once, plus a reserve. */
#include <stdlib.h>

#include "fork.h"
#include "internal.h"
#include "lock.h"

cmr_slot *_Atomic cmr_slot_pages[CMR_SLOT_PAGES];

/* A slot is reused only once this many are free, first freed first: a
 * slot's generations then go by at most once per this many destroys, which
 * keeps stale tokens' generations far from the current ones. */
enum { CMR_SLOT_REUSE_RESERVE = 1024 };

/* The generation a slot never reaches again: once there it is retired. */
#define CMR_GENERATION_RETIRED UINT32_MAX
#define CMR_NO_SLOT UINT32_MAX

static _Atomic long cmr_alive; /* objects registered and not yet finalized */

/* This thread's objects whose last share went during a call: their slots,
 * linked through next_free (a dying slot is on no free list). */
static _Thread_local uint32_t cmr_waiting_first = CMR_NO_SLOT;

/* A cmr_lock, not a mutex: every object's create and destroy takes it (a
 * device buffer's among them). It is held for a few instructions, except
 * when the slots run out and a new page of CMR_SLOTS_PER_PAGE slots is
 * allocated under it (once per that many objects alive at once). */
static struct {
  cmr_lock lock;
  uint32_t made;       /* slots [0, made) exist */
  uint32_t free_first; /* FIFO of free slots, linked through next_free */
  uint32_t free_last;
  uint32_t free_count;
} cmr_slots = {CMR_LOCK_INIT, 0, CMR_NO_SLOT, CMR_NO_SLOT, 0};

static cmr_slot *cmr_slot_at(uint32_t index) {
  cmr_slot *page = atomic_load_explicit(&cmr_slot_pages[index / CMR_SLOTS_PER_PAGE], memory_order_acquire);
  return &page[index % CMR_SLOTS_PER_PAGE];
}

/* A new slot's index, from the free list or the table's end. Lock held. */
static bool cmr_slot_take_locked(uint32_t *index) {
  bool can_grow = cmr_slots.made < (uint32_t)CMR_SLOT_PAGES * CMR_SLOTS_PER_PAGE;
  if (cmr_slots.free_count > CMR_SLOT_REUSE_RESERVE || (!can_grow && cmr_slots.free_count > 0)) {
    *index = cmr_slots.free_first;
    cmr_slots.free_first = cmr_slot_at(*index)->next_free;
    if (--cmr_slots.free_count == 0) cmr_slots.free_last = CMR_NO_SLOT;
    return true;
  }
  if (!can_grow) return false;
  uint32_t page = cmr_slots.made / CMR_SLOTS_PER_PAGE;
  if (atomic_load_explicit(&cmr_slot_pages[page], memory_order_relaxed) == NULL) {
    cmr_slot *slots = calloc(CMR_SLOTS_PER_PAGE, sizeof *slots);
    if (slots == NULL) return false;
    atomic_store_explicit(&cmr_slot_pages[page], slots, memory_order_release);
  }
  *index = cmr_slots.made++;
  return true;
}

/* Hands out a slot holding `target` with `shares`; its token in *token. */
static cmr_status cmr_slot_open(uintptr_t target, const cmr_object_type *type, uint32_t shares, uint64_t kind,
                                const char *what, void **token) {
  uint32_t index;
  cmr_lock_acquire(&cmr_slots.lock);
  bool taken = cmr_slot_take_locked(&index);
  cmr_lock_release(&cmr_slots.lock);
  if (!taken) {
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "%s: no host memory for another handle slot", what);
  }
  cmr_slot *slot = cmr_slot_at(index);
  uint64_t generation = atomic_load_explicit(&slot->state, memory_order_relaxed) >> 32;
  if (generation == 0) generation = 1; /* a new slot: 0 is never a live generation */
  atomic_store_explicit(&slot->target, target, memory_order_relaxed);
  atomic_store_explicit(&slot->type, type, memory_order_relaxed);
  atomic_store_explicit(&slot->state, generation << 32 | shares, memory_order_release);
  *token = (void *)(uintptr_t)(generation << 32 | kind | index);
  return CMR_SUCCESS;
}

/* Moves a slot (no share left) to its next generation and frees it, or
 * retires it for good when the generations are used up. */
static void cmr_slot_close(uint64_t token) {
  uint32_t index = (uint32_t)(token & (CMR_TOKEN_HANDLE_BIT - 1));
  uint64_t next = (token >> 32) + 1;
  cmr_slot *slot = cmr_slot_at(index);
  atomic_store_explicit(&slot->state, next << 32, memory_order_release);
  if (next == CMR_GENERATION_RETIRED) return;
  cmr_lock_acquire(&cmr_slots.lock);
  slot->next_free = CMR_NO_SLOT;
  if (cmr_slots.free_count++ == 0) {
    cmr_slots.free_first = index;
  } else {
    cmr_slot_at(cmr_slots.free_last)->next_free = index;
  }
  cmr_slots.free_last = index;
  cmr_lock_release(&cmr_slots.lock);
}

long cmr_objects_alive(void) { return atomic_load_explicit(&cmr_alive, memory_order_relaxed); }

uint32_t cmr_slots_made(void) {
  cmr_lock_acquire(&cmr_slots.lock);
  uint32_t made = cmr_slots.made;
  cmr_lock_release(&cmr_slots.lock);
  return made;
}

/* Whether `slot` was live with `generation` when this process forked. */
static bool cmr_slot_parents(cmr_slot *slot, uint32_t generation) {
  return cmr_fork_is_child() && atomic_load_explicit(&slot->parents_generation, memory_order_relaxed) == generation;
}

/* The slot of a live token of `kind` and its state, or an error that tells
 * a NULL, a destroyed, a malformed and a parent's token apart. */
/* `status`, which the caller knows is a failure (cmr_error returns the
 * status it is given): said to the compiler, so that a caller's success
 * path is seen to have what a failure leaves unwritten. */
static inline cmr_status cmr_refused(cmr_status status) {
  if (status == CMR_SUCCESS) __builtin_unreachable();
  return status;
}

static cmr_status cmr_slot_live(const void *token, uint64_t kind, const char *what, cmr_slot **slot, uint64_t *state) {
  uint64_t value = (uint64_t)(uintptr_t)token;
  if (token == NULL) {
    return cmr_refused(cmr_error(CMR_ERROR_NULL_POINTER, "%s: handle is NULL", what));
  }
  *slot = cmr_slot_of(value, kind);
  uint32_t generation = (uint32_t)(value >> 32);
  if (*slot == NULL || generation == 0 || generation == CMR_GENERATION_RETIRED) {
    return cmr_refused(cmr_error(CMR_ERROR_DESTROYED_HANDLE, "%s: %p is not a live cmr %s", what, token,
                                 kind ? "handle" : "resource"));
  }
  *state = atomic_load_explicit(&(*slot)->state, memory_order_acquire);
  if ((uint32_t)(*state >> 32) != generation || (uint32_t)*state == 0) {
    if (cmr_slot_parents(*slot, generation)) {
      return cmr_refused(
          cmr_error(CMR_ERROR_FORKED,
                    "%s: %s %p was made before this process forked from its parent, and is the parent's: "
                    "a child uses only what it makes itself",
                    what, kind ? "handle" : "resource", token));
    }
    return cmr_refused(cmr_error(CMR_ERROR_DESTROYED_HANDLE, "%s: %s %p was already destroyed", what,
                                 kind ? "handle" : "resource", token));
  }
  return CMR_SUCCESS;
}

/* Forgets the parent's token: true for the one call that does. */
static bool cmr_slot_forget_parents(const void *token, uint64_t kind) {
  if (!cmr_fork_is_child()) return false;
  uint64_t value = (uint64_t)(uintptr_t)token;
  cmr_slot *slot = cmr_slot_of(value, kind);
  uint32_t generation = (uint32_t)(value >> 32);
  return slot != NULL && generation != 0 &&
         atomic_compare_exchange_strong_explicit(&slot->parents_generation, &generation, 0, memory_order_relaxed,
                                                 memory_order_relaxed);
}

/* ---- objects -------------------------------------------------------------- */

bool cmr_object_forget_parents(const void *token) { return cmr_slot_forget_parents(token, 0); }

cmr_status cmr_object_register(cmr_object *object, const cmr_object_type *type, const char *what, void **token) {
  object->type = type;
  cmr_status status = cmr_slot_open((uintptr_t)object, type, 1, 0, what, token);
  if (status == CMR_SUCCESS) atomic_fetch_add_explicit(&cmr_alive, 1, memory_order_relaxed);
  return status;
}

/* Whether the object of `slot` (found live) is of `type` (NULL: any),
 * `token` naming it in the message. Reads the slot, never the object: a
 * caller that holds no share may be racing its last release. */
static cmr_status cmr_object_of_type(cmr_slot *slot, const cmr_object_type *type, const char *what, const void *token) {
  const cmr_object_type *actual = atomic_load_explicit(&slot->type, memory_order_relaxed);
  if (type != NULL && actual != type) {
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "%s: %p is a \"%s\", not a \"%s\"", what, token, actual->name,
                     type->name);
  }
  return CMR_SUCCESS;
}

cmr_status cmr_object_resolve(const void *token, const cmr_object_type *type, const char *what, cmr_object **out) {
  cmr_slot *slot;
  uint64_t state;
  *out = NULL;
  cmr_status status = cmr_slot_live(token, 0, what, &slot, &state);
  if (status != CMR_SUCCESS) return status;
  status = cmr_object_of_type(slot, type, what, token);
  if (status == CMR_SUCCESS) *out = cmr_slot_object(slot);
  return status;
}

bool cmr_object_try_retain(const void *token) {
  uint64_t value = (uint64_t)(uintptr_t)token;
  uint32_t generation = (uint32_t)(value >> 32);
  if (token == NULL || generation == 0 || generation == CMR_GENERATION_RETIRED || cmr_fork_is_child()) return false;
  cmr_slot *slot = cmr_slot_of(value, 0);
  if (slot == NULL) return false;
  uint64_t state = atomic_load_explicit(&slot->state, memory_order_acquire);
  while ((uint32_t)(state >> 32) == generation && (uint32_t)state != 0 && (uint32_t)state != UINT32_MAX) {
    if (atomic_compare_exchange_weak_explicit(&slot->state, &state, state + 1, memory_order_acquire,
                                              memory_order_acquire)) {
      return true;
    }
  }
  return false;
}

/* The compare-and-swap of cmr_object_try_retain first; what it refuses (a
 * dead or overflowing object, a forked child's token) takes the checked
 * way, which says why or takes the share. */
cmr_status cmr_object_retain(const void *token, const char *what) {
  if (cmr_object_try_retain(token)) return CMR_SUCCESS;
  cmr_slot *slot;
  uint64_t state = 0; /* set by cmr_slot_live whenever it succeeds */
  cmr_status status = cmr_slot_live(token, 0, what, &slot, &state);
  if (status != CMR_SUCCESS) return status;
  for (;;) {
    if ((uint32_t)state == UINT32_MAX) {
      return cmr_error(CMR_ERROR_SIZE_OVERFLOW, "%s: resource %p has the most shares it can count", what, token);
    }
    if (atomic_compare_exchange_weak_explicit(&slot->state, &state, state + 1, memory_order_acquire,
                                              memory_order_acquire)) {
      return CMR_SUCCESS;
    }
    /* Someone else moved the count, or the object died meanwhile. */
    if ((state >> 32) != (uint64_t)(uintptr_t)token >> 32 || (uint32_t)state == 0) {
      return cmr_error(CMR_ERROR_DESTROYED_HANDLE, "%s: resource %p was destroyed meanwhile", what, token);
    }
  }
}

/* Finalizes the object of `slot`, whose last share is gone, and moves the
 * slot on. */
static void cmr_object_finalize(cmr_slot *slot, uint64_t token) {
  cmr_object *object = cmr_slot_object(slot);
  object->type->finalize(object);
  cmr_slot_close(token);
  atomic_fetch_sub_explicit(&cmr_alive, 1, memory_order_relaxed);
}

/* An object whose last share went: finalized now, or, while this thread is
 * inside a call into a resource, once its outermost call returns. */
static void cmr_object_gone(cmr_slot *slot, uint64_t token) {
  if (cmr_waiting_first == CMR_NO_SLOT) {
    if (cmr_thread_words_of_thread.calls_in_progress == 0) {
      cmr_object_finalize(slot, token);
      return;
    }
    --cmr_thread_words_of_thread.calls_in_progress; /* the first to wait: the outermost end now goes below zero */
  }
  slot->next_free = cmr_waiting_first;
  cmr_waiting_first = (uint32_t)(token & (CMR_TOKEN_HANDLE_BIT - 1));
}

void cmr_calls_finish(void) {
  cmr_thread_words_of_thread.calls_in_progress = 0;
  /* A finalize may record messages of its own: the caller's answer stays. */
  cmr_kept_message kept;
  cmr_keep_message(&kept);
  while (cmr_waiting_first != CMR_NO_SLOT) {
    uint32_t index = cmr_waiting_first;
    cmr_slot *slot = cmr_slot_at(index);
    cmr_waiting_first = slot->next_free;
    uint64_t generation = atomic_load_explicit(&slot->state, memory_order_acquire) >> 32;
    cmr_object_finalize(slot, generation << 32 | index);
  }
  cmr_restore_message(&kept);
}

cmr_status cmr_object_end(const void *token, const cmr_object_type *type, const char *what, cmr_object **out) {
  cmr_slot *slot;
  uint64_t state;
  *out = NULL;
  cmr_status status = cmr_slot_live(token, 0, what, &slot, &state);
  if (status == CMR_SUCCESS) status = cmr_object_of_type(slot, type, what, token);
  if (status != CMR_SUCCESS) return status;
  if ((uint32_t)state != 1) {
    return cmr_error(CMR_ERROR_INTERNAL, "%s: %s %p has %u shares where its one owner holds the only one", what,
                     type->name, token, (unsigned)(uint32_t)state);
  }
  /* One call wins the flip from one share to none; any other sees it gone. */
  if (!atomic_compare_exchange_strong_explicit(&slot->state, &state, state - 1, memory_order_acq_rel,
                                               memory_order_acquire)) {
    return cmr_error(CMR_ERROR_DESTROYED_HANDLE, "%s: %s %p was already destroyed", what, type->name, token);
  }
  *out = cmr_slot_object(slot);
  return CMR_SUCCESS;
}

void cmr_object_finish(const void *token) {
  uint64_t value = (uint64_t)(uintptr_t)token;
  cmr_object_gone(cmr_slot_of(value, 0), value);
}

void cmr_object_release_taken(const void *token) {
  if (cmr_fork_is_child()) {
    (void)cmr_object_release(token, "cmr_object_release_taken");
    return;
  }
  uint64_t value = (uint64_t)(uintptr_t)token;
  cmr_slot *slot = cmr_slot_of(value, 0);
  uint64_t state = atomic_fetch_sub_explicit(&slot->state, 1, memory_order_acq_rel);
  if ((uint32_t)state == 1) cmr_object_gone(slot, value); /* the last share: the slot says dead from here */
}

cmr_status cmr_object_release(const void *token, const char *what) {
  cmr_slot *slot;
  uint64_t state;
  cmr_status status = cmr_slot_live(token, 0, what, &slot, &state);
  if (status == CMR_ERROR_FORKED) return CMR_SUCCESS; /* the parent's object: nothing of it goes here */
  if (status != CMR_SUCCESS) return status;
  while (!atomic_compare_exchange_weak_explicit(&slot->state, &state, state - 1, memory_order_acq_rel,
                                                memory_order_acquire)) {
    if ((state >> 32) != (uint64_t)(uintptr_t)token >> 32 || (uint32_t)state == 0) {
      return cmr_error(CMR_ERROR_DESTROYED_HANDLE, "%s: resource %p was destroyed meanwhile", what, token);
    }
  }
  if ((uint32_t)state != 1) return CMR_SUCCESS;
  /* The last share: from here the slot says dead (no shares), so retains
   * fail while the object finalizes; then the slot moves on. */
  cmr_object_gone(slot, (uint64_t)(uintptr_t)token);
  return CMR_SUCCESS;
}

/* ---- handles ---------------------------------------------------------------- */

cmr_status cmr_handle_make(const void *token, const char *what, void **handle) {
  return cmr_slot_open((uintptr_t)token, NULL, 1, CMR_TOKEN_HANDLE_BIT, what, handle);
}

cmr_status cmr_handle_target(const void *handle, const char *what, void **token) {
  cmr_slot *slot;
  uint64_t state;
  *token = NULL;
  cmr_status status = cmr_slot_live(handle, CMR_TOKEN_HANDLE_BIT, what, &slot, &state);
  if (status == CMR_SUCCESS) *token = (void *)atomic_load_explicit(&slot->target, memory_order_relaxed);
  return status;
}

cmr_status cmr_handle_object(const void *handle, const cmr_object_type *type, const char *what, cmr_object **out) {
  void *token;
  *out = NULL;
  cmr_status status = cmr_handle_target(handle, what, &token);
  /* The handle's share keeps the object alive while the handle lives. */
  if (status == CMR_SUCCESS) status = cmr_object_resolve(token, NULL, what, out);
  if (status == CMR_SUCCESS) status = cmr_object_of_type(cmr_slot_of((uintptr_t)token, 0), type, what, handle);
  if (status != CMR_SUCCESS) *out = NULL;
  return status;
}

/* Ends a live handle (exactly once, whoever else tries) and gives its share
 * to the caller, with the object's token. */
static cmr_status cmr_handle_end(const void *handle, const char *what, void **token) {
  cmr_slot *slot;
  uint64_t state;
  cmr_status status = cmr_slot_live(handle, CMR_TOKEN_HANDLE_BIT, what, &slot, &state);
  if (status != CMR_SUCCESS) return status;
  *token = (void *)atomic_load_explicit(&slot->target, memory_order_relaxed);
  /* One call wins the flip from one share to none; any other sees it gone. */
  if (!atomic_compare_exchange_strong_explicit(&slot->state, &state, state - 1, memory_order_acq_rel,
                                               memory_order_acquire)) {
    return cmr_error(CMR_ERROR_DESTROYED_HANDLE, "%s: handle %p was already destroyed", what, handle);
  }
  cmr_slot_close((uint64_t)(uintptr_t)handle);
  return CMR_SUCCESS;
}

cmr_status cmr_handle_destroy(const void *handle, const char *what) {
  if (handle == NULL || cmr_slot_forget_parents(handle, CMR_TOKEN_HANDLE_BIT)) return CMR_SUCCESS;
  void *token;
  cmr_status status = cmr_handle_end(handle, what, &token);
  return status == CMR_SUCCESS ? cmr_object_release(token, what) : status;
}

cmr_status cmr_handle_hand_over(const void *handle, const char *what) {
  void *token;
  return cmr_handle_end(handle, what, &token);
}

cmr_status cmr_handle_open(cmr_object *object, const cmr_object_type *type, const char *what, void **handle) {
  void *token;
  *handle = NULL;
  cmr_status status = cmr_object_register(object, type, what, &token);
  if (status != CMR_SUCCESS) {
    type->finalize(object);
    return status;
  }
  status = cmr_handle_make(token, what, handle);
  if (status != CMR_SUCCESS) (void)cmr_object_release(token, what);
  return status;
}

cmr_status cmr_handle_share(const void *token, const char *what, void **handle) {
  *handle = NULL;
  cmr_status status = cmr_object_retain(token, what);
  if (status != CMR_SUCCESS) return status;
  status = cmr_handle_make(token, what, handle);
  if (status != CMR_SUCCESS) (void)cmr_object_release(token, what);
  return status;
}

void *cmr_handle_ref_self(const void *handle, const cmr_object_type *type) {
  uint64_t value = (uint64_t)(uintptr_t)handle;
  cmr_slot *slot = cmr_slot_of(value, CMR_TOKEN_HANDLE_BIT);
  if (slot != NULL) {
    uint64_t state = atomic_load_explicit(&slot->state, memory_order_acquire);
    if ((state >> 32) == (value >> 32) && (uint32_t)state != 0) {
      void *token = (void *)atomic_load_explicit(&slot->target, memory_order_relaxed);
      cmr_slot *target = cmr_slot_of((uintptr_t)token, 0);
      if (cmr_object_peek(token) != NULL && atomic_load_explicit(&target->type, memory_order_relaxed) == type) {
        return token;
      }
    }
  }
  /* No status to return here (and this thread's message stays as it was):
   * the handle itself stands in, and the first call through the ref
   * reports it. */
  return (void *)handle;
}

/* ---- fork (fork.h) ------------------------------------------------------------ */

static void cmr_objects_fork_take(void) { cmr_lock_acquire(&cmr_slots.lock); }

static void cmr_objects_fork_give(void) { cmr_lock_release(&cmr_slots.lock); }

/* Every slot live at the fork is retired, its generation kept to tell its
 * tokens apart. A slot without shares (free, retired, or its object being
 * finalized by a thread the child does not have) has no live token. No
 * object of this process is alive yet. */
static void cmr_objects_fork_child(void) {
  for (uint32_t i = 0; i < cmr_slots.made; ++i) {
    cmr_slot *slot = cmr_slot_at(i);
    uint64_t state = atomic_load_explicit(&slot->state, memory_order_relaxed);
    if ((uint32_t)state == 0) continue;
    atomic_store_explicit(&slot->parents_generation, (uint32_t)(state >> 32), memory_order_relaxed);
    atomic_store_explicit(&slot->state, (uint64_t)CMR_GENERATION_RETIRED << 32, memory_order_relaxed);
  }
  atomic_store_explicit(&cmr_alive, 0, memory_order_relaxed);
}

CMR_FORK_PART(CMR_FORK_OBJECTS, NULL, cmr_objects_fork_take, cmr_objects_fork_give, cmr_objects_fork_child)
