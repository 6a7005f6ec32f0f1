/* SPDX-License-Identifier: Apache-2.0 */
/* binning: requests routed by size to bins, else to the upstream. A free is
 * routed by the same rule, so the routing must not change under a pointer
 * still out: each route counts its outstanding allocations, and adding a bin
 * is refused while the route that served the sizes it takes over has any.
 *
 * Allocation and deallocation hold the table for reading across the call to
 * the route (so a route is never replaced mid-call and its count stays
 * exact); adding a bin holds it for writing, and calls nothing outside this
 * file meanwhile: a new bin takes its first memory from the upstream, and
 * shares are taken and dropped, before and after, as any of those calls may
 * call this resource again. Adding a bin from inside a call through the same
 * resource (a bin or the upstream calling back), which would wait for that
 * call to end, is refused: each thread keeps a list of the tables it reads.
 *
 * The reading side must not be a line every thread writes (a
 * pthread_rwlock is: 16 threads ran slower than one), so readers are counted
 * in slots, each on a cache line of its own, a thread always in the same
 * one; so are the routes' counts. A writer announces itself, then waits for
 * every slot to empty; a reader that finds a writer announced steps back and
 * waits on the writers' lock (Dekker's order, with sequentially consistent
 * atomics on both sides). */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "held_calls.h"
#include "impl.h"
#include "invariants.h"
#include "lock.h"
#include "sizes.h"
#include "upstream_lock.h"

enum { cmr_binning_slots = 16 };

typedef struct cmr_binning_slot {
  _Alignas(64) _Atomic size_t count;
} cmr_binning_slot;

typedef struct cmr_route {
  size_t size; /* largest request served (a multiple of 256); unused for the upstream */
  /* Its resource, whose share the table holds, with what a call through
   * it needs, so that such a call looks nothing up (held_calls.h). */
  cmr_held held;
  /* Allocations outstanding through it: the sum over the slots (one may be
   * negative, as size_t wraps: freed from another thread's slot). */
  cmr_binning_slot outstanding[cmr_binning_slots];
} cmr_route;

/* Requests of (2^(k-1), 2^k] bytes are octave k (1 byte: 0). */
enum { cmr_binning_octaves = 65 };

/* Requests of up to 64 KiB find their route in one step: the route of
 * ((bytes - 1) / 256) (sizes of bins are multiples of 256). */
enum { cmr_binning_small_steps = 256, cmr_binning_small_limit = cmr_binning_small_steps * CMR_DEFAULT_ALIGNMENT };

struct cmr_binning_impl {
  cmr_binning_params params; /* first: what it was created with (impl.h) */
  cmr_route upstream;        /* params.upstream, for requests no bin takes */
  cmr_binning_slot readers[cmr_binning_slots];
  _Atomic bool writing;
  pthread_mutex_t writers;
  cmr_route **bins; /* ascending by size; each holds a share of its resource */
  size_t bin_count;
  size_t bin_capacity;
  /* For each octave, the position of the first bin that serves any of its
   * sizes: a route is found from there in a step or none (none for bins
   * that are powers of two), not by a search of the table. */
  size_t first_of_octave[cmr_binning_octaves];
  /* For requests up to cmr_binning_small_limit: their route, by (bytes - 1) / 256. */
  cmr_route *small_routes[cmr_binning_small_steps];
};
CMR_IMPL_LAYOUT(binning);

/* The position of the first bin of at least `bytes`: bin_count if none. */
static size_t cmr_binning_position(const cmr_binning_impl *impl, size_t bytes) {
  size_t low = 0, high = impl->bin_count;
  while (low < high) {
    size_t middle = low + (high - low) / 2;
    if (impl->bins[middle]->size < bytes) {
      low = middle + 1;
    } else {
      high = middle;
    }
  }
  return low;
}

static unsigned cmr_binning_octave(size_t bytes) {
  return bytes <= 1 ? 0 : 64 - (unsigned)__builtin_clzll((unsigned long long)(bytes - 1));
}

/* The first bin of at least `bytes` (what cmr_binning_position finds), or
 * the upstream, through the octaves. */
static inline cmr_route *cmr_binning_route_by_octave(const cmr_binning_impl *impl, size_t bytes) {
  size_t position = impl->first_of_octave[cmr_binning_octave(bytes)];
  while (position < impl->bin_count && impl->bins[position]->size < bytes) ++position;
  CMR_INVARIANT(position == cmr_binning_position(impl, bytes));
  return position < impl->bin_count ? impl->bins[position] : (cmr_route *)&impl->upstream;
}

/* The same, for `bytes` > 0; on the path of every allocation and free. */
static inline __attribute__((always_inline)) cmr_route *cmr_binning_route(const cmr_binning_impl *impl, size_t bytes) {
  size_t step = (bytes - 1) / CMR_DEFAULT_ALIGNMENT;
  if (__builtin_expect(step < cmr_binning_small_steps, 1)) {
    CMR_INVARIANT(impl->small_routes[step] == cmr_binning_route_by_octave(impl, bytes));
    return impl->small_routes[step];
  }
  return cmr_binning_route_by_octave(impl, bytes);
}

/* After the bins changed, or at init (the write side held, or no reader yet). */
static void cmr_binning_index(cmr_binning_impl *impl) {
  for (unsigned k = 0; k < cmr_binning_octaves; ++k) {
    size_t smallest = k == 0 ? 1 : ((size_t)1 << (k - 1)) + 1; /* octave 64's: 2^63 + 1 */
    impl->first_of_octave[k] = cmr_binning_position(impl, smallest);
  }
  for (size_t step = 0; step < cmr_binning_small_steps; ++step) {
    impl->small_routes[step] = cmr_binning_route_by_octave(impl, (step + 1) * CMR_DEFAULT_ALIGNMENT);
  }
}

/* ---- the table's reading and writing sides ---------------------------------------- */

/* A table this thread is reading: one in the frame of each read in
 * progress, linked innermost first. */
typedef struct cmr_binning_reading {
  const cmr_binning_impl *impl;
  const struct cmr_binning_reading *outer;
} cmr_binning_reading;

typedef struct cmr_binning_thread {
  unsigned slot;                      /* 1 + the thread's slot; 0: none yet */
  const cmr_binning_reading *reading; /* innermost first; NULL: none */
} cmr_binning_thread;

static _Atomic unsigned cmr_binning_next_slot;
static CMR_HOT_THREAD_LOCAL cmr_binning_thread cmr_binning_this_thread;

/* The thread's slot, given it on its first read (out of line: once a thread). */
static __attribute__((noinline)) unsigned cmr_binning_assign_slot(cmr_binning_thread *thread) {
  thread->slot = 1 + atomic_fetch_add_explicit(&cmr_binning_next_slot, 1, memory_order_relaxed) % cmr_binning_slots;
  return thread->slot;
}

/* CMR_ERROR_REENTRANT_CALL when this thread is inside a call through
 * `impl` (taking the writing side would wait for that call to end). */
static cmr_status cmr_binning_check_not_reading(const cmr_binning_impl *impl, const char *what) {
  for (const cmr_binning_reading *read = cmr_binning_this_thread.reading; read != NULL; read = read->outer) {
    if (read->impl == impl) return cmr_upstream_lock_refuse(what);
  }
  return CMR_SUCCESS;
}

/* Enters the reading side, `reading` (the caller's, until
 * cmr_binning_read_end) recording it for this thread; returns the caller's
 * slot. */
static inline unsigned cmr_binning_read_begin(cmr_binning_impl *impl, cmr_binning_reading *reading) {
  cmr_binning_thread *thread = &cmr_binning_this_thread;
  unsigned slot = thread->slot;
  if (__builtin_expect(slot == 0, 0)) slot = cmr_binning_assign_slot(thread);
  slot -= 1;
  *reading = (cmr_binning_reading){impl, thread->reading};
  thread->reading = reading;
  for (;;) {
    atomic_fetch_add(&impl->readers[slot].count, 1);
    if (!atomic_load(&impl->writing)) return slot;
    atomic_fetch_sub(&impl->readers[slot].count, 1);
    cmr_mutex_lock(&impl->writers); /* until the writer is done */
    cmr_mutex_unlock(&impl->writers);
  }
}

static inline void cmr_binning_read_end(cmr_binning_impl *impl, unsigned slot, const cmr_binning_reading *reading) {
  atomic_fetch_sub_explicit(&impl->readers[slot].count, 1, memory_order_release);
  cmr_binning_this_thread.reading = reading->outer;
}

static void cmr_binning_write_begin(cmr_binning_impl *impl) {
  cmr_mutex_lock(&impl->writers);
  atomic_store(&impl->writing, true);
  for (unsigned i = 0; i < cmr_binning_slots; ++i) {
    while (atomic_load(&impl->readers[i].count) != 0) sched_yield();
  }
}

static void cmr_binning_write_end(cmr_binning_impl *impl) {
  atomic_store(&impl->writing, false);
  cmr_mutex_unlock(&impl->writers);
}

static size_t cmr_binning_outstanding(const cmr_route *route) {
  size_t total = 0;
  for (unsigned i = 0; i < cmr_binning_slots; ++i) {
    total += atomic_load_explicit(&route->outstanding[i].count, memory_order_relaxed);
  }
  return total;
}

static cmr_status cmr_binning_route_failed(cmr_status status, const cmr_route *route, const cmr_binning_impl *impl) {
  if (route == &impl->upstream) return cmr_error_context(status, "binning: the upstream");
  return cmr_error_context(status, "binning: the bin of %zu bytes", route->size);
}

/* One call routed by size: an allocation when `out` is not NULL, else the
 * free of `ptr`; on success the route's count moves by one. Inlined into
 * both calls below, so each keeps only its own branch. */
static inline __attribute__((always_inline)) cmr_status cmr_binning_routed(cmr_binning_impl *impl, void *ptr,
                                                                           size_t bytes, size_t alignment,
                                                                           cmr_stream stream, void **out) {
  cmr_binning_reading reading;
  unsigned slot = cmr_binning_read_begin(impl, &reading);
  cmr_route *route = cmr_binning_route(impl, bytes);
  cmr_status status = out != NULL ? cmr_held_allocate(&route->held, bytes, alignment, stream, out)
                                  : cmr_held_deallocate(&route->held, ptr, bytes, alignment, stream);
  if (status == CMR_SUCCESS) {
    /* size_t wraps, so adding SIZE_MAX takes one away. */
    atomic_fetch_add_explicit(&route->outstanding[slot].count, out != NULL ? 1 : SIZE_MAX, memory_order_relaxed);
  } else {
    status = cmr_binning_route_failed(status, route, impl);
  }
  cmr_binning_read_end(impl, slot, &reading);
  return status;
}

cmr_status cmr_binning_impl_allocate(cmr_binning_impl *impl, size_t bytes, size_t alignment, cmr_stream stream,
                                     void **out) {
  return cmr_binning_routed(impl, NULL, bytes, alignment, stream, out);
}

cmr_status cmr_binning_impl_deallocate(cmr_binning_impl *impl, void *ptr, size_t bytes, size_t alignment,
                                       cmr_stream stream) {
  return cmr_binning_routed(impl, ptr, bytes, alignment, stream, NULL);
}

/* ---- adding bins ------------------------------------------------------------------ */

static cmr_status cmr_binning_round(size_t allocation_size, size_t *out) {
  if (!cmr_round_up(allocation_size, CMR_DEFAULT_ALIGNMENT, out)) {
    return cmr_error(CMR_ERROR_SIZE_OVERFLOW, "binning: allocation_size %zu overflows once rounded up to 256",
                     allocation_size);
  }
  return CMR_SUCCESS;
}

/* CMR_SUCCESS when `route`, about to lose the sizes up to `size`, has
 * nothing outstanding whose free those sizes would misroute. */
static cmr_status cmr_binning_check_idle(const cmr_binning_impl *impl, const cmr_route *route, size_t size,
                                         bool replacing) {
  size_t outstanding = cmr_binning_outstanding(route);
  if (outstanding == 0) return CMR_SUCCESS;
  if (replacing) {
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "binning: the bin of %zu bytes has %zu allocation(s) outstanding",
                     size, outstanding);
  }
  if (route == &impl->upstream) {
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT,
                     "binning: a bin of %zu bytes would take sizes from the upstream, which has %zu allocation(s) "
                     "outstanding through this resource",
                     size, outstanding);
  }
  return cmr_error(CMR_ERROR_INVALID_ARGUMENT,
                   "binning: a bin of %zu bytes would take sizes from the bin of %zu bytes, which has %zu "
                   "allocation(s) outstanding",
                   size, route->size, outstanding);
}

/* Inserts a new bin for `resource` (whose share it takes) at `position`. */
static cmr_status cmr_binning_insert(cmr_binning_impl *impl, size_t position, size_t size, cmr_resource_ref resource) {
  if (impl->bin_count == impl->bin_capacity) {
    size_t capacity = impl->bin_capacity == 0 ? 8 : impl->bin_capacity * 2;
    cmr_route **bins = realloc(impl->bins, capacity * sizeof *bins);
    if (bins == NULL) return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "binning: no host memory for the bin table");
    impl->bins = bins;
    impl->bin_capacity = capacity;
  }
  cmr_route *bin = aligned_alloc(_Alignof(cmr_route), sizeof *bin);
  if (bin == NULL) return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "binning: no host memory for a bin");
  *bin = (cmr_route){.size = size};
  cmr_held_set(&bin->held, resource);
  for (size_t i = impl->bin_count; i > position; --i) impl->bins[i] = impl->bins[i - 1];
  impl->bins[position] = bin;
  impl->bin_count++;
  cmr_binning_index(impl);
  return CMR_SUCCESS;
}

/* Puts `resource`, a share of which the caller hands over, at `size` (the
 * writing side held): replacing a bin of that size, or keeping it
 * (`keep`). *unused is then the share the table does not keep (the
 * replaced bin's, or `resource`'s own when kept or refused), or none. */
static cmr_status cmr_binning_put_locked(cmr_binning_impl *impl, size_t size, cmr_resource_ref resource, bool keep,
                                         cmr_resource_ref *unused) {
  size_t position = cmr_binning_position(impl, size);
  cmr_route *route = cmr_binning_route(impl, size);
  bool there = position < impl->bin_count && route->size == size;
  *unused = resource;
  if (there && keep) return CMR_SUCCESS;
  cmr_status status = cmr_binning_check_idle(impl, route, size, there);
  if (status != CMR_SUCCESS) return status;
  if (there) {
    *unused = route->held.ref;
    cmr_held_set(&route->held, resource);
    return CMR_SUCCESS;
  }
  status = cmr_binning_insert(impl, position, size, resource);
  if (status == CMR_SUCCESS) *unused = (cmr_resource_ref){0};
  return status;
}

/* cmr_binning_put_locked under the writing side; the share not kept is
 * dropped after it (dropping a bin's last share gives its memory back to
 * its upstream, which may call this resource). */
static cmr_status cmr_binning_put(cmr_binning_impl *impl, size_t size, cmr_resource_ref resource, bool keep) {
  cmr_resource_ref unused;
  cmr_binning_write_begin(impl);
  cmr_status status = cmr_binning_put_locked(impl, size, resource, keep, &unused);
  cmr_binning_write_end(impl);
  if (unused.ops != NULL) cmr_ref_drop(unused);
  return status;
}

/* Whether a bin of `size` is there already (the reading side). */
static bool cmr_binning_has_bin(cmr_binning_impl *impl, size_t size) {
  cmr_binning_reading reading;
  unsigned slot = cmr_binning_read_begin(impl, &reading);
  size_t position = cmr_binning_position(impl, size);
  bool there = position < impl->bin_count && impl->bins[position]->size == size;
  cmr_binning_read_end(impl, slot, &reading);
  return there;
}

/* A fixed_size bin of `size` over the upstream, unless there is one. It is
 * made before the writing side is taken: it takes its first memory from
 * the upstream, which may call this resource. */
static cmr_status cmr_binning_add_fixed_size(cmr_binning_impl *impl, size_t size) {
  if (cmr_binning_has_bin(impl, size)) return CMR_SUCCESS; /* kept: none is made in vain */
  cmr_fixed_size_resource *handle;
  cmr_status status = cmr_fixed_size_resource_create(impl->upstream.held.ref, CMR_SIZE(size), CMR_SIZE_DEFAULT,
                                                     CMR_FIXED_SIZE_CAPTURE_SERVE, &handle);
  if (status != CMR_SUCCESS) return cmr_error_context(status, "binning: making a bin of %zu bytes", size);
  cmr_resource_ref bin = cmr_fixed_size_resource_ref(handle);
  /* The creator's share of the new bin is the one handed to the table. */
  status = cmr_handle_hand_over(handle, "binning: a bin");
  if (status != CMR_SUCCESS) {
    cmr_fixed_size_resource_destroy(handle);
    return status;
  }
  return cmr_binning_put(impl, size, bin, true);
}

cmr_status cmr_binning_impl_add_bin(cmr_binning_impl *impl, size_t allocation_size) {
  size_t size = 0;
  cmr_status status = cmr_binning_round(allocation_size, &size);
  if (status == CMR_SUCCESS) status = cmr_binning_check_not_reading(impl, "binning: add_bin");
  if (status == CMR_SUCCESS) status = cmr_binning_add_fixed_size(impl, size);
  return status;
}

cmr_status cmr_binning_impl_add_bin_resource(cmr_binning_impl *impl, size_t allocation_size,
                                             cmr_resource_ref resource) {
  size_t size = 0;
  cmr_status status = cmr_binning_round(allocation_size, &size);
  if (status == CMR_SUCCESS) status = cmr_binning_check_not_reading(impl, "binning: add_bin_resource");
  /* Held before the writing side is taken, and before the bin it replaces
   * is dropped: it may be the same resource. */
  if (status == CMR_SUCCESS) status = cmr_ref_hold(resource, "binning: add_bin_resource");
  if (status != CMR_SUCCESS) return status;
  /* Any accessibility is accepted, as RMM does: the resource's properties
   * are what its upstream and bins share (cmr_binning_impl_properties), so a
   * caller that requires a property sees it missing then. */
  return cmr_binning_put(impl, size, resource, false);
}

/* ---- lifetime and queries ------------------------------------------------------------ */

/* What the upstream and every bin share: memory of any size is accessible there. */
unsigned cmr_binning_impl_properties(const cmr_binning_impl *impl) {
  cmr_binning_impl *guarded = (cmr_binning_impl *)impl; /* the lock is state, not the resource's value */
  cmr_binning_reading reading;
  unsigned slot = cmr_binning_read_begin(guarded, &reading);
  unsigned shared = cmr_ref_properties_of(impl->upstream.held.ref);
  for (size_t i = 0; i < impl->bin_count; ++i) shared &= cmr_ref_properties_of(impl->bins[i]->held.ref);
  cmr_binning_read_end(guarded, slot, &reading);
  return shared;
}

void cmr_binning_impl_visit_children(const cmr_binning_impl *impl, cmr_child_visitor visit, void *arg) {
  cmr_binning_impl *guarded = (cmr_binning_impl *)impl; /* the lock is state, not the resource's value */
  cmr_binning_reading reading;
  unsigned slot = cmr_binning_read_begin(guarded, &reading);
  for (size_t i = 0; i < impl->bin_count; ++i) visit(impl->bins[i]->held.ref, arg);
  cmr_binning_read_end(guarded, slot, &reading);
}

void cmr_binning_impl_fini(cmr_binning_impl *impl) {
  for (size_t i = 0; i < impl->bin_count; ++i) {
    cmr_ref_drop(impl->bins[i]->held.ref);
    free(impl->bins[i]);
  }
  free(impl->bins);
  pthread_mutex_destroy(&impl->writers);
}

/* One fixed_size bin per power of two 2^min..2^max; none when both are -1
 * (the wrapper's checks allow only that or both in [8, 40]). */
static cmr_status cmr_binning_add_exponent_bins(cmr_binning_impl *impl, int min_size_exponent, int max_size_exponent) {
  if (min_size_exponent == -1) return CMR_SUCCESS;
  for (int exponent = min_size_exponent; exponent <= max_size_exponent; ++exponent) {
    cmr_status status = cmr_binning_add_fixed_size(impl, (size_t)1 << exponent);
    if (status != CMR_SUCCESS) return status;
  }
  return CMR_SUCCESS;
}

cmr_status cmr_binning_impl_init(cmr_binning_impl *impl) {
  /* The wrapper holds a share of the upstream for the resource's life. */
  cmr_held_set(&impl->upstream.held, impl->params.upstream);
  cmr_binning_index(impl); /* every size to the upstream, until bins come */
  cmr_status status = cmr_mutex_init(&impl->writers, "binning");
  if (status != CMR_SUCCESS) return status;
  status = cmr_binning_add_exponent_bins(impl, impl->params.min_size_exponent, impl->params.max_size_exponent);
  if (status != CMR_SUCCESS) cmr_binning_impl_fini(impl);
  return status;
}

cmr_status cmr_binning_impl_bin_count(cmr_binning_impl *impl, size_t *out) {
  cmr_binning_reading reading;
  unsigned slot = cmr_binning_read_begin(impl, &reading);
  *out = impl->bin_count;
  cmr_binning_read_end(impl, slot, &reading);
  return CMR_SUCCESS;
}

cmr_status cmr_binning_impl_bin_size_for(cmr_binning_impl *impl, size_t allocation_size, size_t *out) {
  cmr_binning_reading reading;
  unsigned slot = cmr_binning_read_begin(impl, &reading);
  cmr_route *route = cmr_binning_route(impl, allocation_size);
  *out = route == &impl->upstream ? 0 : route->size;
  cmr_binning_read_end(impl, slot, &reading);
  return CMR_SUCCESS;
}

/* A bin's own largest free block, when it is one of cmr's resources that
 * tell (by its type, through its public getter); 0 for any other. */
static size_t cmr_binning_bin_largest(cmr_resource_ref bin) {
  const char *type = bin.ops->type_name != NULL ? bin.ops->type_name : "";
  size_t largest = 0;
#define CMR_BIN_LARGEST(kind)                                                                     \
  if (strcmp(type, #kind) == 0) {                                                                 \
    cmr_##kind##_resource *handle = NULL;                                                         \
    if (cmr_##kind##_resource_from_ref(bin, &handle) == CMR_SUCCESS) {                            \
      if (cmr_##kind##_resource_largest_free_block(handle, &largest) != CMR_SUCCESS) largest = 0; \
      cmr_##kind##_resource_destroy(handle);                                                      \
    }                                                                                             \
  }
  CMR_BIN_LARGEST(fixed_size)
  CMR_BIN_LARGEST(pool)
  CMR_BIN_LARGEST(arena)
  CMR_BIN_LARGEST(binning)
#undef CMR_BIN_LARGEST
  return largest;
}

/* A bin serves the requests above the next smaller bin's size up to its own. */
cmr_status cmr_binning_impl_largest_free_block(cmr_binning_impl *impl, size_t *out) {
  cmr_binning_reading reading;
  unsigned slot = cmr_binning_read_begin(impl, &reading);
  *out = 0;
  for (size_t i = 0; i < impl->bin_count; ++i) {
    size_t below = i > 0 ? impl->bins[i - 1]->size : 0;
    size_t largest = cmr_binning_bin_largest(impl->bins[i]->held.ref);
    if (largest > impl->bins[i]->size) largest = impl->bins[i]->size;
    if (largest > below && largest > *out) *out = largest;
  }
  cmr_binning_read_end(impl, slot, &reading);
  return CMR_SUCCESS;
}
