/* SPDX-License-Identifier: Apache-2.0 */
/* What a leaf resource handed out, so that it can vouch for a free before
 * it reaches free(), cudaFree or a user's function: each live pointer with
 * the size it was allocated with and a tag of whom it belongs to, in a
 * sharded map (sharded_map.h). A free of a pointer not in the ledger
 * (foreign, static, interior, already freed, another tag's) is
 * CMR_ERROR_UNKNOWN_POINTER; of a known pointer with another size,
 * CMR_ERROR_INVALID_ARGUMENT; either way nothing changes.
 *
 * A zero-filled cmr_ledger is an empty one, so resources that are
 * interchangeable by type (system, cuda, ...) share one ledger in static
 * storage, and memory from one is freed through another as is_equal
 * promises; a resource that only vouches for itself makes its own with
 * cmr_ledger_create. Thread-safe. */
#ifndef CMR_LEDGER_H
#define CMR_LEDGER_H

#include "sharded_map.h"

typedef struct cmr_ledger {
  cmr_sharded_map records;
} cmr_ledger;

/* One handed-out pointer. */
typedef struct cmr_ledger_entry {
  cmr_address_entry key; /* first: the pointer and the tag */
  size_t bytes;
} cmr_ledger_entry;

/* Ledgers in static storage that every resource of a type shares, made
 * known with CMR_SHARE_LEDGERS so that a fork finds them: their locks are
 * taken over the fork (fork.h), and the child's resources of that type use
 * them as the parent's did. */
typedef struct cmr_shared_ledgers {
  cmr_ledger *first;
  size_t count;
  struct cmr_shared_ledgers *next;
} cmr_shared_ledgers;

void cmr_ledgers_share(cmr_shared_ledgers *shared);

/* At file scope, after the ledgers: `count` ledgers from `first`, known by
 * `name` (an identifier). */
#define CMR_SHARE_LEDGERS(name, first_ledger, ledger_count)                                   \
  static cmr_shared_ledgers cmr_##name##_shared_ledgers = {first_ledger, ledger_count, NULL}; \
  __attribute__((constructor)) static void cmr_##name##_share_ledgers(void) {                 \
    cmr_ledgers_share(&cmr_##name##_shared_ledgers);                                          \
  }

/* A ledger of its own on the heap (CMR_ERROR_OUT_OF_MEMORY, naming `owner`). */
cmr_status cmr_ledger_create(const char *owner, cmr_ledger **out);
/* Frees the ledger and the entries still in it (their memory is not touched). */
void cmr_ledger_destroy(cmr_ledger *ledger);

/* How a leaf obtains and releases its memory, called by the two below. */
typedef struct cmr_ledger_memory {
  cmr_status (*obtain)(void *impl, size_t bytes, size_t alignment, cmr_stream stream, void **out);
  cmr_status (*release)(void *impl, void *ptr, size_t bytes, size_t alignment, cmr_stream stream);
} cmr_ledger_memory;

/* Obtains `bytes` and records them with `tag` (the record is made first, so
 * that no memory is ever obtained that cannot be recorded). `owner` names
 * the resource in messages. */
cmr_status cmr_ledger_allocate(cmr_ledger *ledger, const char *owner, const void *tag, const cmr_ledger_memory *memory,
                               void *impl, size_t bytes, size_t alignment, cmr_stream stream, void **out);
/* Releases `ptr` only if it is recorded with `tag` and `bytes`, else the
 * status above and nothing changes; if the release fails, it stays recorded. */
cmr_status cmr_ledger_deallocate(cmr_ledger *ledger, const char *owner, const void *tag,
                                 const cmr_ledger_memory *memory, void *impl, void *ptr, size_t bytes, size_t alignment,
                                 cmr_stream stream);

/* The steps of the two above, for a caller that obtains and releases
 * otherwise (grants.c). Records (`ptr`, `tag`) with `bytes`, in an entry
 * kept from an earlier cmr_ledger_discard when its shard has one (no host
 * memory is asked for then); CMR_ERROR_OUT_OF_MEMORY, naming `owner`. */
cmr_status cmr_ledger_add(cmr_ledger *ledger, const char *owner, void *ptr, const void *tag, size_t bytes);
/* Takes out the entry of (`ptr`, `tag`) if it was recorded with `bytes`:
 * CMR_SUCCESS and the entry in *out, for cmr_ledger_put_back or
 * cmr_ledger_discard. Else nothing changes and, with no message set,
 * CMR_ERROR_UNKNOWN_POINTER (no such entry) or CMR_ERROR_INVALID_ARGUMENT
 * (*recorded: its bytes). */
cmr_status cmr_ledger_take(cmr_ledger *ledger, const void *tag, const void *ptr, size_t bytes, cmr_ledger_entry **out,
                           size_t *recorded);
/* Files a taken entry again; never fails (its shard has a table). */
void cmr_ledger_put_back(cmr_ledger *ledger, cmr_ledger_entry *entry);
/* Done with a taken entry: kept for a later cmr_ledger_add, or freed. */
void cmr_ledger_discard(cmr_ledger *ledger, cmr_ledger_entry *entry);

#endif /* CMR_LEDGER_H */
