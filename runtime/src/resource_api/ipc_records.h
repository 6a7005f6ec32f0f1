/* SPDX-License-Identifier: Apache-2.0 */
/* Export records (ipc_records.c): how an importer learns, before it maps a
 * buffer another process exported, that the exporter has freed it, which
 * the driver does not promise to report (its import of a freed pool
 * pointer may succeed, over memory the pool has handed out again).
 *
 * The exporting resource keeps a table in a memfd, which it shares with
 * its importers as a second file descriptor beside its pool's: a header
 * (magic, version, a random token naming the table, its capacity, and
 * whether the exporter destroyed its pool) and slots, each one atomic word,
 * generation << 1 | live. An export records the pointer in a slot (the
 * same slot while the pointer stays live) and hands out (token, slot,
 * generation) in its descriptor; a free clears the slot and moves its
 * generation on. The importer maps the table read-only at each import and
 * refuses a descriptor whose slot is no longer that live generation. Pure
 * POSIX (Linux's memfd_create and file seals), in both builds.
 *
 * It is a check at import, not a guarantee: a free racing with the import
 * is still the exporter's misuse (cmr/ipc.h), which the check may miss. */
#ifndef CMR_IPC_RECORDS_H
#define CMR_IPC_RECORDS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "address_map.h"
#include "errors.h"

/* What an export hands the importer: which table, which slot, which of the
 * slot's generations. */
typedef struct cmr_ipc_record {
  uint64_t token;
  uint64_t slot;
  uint64_t generation;
} cmr_ipc_record;

struct cmr_ipc_table; /* the shared file's layout (ipc_records.c) */

/* The exporter's side, embedded in its resource's struct. Zero-filled, it
 * is a table never made (cmr_ipc_records_made is false). Thread-safe. */
typedef struct cmr_ipc_records {
  /* Whether anything was ever recorded: the one load of a free of a resource
   * that never exported (cmr_ipc_records_forget). */
  atomic_bool recorded;
  pthread_mutex_t lock; /* the rest, and every write to the table */
  int file;             /* the memfd */
  struct cmr_ipc_table *table;
  uint64_t capacity;         /* slots mapped, all in the file */
  uint64_t slots_used;       /* slots handed out so far: those past it are fresh */
  cmr_address_map exports;   /* each live exported pointer -> its slot */
  cmr_address_entry *spares; /* exports forgotten, each keeping its slot for the next one */
  const char *owner;         /* the resource's name, for messages */
} cmr_ipc_records;

/* Makes the table: a memfd sealed against shrinking, mapped, with a random
 * token. CMR_ERROR_IO (no memfd, no room for it) or CMR_ERROR_OUT_OF_MEMORY,
 * naming `owner`. */
cmr_status cmr_ipc_records_init(cmr_ipc_records *records, const char *owner);
/* Marks the pool destroyed in the table (importers refuse every descriptor
 * from then on), then unmaps and closes the exporter's side; the file lives
 * on while importers hold it. A table never made is left alone. */
void cmr_ipc_records_fini(cmr_ipc_records *records);
static inline bool cmr_ipc_records_made(const cmr_ipc_records *records) { return records->table != NULL; }

/* A new file descriptor of the table (close-on-exec) for an importer,
 * which the caller owns and closes; CMR_ERROR_IO when none can be made. */
cmr_status cmr_ipc_records_share(cmr_ipc_records *records, int *out);
/* Records that `ptr` is exported: its record in *out, the same as its last
 * one while it has not been forgotten since. Grows the table when it is
 * full (CMR_ERROR_IO or CMR_ERROR_OUT_OF_MEMORY when it cannot). */
cmr_status cmr_ipc_records_record(cmr_ipc_records *records, const void *ptr, cmr_ipc_record *out);

/* cmr_ipc_records_forget once something was recorded (out of line). */
void cmr_ipc_records_forget_recorded(cmr_ipc_records *records, const void *ptr);
/* A free of `ptr`: if it is recorded, its slot stops being live and moves to
 * its next generation. One relaxed load where nothing was ever recorded: a
 * free that races with the first export of its own pointer is the caller's
 * race, and any free ordered after an export sees it. */
static inline void cmr_ipc_records_forget(cmr_ipc_records *records, const void *ptr) {
  if (atomic_load_explicit(&records->recorded, memory_order_relaxed)) cmr_ipc_records_forget_recorded(records, ptr);
}

/* ---- the importer's side: a table another process shares, by its file descriptor ---- */

/* Whether `file` is open and an export record table (mapped for the check,
 * then unmapped): CMR_ERROR_INVALID_ARGUMENT saying why not (closed, not a
 * sealed regular file, another magic or version), CMR_ERROR_OUT_OF_MEMORY
 * when it cannot be mapped for want of memory; "<what>: ..." in messages. */
cmr_status cmr_ipc_records_check_file(int file, const char *what);
/* Whether the export `record` names is still live in the table `file`:
 * CMR_SUCCESS; CMR_ERROR_IPC_GONE, saying which, where the record is of
 * another table (its token), the exporter destroyed its pool, or freed the
 * allocation (its slot free, or live with a later generation);
 * CMR_ERROR_INVALID_ARGUMENT for a record no export of this table wrote (a
 * slot past the table, a generation it never reached); else as
 * cmr_ipc_records_check_file. */
cmr_status cmr_ipc_records_check_export(int file, const cmr_ipc_record *record, const char *what);

#endif /* CMR_IPC_RECORDS_H */
