/* SPDX-License-Identifier: Apache-2.0 */
/* The memory a suballocator has taken from its upstream, in chunks: growth
 * within a maximum, with smaller retries when the upstream is short, and
 * every chunk handed back at the end. Thread-safe. */
#ifndef CMR_CHUNKS_H
#define CMR_CHUNKS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "internal.h"
#include "usage.h"

typedef struct cmr_chunk {
  void *address;
  size_t size;
  cmr_stream stream; /* the stream it was taken on (cmr_chunks_grow sets it) */
} cmr_chunk;

typedef struct cmr_chunks {
  const char *owner; /* names the resource in messages */
  cmr_resource_ref upstream;
  size_t maximum; /* most bytes in all; SIZE_MAX for no limit */
  pthread_mutex_t lock;
  cmr_chunk *items;
  size_t count;
  size_t capacity;
  _Atomic size_t bytes;
  size_t asking; /* bytes an upstream call under way may add (lock held to read or change) */
  size_t peak;   /* the most bytes held at once since init or the last reset (lock held) */
} cmr_chunks;

/* Fails only when the lock cannot be made (cmr_mutex_init), leaving nothing to release. */
cmr_status cmr_chunks_init(cmr_chunks *chunks, const char *owner, cmr_resource_ref upstream, size_t maximum);
/* Hands every chunk back to the upstream, once the device has finished the
 * work queued on them (this is the owner's end). */
void cmr_chunks_release_all(cmr_chunks *chunks);

/* Takes one chunk on `stream` of `preferred` bytes, or, when the upstream is
 * out of memory, of halves of it down to `least` (both multiples of 256,
 * least <= preferred), never passing the maximum. CMR_ERROR_OUT_OF_MEMORY,
 * with a message saying which limit was hit, when not even `least` fits.
 * The upstream is called with the lock let go (what it is asked for counts
 * against the maximum meanwhile): a call back into the owner from inside it
 * that gives a chunk back, or reads the chunks, does not wait for itself. */
cmr_status cmr_chunks_grow(cmr_chunks *chunks, size_t least, size_t preferred, cmr_stream stream, cmr_chunk *out);

/* Hands `chunk` back to the upstream (ordered on `stream`): one just taken
 * on `stream` and not yet used (a grower that cannot put it to use, so that
 * it neither sits idle until the end nor counts against the maximum), or
 * one wholly free whose work the host has waited for (a release), or one
 * wholly free whose work is ordered on `stream` (a trim). When the upstream
 * refuses it, its status comes back and the chunk stays recorded and
 * counted: still the owner's, handed back at the end. */
cmr_status cmr_chunks_give_back(cmr_chunks *chunks, const cmr_chunk *chunk, cmr_stream stream);

/* The chunk `address` lies in, into *out; false when none holds it. Takes
 * the lock (a look through every chunk). */
bool cmr_chunks_find(cmr_chunks *chunks, const void *address, cmr_chunk *out);

/* Bytes taken so far (inline: read on every free of a resource with a
 * release threshold). */
static inline size_t cmr_chunks_bytes(cmr_chunks *chunks) {
  return atomic_load_explicit(&chunks->bytes, memory_order_relaxed);
}
/* Bytes held now and at peak, and how many chunks, into *out (cmr_stats). */
void cmr_chunks_stats(cmr_chunks *chunks, cmr_stats *out);
/* Sets the peak of bytes held to the bytes held now. */
void cmr_chunks_reset_peak(cmr_chunks *chunks);

/* Invariants (invariants.h), the lock held or the chunks unshared: no more
 * records than room, each chunk a nonzero size at a non-NULL address, no
 * two overlapping, `bytes` their sum and within the maximum. Each growth
 * and give-back checks the chunk it changed against the others, and the
 * whole record while there are at most 1,024 chunks. False, with the
 * broken invariant in *why, when one does not hold. */
bool cmr_chunks_valid(const cmr_chunks *chunks, const char **why);
/* Whether [address, address + size) lies inside one chunk (a block a
 * suballocator cut from them must); false with the reason in *why. Takes
 * the lock. */
bool cmr_chunks_hold(cmr_chunks *chunks, const void *address, size_t size, const char **why);

#endif /* CMR_CHUNKS_H */
