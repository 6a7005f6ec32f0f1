/* SPDX-License-Identifier: Apache-2.0 */
/* Counted objects and the tokens that name them.
 *
 * Nothing cmr hands out as a handle, and no `self` of a ref to one of cmr's
 * own resources, is an address: it is a token, (generation << 32) | kind bit
 * (31) | slot index (0..2^24). The slots live in a table that is never
 * freed, so a token can always be looked at, however long ago its object
 * died. A slot's generation moves on whenever what it holds goes away and is
 * never handed out twice (a slot whose generation would wrap is retired), so
 * a stale token never matches the slot's next occupant.
 *
 * Two kinds of slot:
 * - an object slot holds the object's address and its share count, beside
 *   the generation in one 64-bit word: a retain that races with the last
 *   release either takes a share of a live object or fails, and never
 *   brings a dying one back. A ref's self is an object token.
 * - a handle slot holds one share of an object and that object's token.
 *   Every handle a caller obtains (create, from_ref) is a slot of its own, so
 *   destroying it flips its generation exactly once: a second destroy is
 *   reported, never a second release of someone else's share.
 * Device buffers and stacks have one owner and no refs: their handle is the
 * object token itself. */
#ifndef CMR_OBJECT_H
#define CMR_OBJECT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <cmr/core.h>

#include "errors.h"

typedef struct cmr_object cmr_object;

/* Called for each resource an object holds (its upstream, its bins). */
typedef void (*cmr_child_visitor)(cmr_resource_ref child, void *arg);

/* What every object of one type shares: a name for messages, the function
 * that frees what the object owns, shell included (it came from
 * malloc/calloc), called once, after the last share is gone, and (NULL for
 * an object that holds no resources) the one that lists what it holds. */
typedef struct cmr_object_type {
  const char *name;
  void (*finalize)(cmr_object *object);
  void (*children)(const cmr_object *object, cmr_child_visitor visit, void *arg);
} cmr_object_type;

/* The first member of every counted object. */
struct cmr_object {
  const cmr_object_type *type;
};

/* ---- the slot table (read inline on every call through a ref) ---------- */

typedef struct cmr_slot {
  _Atomic uint64_t state;   /* generation << 32 | shares (a live handle: 1) */
  _Atomic uintptr_t target; /* object slot: the object's address; handle slot: the object's token */
  uint32_t next_free;       /* free-list link, under the table's lock */
  /* In a child (fork.h): the generation the slot had live at the fork, so
   * that its tokens are told apart as the parent's (0: none). Such a slot
   * is retired in the child: its object is the parent's and never runs
   * there, so nothing of it is released, and no CUDA call made for it. */
  _Atomic uint32_t parents_generation;
  /* Object slot: its object's type, so that a type is checked without
   * reading an object that another thread's destroy may be freeing. */
  const cmr_object_type *_Atomic type;
} cmr_slot;

enum {
  CMR_SLOT_INDEX_BITS = 24,
  CMR_SLOTS_PER_PAGE = 4096,
  CMR_SLOT_PAGES = (1 << CMR_SLOT_INDEX_BITS) / CMR_SLOTS_PER_PAGE
};
#define CMR_TOKEN_HANDLE_BIT ((uint64_t)1 << 31)

extern cmr_slot *_Atomic cmr_slot_pages[CMR_SLOT_PAGES];

/* The slot `token` names when it is of `kind` (0 or CMR_TOKEN_HANDLE_BIT)
 * and well formed, else NULL. Reads only the never-freed table. */
static inline cmr_slot *cmr_slot_of(uint64_t token, uint64_t kind) {
  uint64_t index = (token & 0xffffffffu) ^ kind;
  if (index >= ((uint64_t)1 << CMR_SLOT_INDEX_BITS)) return NULL;
  cmr_slot *page = atomic_load_explicit(&cmr_slot_pages[index / CMR_SLOTS_PER_PAGE], memory_order_acquire);
  return page == NULL ? NULL : &page[index % CMR_SLOTS_PER_PAGE];
}

/* The object of an object slot. The table holds plain addresses, so to a
 * leak checker (valgrind, LeakSanitizer) a resource alive at exit is still
 * reachable, as it is for the program that holds its handle; tests find
 * resources nobody destroyed with cmr_objects_alive. */
static inline cmr_object *cmr_slot_object(cmr_slot *slot) {
  return (cmr_object *)atomic_load_explicit(&slot->target, memory_order_relaxed);
}

/* Whether `token` names a live object (not dead, dying or malformed), and
 * then the object in *object (never NULL: a slot's address is stored
 * before the state that makes it live). Inline: dispatch asks on every
 * allocate and free. A caller must hold a share for the object to stay
 * alive after the answer. */
static inline bool cmr_object_live(const void *token, cmr_object **object) {
  uint64_t value = (uint64_t)(uintptr_t)token;
  cmr_slot *slot = cmr_slot_of(value, 0);
  if (slot == NULL) return false;
  uint64_t state = atomic_load_explicit(&slot->state, memory_order_acquire);
  /* The token's generation, and at least one share. */
  if (((state ^ value) >> 32) != 0 || (uint32_t)state == 0) return false;
  *object = cmr_slot_object(slot);
  return true;
}

/* The object behind a live object token, or NULL. */
static inline cmr_object *cmr_object_peek(const void *token) {
  cmr_object *object = NULL;
  return cmr_object_live(token, &object) ? object : NULL;
}

/* ---- calls in progress ------------------------------------------------------
 * Every call into a resource (dispatch's, a typed method's, a device
 * buffer's) is bracketed by cmr_call_begin / cmr_call_end. While this thread
 * is inside one, an object whose last share goes (a resource destroyed from
 * inside its own call, or from inside its upstream's, or anything else) is
 * not finalized at once: its slot already says it is gone (every use and
 * every retain of it fails), and its memory goes when this thread's
 * outermost call returns. A call therefore never returns into freed memory.
 * A destroy on another thread is the caller's race, as the ownership rules
 * say (hold a share of what another thread may destroy).
 *
 * One thread-local int (in cmr_thread_words, errors.h), read on every call: the depth of calls, less one
 * once an object waits, so that the end of the outermost call of a thread
 * with objects waiting is the decrement that goes below zero (one
 * subtraction and one branch on the fast path). */

/* Finalizes the objects waiting for this thread's outermost call to end
 * (out of line; keeps this thread's error message and its count). */
void cmr_calls_finish(void);

static inline __attribute__((always_inline)) void cmr_call_begin(void) {
  ++cmr_thread_words_of_thread.calls_in_progress;
}

static inline __attribute__((always_inline)) void cmr_call_end(void) {
  if (__builtin_expect(--cmr_thread_words_of_thread.calls_in_progress < 0, 0)) cmr_calls_finish();
}

/* ---- objects -------------------------------------------------------------- */

/* A token made before this process forked from its parent (fork.h) is the
 * parent's: every use of it in the child is CMR_ERROR_FORKED, from the
 * functions below as from dispatch. Releasing a share of the parent's
 * object (cmr_object_release) succeeds and changes nothing. A one-owner
 * object's destroy (device buffer, stack, stream pool) calls this first:
 * true when `token` is the parent's, now forgotten (the destroy succeeds
 * with nothing else to do; a second one is CMR_ERROR_DESTROYED_HANDLE).
 * Costs one load in a process that never forked. */
bool cmr_object_forget_parents(const void *token);

/* Gives `object` (from malloc/calloc, its type set) a slot and one share,
 * the caller's; *token names it. On failure (CMR_ERROR_OUT_OF_MEMORY: no
 * slot) the object is untouched and still the caller's to free. */
cmr_status cmr_object_register(cmr_object *object, const cmr_object_type *type, const char *what, void **token);
/* The live object `token` names, of type `type` (NULL: any type). NULL
 * token: CMR_ERROR_NULL_POINTER; dead or not a token:
 * CMR_ERROR_DESTROYED_HANDLE; another type: CMR_ERROR_INVALID_ARGUMENT;
 * each with "<what>: ..." in the message. */
cmr_status cmr_object_resolve(const void *token, const cmr_object_type *type, const char *what, cmr_object **out);
/* Take one more share; CMR_ERROR_DESTROYED_HANDLE when the object is dead
 * or its last share is being released. */
cmr_status cmr_object_retain(const void *token, const char *what);
/* Drop one share; the last one finalizes the object. A token whose object
 * has no share left is CMR_ERROR_DESTROYED_HANDLE (never a second release). */
cmr_status cmr_object_release(const void *token, const char *what);
/* The drop of a share the caller took and still holds, so that the object
 * is this process's and alive: no token checks, one atomic subtraction
 * (the checked release costs some 100 instructions more on PyTorch's
 * path, cmr_pluggable_*); in a forked child, the checked way. */
void cmr_object_release_taken(const void *token);
/* One more share of the object `token` names if it is this process's and
 * still alive, else false (no message): cmr_object_retain's first try, and
 * for a reader that found the token without a lock, whose object may have
 * gone or its slot moved on since. */
bool cmr_object_try_retain(const void *token);

/* For an object with one owner and no other share (a device buffer, a
 * stream pool): ends its only share, so that of two destroys racing, one
 * wins and tears the object down while every other use, destroy included,
 * already sees it gone (CMR_ERROR_DESTROYED_HANDLE; errors as
 * cmr_object_resolve). The winner then calls cmr_object_finish. */
cmr_status cmr_object_end(const void *token, const cmr_object_type *type, const char *what, cmr_object **out);
/* Finalizes an object cmr_object_end ended (later, while calls are in
 * progress on this thread). */
void cmr_object_finish(const void *token);

/* ---- handles ---------------------------------------------------------------- */

/* A new handle that owns one share of the object `token` names, a share the
 * caller already holds and hands over (on failure the caller keeps it). */
cmr_status cmr_handle_make(const void *token, const char *what, void **handle);
/* The object token of a live handle (errors as cmr_object_resolve). */
cmr_status cmr_handle_target(const void *handle, const char *what, void **token);
/* The object of a live handle, of type `type` (NULL: any). */
cmr_status cmr_handle_object(const void *handle, const cmr_object_type *type, const char *what, cmr_object **out);
/* Ends the handle and drops its share. NULL is a no-op (CMR_SUCCESS); a
 * handle already destroyed is CMR_ERROR_DESTROYED_HANDLE. The parent's
 * handle in a child is forgotten (CMR_SUCCESS, once) and its object left
 * alone. */
cmr_status cmr_handle_destroy(const void *handle, const char *what);

/* Ends the handle without dropping its share, which passes to whoever
 * holds a ref of the object (e.g. a stack or the per-device table, which
 * later drop it with cmr_ref_drop). */
cmr_status cmr_handle_hand_over(const void *handle, const char *what);
/* A new object's handle: registers `object` (type set to `type`) and makes
 * the handle that owns its first share. On failure the object is finalized. */
cmr_status cmr_handle_open(cmr_object *object, const cmr_object_type *type, const char *what, void **handle);
/* A new handle with a share of its own of the live object `token` names
 * (what `_from_ref` hands out). */
cmr_status cmr_handle_share(const void *token, const char *what, void **handle);
/* The self of the ref a ref constructor makes of `handle`: the object token
 * of a live handle of type `type`; otherwise the handle itself, which every
 * call through the ref then reports (a ref constructor returns no status). */
void *cmr_handle_ref_self(const void *handle, const cmr_object_type *type);

/* For tests: how many slots the table has made (live, free or retired), and
 * how many objects are alive now. */
uint32_t cmr_slots_made(void);
long cmr_objects_alive(void);

#endif /* CMR_OBJECT_H */
