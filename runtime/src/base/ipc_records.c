/* SPDX-License-Identifier: Apache-2.0 */
/* Export records (ipc_records.h): the exporter's table in a memfd, and the
 * importer's check of one export against it. */
#define _GNU_SOURCE /* memfd_create, F_ADD_SEALS, F_GET_SEALS */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ipc_records.h"
#include "lock.h"

/* ---- the shared file ---------------------------------------------------------------- */

static const uint64_t cmr_table_magic = 0x636d722d72656373ull; /* "cmr-recs" */
enum { cmr_table_version = 1, cmr_table_first_bytes = 4096 };

/* The file: this header, then `capacity` slots, each generation << 1 | live.
 * It only grows (sealed against shrinking), so a reader's mapping never
 * outlasts the file under it. */
typedef struct cmr_ipc_table {
  uint64_t magic;
  uint64_t version;
  uint64_t token;             /* random: tells one table's descriptors from another's */
  _Atomic uint64_t capacity;  /* slots in the file, published once the file holds them */
  _Atomic uint64_t destroyed; /* 1 once the exporter destroyed its pool */
  uint64_t reserved[3];       /* the slots start at 64 */
  _Atomic uint64_t slots[];
} cmr_ipc_table;
_Static_assert(offsetof(cmr_ipc_table, slots) == 64, "the table's header is 64 bytes");
/* Two processes work on the same words: only lock-free atomics are plain memory. */
_Static_assert(ATOMIC_LONG_LOCK_FREE == 2 && ATOMIC_LLONG_LOCK_FREE == 2, "64-bit atomics are lock-free");

static size_t cmr_table_bytes(uint64_t slots) { return offsetof(cmr_ipc_table, slots) + slots * sizeof(uint64_t); }
static uint64_t cmr_table_slots(size_t bytes) { return (bytes - offsetof(cmr_ipc_table, slots)) / sizeof(uint64_t); }

static const uint64_t cmr_slot_live = 1;

/* ---- the exporter's side -------------------------------------------------------------- */

/* One exported pointer and its slot. Once forgotten it waits in the spares,
 * chained through entry.next, keeping its slot for the next export. */
typedef struct cmr_ipc_export {
  cmr_address_entry entry; /* first: keyed by the pointer */
  uint64_t slot;
} cmr_ipc_export;

static void cmr_export_free(cmr_address_entry *entry) { free(entry); }

/* A failed system call while `doing`: out of memory, or a file that cannot be made or grown. */
static cmr_status cmr_records_failure(const cmr_ipc_records *records, const char *doing, int error) {
  return cmr_error(error == ENOMEM ? CMR_ERROR_OUT_OF_MEMORY : CMR_ERROR_IO, "%s: export records: %s: %s",
                   records->owner, doing, strerror(error));
}

/* The memfd, sealed against shrinking, and its mapping, with the header written. */
static cmr_status cmr_table_make(cmr_ipc_records *records) {
  uint64_t token = 0;
  if (getrandom(&token, sizeof token, 0) != (ssize_t)sizeof token) {
    return cmr_records_failure(records, "drawing a random token (getrandom)", errno);
  }
  records->file = memfd_create("cmr-ipc-records", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (records->file < 0) return cmr_records_failure(records, "making its file (memfd_create)", errno);
  void *mapped = MAP_FAILED;
  const char *doing = "sizing its file (ftruncate)";
  if (ftruncate(records->file, cmr_table_first_bytes) == 0) {
    doing = "sealing its file against shrinking";
    if (fcntl(records->file, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_SEAL) == 0) {
      doing = "mapping its file";
      mapped = mmap(NULL, cmr_table_first_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, records->file, 0);
    }
  }
  if (mapped == MAP_FAILED) {
    cmr_status status = cmr_records_failure(records, doing, errno);
    close(records->file);
    return status;
  }
  records->table = mapped; /* zero-filled by the kernel: every slot free at generation 0 */
  records->table->magic = cmr_table_magic;
  records->table->version = cmr_table_version;
  records->table->token = token;
  records->capacity = cmr_table_slots(cmr_table_first_bytes);
  atomic_store_explicit(&records->table->capacity, records->capacity, memory_order_release);
  return CMR_SUCCESS;
}

cmr_status cmr_ipc_records_init(cmr_ipc_records *records, const char *owner) {
  records->owner = owner;
  cmr_status status = cmr_mutex_init(&records->lock, owner);
  if (status != CMR_SUCCESS) return status;
  status = cmr_address_map_init(&records->exports, owner);
  if (status == CMR_SUCCESS) {
    status = cmr_table_make(records);
    if (status != CMR_SUCCESS) cmr_address_map_clear(&records->exports, cmr_export_free);
  }
  if (status != CMR_SUCCESS) pthread_mutex_destroy(&records->lock);
  return status;
}

void cmr_ipc_records_fini(cmr_ipc_records *records) {
  if (!cmr_ipc_records_made(records)) return;
  atomic_store_explicit(&records->table->destroyed, 1, memory_order_release);
  munmap(records->table, cmr_table_bytes(records->capacity));
  close(records->file);
  records->table = NULL;
  cmr_address_map_clear(&records->exports, cmr_export_free);
  while (records->spares != NULL) {
    cmr_address_entry *spare = records->spares;
    records->spares = spare->next;
    free(spare);
  }
  pthread_mutex_destroy(&records->lock);
}

cmr_status cmr_ipc_records_share(cmr_ipc_records *records, int *out) {
  *out = fcntl(records->file, F_DUPFD_CLOEXEC, 0);
  return *out >= 0 ? CMR_SUCCESS : cmr_records_failure(records, "duplicating its file descriptor", errno);
}

/* Doubles the file, then maps it anew: the old mapping goes once the new one
 * is made, and readers learn of the new slots only once the file has them. */
static cmr_status cmr_table_grow(cmr_ipc_records *records) {
  const size_t bytes = cmr_table_bytes(records->capacity);
  if (bytes > SIZE_MAX / 2) return cmr_records_failure(records, "growing past its size", ENOMEM);
  if (ftruncate(records->file, (off_t)(2 * bytes)) != 0) return cmr_records_failure(records, "growing its file", errno);
  void *mapped = mmap(NULL, 2 * bytes, PROT_READ | PROT_WRITE, MAP_SHARED, records->file, 0);
  if (mapped == MAP_FAILED) return cmr_records_failure(records, "mapping its grown file", errno);
  munmap(records->table, bytes);
  records->table = mapped;
  records->capacity = cmr_table_slots(2 * bytes);
  atomic_store_explicit(&records->table->capacity, records->capacity, memory_order_release);
  return CMR_SUCCESS;
}

/* A record for `ptr`, not yet in the map: a spare's slot, else the next
 * fresh one (the table grown when it has none left). */
static cmr_status cmr_export_new(cmr_ipc_records *records, const void *ptr, cmr_ipc_export **out) {
  cmr_ipc_export *export = (cmr_ipc_export *)records->spares;
  if (export != NULL) {
    records->spares = export->entry.next;
  } else {
    cmr_status status = records->slots_used < records->capacity ? CMR_SUCCESS : cmr_table_grow(records);
    if (status != CMR_SUCCESS) return status;
    export = malloc(sizeof *export);
    if (export == NULL) return cmr_records_failure(records, "recording an export", ENOMEM);
    export->slot = records->slots_used++;
  }
  export->entry.address = ptr;
  export->entry.tag = NULL;
  cmr_address_map_insert(&records->exports, &export->entry);
  _Atomic uint64_t *slot = &records->table->slots[export->slot];
  atomic_store_explicit(slot, atomic_load_explicit(slot, memory_order_relaxed) | cmr_slot_live, memory_order_release);
  *out = export;
  return CMR_SUCCESS;
}

cmr_status cmr_ipc_records_record(cmr_ipc_records *records, const void *ptr, cmr_ipc_record *out) {
  cmr_mutex_lock(&records->lock);
  cmr_ipc_export *export = (cmr_ipc_export *)cmr_address_map_find(&records->exports, ptr, NULL);
  cmr_status status = export != NULL ? CMR_SUCCESS : cmr_export_new(records, ptr, &export);
  if (status == CMR_SUCCESS) {
    const uint64_t word = atomic_load_explicit(&records->table->slots[export->slot], memory_order_relaxed);
    *out = (cmr_ipc_record){records->table->token, export->slot, word >> 1};
    atomic_store_explicit(&records->recorded, true, memory_order_relaxed);
  }
  cmr_mutex_unlock(&records->lock);
  return status;
}

void cmr_ipc_records_forget_recorded(cmr_ipc_records *records, const void *ptr) {
  cmr_mutex_lock(&records->lock);
  cmr_ipc_export *export = (cmr_ipc_export *)cmr_address_map_remove(&records->exports, ptr, NULL);
  if (export != NULL) {
    _Atomic uint64_t *slot = &records->table->slots[export->slot];
    const uint64_t generation = atomic_load_explicit(slot, memory_order_relaxed) >> 1;
    atomic_store_explicit(slot, (generation + 1) << 1, memory_order_release); /* free, at the next generation */
    export->entry.next = records->spares;
    records->spares = &export->entry;
  }
  cmr_mutex_unlock(&records->lock);
}

/* ---- the importer's side ---------------------------------------------------------------- */

/* Another process's table, mapped read-only for one check. */
typedef struct cmr_table_view {
  cmr_ipc_table *table;
  size_t bytes;
  uint64_t slots; /* the slots the header says the file has, as far as the mapping holds them */
} cmr_table_view;

static cmr_status cmr_not_a_table(int file, const char *what, const char *why) {
  return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "%s: records_file_descriptor %d is not an export record table (%s)",
                   what, file, why);
}

/* The file `file` names, if it can be a table: open, a regular file sealed
 * against shrinking (a memfd), with room for the header. */
static cmr_status cmr_table_file(int file, const char *what, struct stat *info) {
  if (file < 0 || fstat(file, info) != 0) {
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT,
                     "%s: records_file_descriptor %d is not open (closed, or never received)", what, file);
  }
  if (!S_ISREG(info->st_mode)) return cmr_not_a_table(file, what, "not a regular file");
  if (info->st_size < (off_t)sizeof(cmr_ipc_table)) return cmr_not_a_table(file, what, "shorter than its header");
  const int seals = fcntl(file, F_GET_SEALS);
  if (seals < 0 || !(seals & F_SEAL_SHRINK)) return cmr_not_a_table(file, what, "a file that may shrink");
  return CMR_SUCCESS;
}

static cmr_status cmr_table_view_open(int file, const char *what, cmr_table_view *view) {
  struct stat info;
  cmr_status status = cmr_table_file(file, what, &info);
  if (status != CMR_SUCCESS) return status;
  view->bytes = (size_t)info.st_size;
  void *mapped = mmap(NULL, view->bytes, PROT_READ, MAP_SHARED, file, 0);
  if (mapped == MAP_FAILED) {
    if (errno == ENOMEM) return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "%s: no room to map the export records", what);
    return cmr_not_a_table(file, what, strerror(errno));
  }
  view->table = mapped;
  if (view->table->magic != cmr_table_magic || view->table->version != cmr_table_version) {
    status = cmr_not_a_table(file, what, view->table->magic != cmr_table_magic ? "another magic" : "another version");
    munmap(mapped, view->bytes);
    return status;
  }
  const uint64_t capacity = atomic_load_explicit(&view->table->capacity, memory_order_acquire);
  const uint64_t mapped_slots = cmr_table_slots(view->bytes);
  view->slots = capacity < mapped_slots ? capacity : mapped_slots;
  return CMR_SUCCESS;
}

static void cmr_table_view_close(cmr_table_view *view) { munmap(view->table, view->bytes); }

cmr_status cmr_ipc_records_check_file(int file, const char *what) {
  cmr_table_view view = {0};
  cmr_status status = cmr_table_view_open(file, what, &view);
  if (status == CMR_SUCCESS) cmr_table_view_close(&view);
  return status;
}

/* The answer of an open view for `record`. */
static cmr_status cmr_table_answer(cmr_table_view *view, const cmr_ipc_record *record, const char *what) {
  cmr_ipc_table *table = view->table;
  if (record->token != table->token) {
    return cmr_error(CMR_ERROR_IPC_GONE,
                     "%s: the descriptor was exported from another pool than the one these records are of (token "
                     "%#llx, the records' %#llx)",
                     what, (unsigned long long)record->token, (unsigned long long)table->token);
  }
  if (atomic_load_explicit(&table->destroyed, memory_order_acquire)) {
    return cmr_error(CMR_ERROR_IPC_GONE, "%s: the exporter destroyed the pool", what);
  }
  const unsigned long long slot = record->slot, generation = record->generation;
  if (record->slot >= view->slots) {
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT,
                     "%s: slot %llu is past the %llu of the exporter's records: not a descriptor an export wrote", what,
                     slot, (unsigned long long)view->slots);
  }
  const uint64_t word = atomic_load_explicit(&table->slots[record->slot], memory_order_acquire);
  const unsigned long long now = word >> 1;
  const bool live = word & cmr_slot_live;
  if (now == generation && live) return CMR_SUCCESS;
  if (now > generation && !live) {
    return cmr_error(CMR_ERROR_IPC_GONE, "%s: the exporter freed the allocation (its record, slot %llu, is free)", what,
                     slot);
  }
  if (now > generation) {
    return cmr_error(CMR_ERROR_IPC_GONE,
                     "%s: the exporter freed the allocation (slot %llu now records a later export: generation %llu, "
                     "the descriptor's %llu)",
                     what, slot, now, generation);
  }
  return cmr_error(CMR_ERROR_INVALID_ARGUMENT,
                   "%s: slot %llu never held generation %llu live (it is at %llu): not a descriptor an export wrote",
                   what, slot, generation, now);
}

cmr_status cmr_ipc_records_check_export(int file, const cmr_ipc_record *record, const char *what) {
  cmr_table_view view = {0};
  cmr_status status = cmr_table_view_open(file, what, &view);
  if (status != CMR_SUCCESS) return status;
  status = cmr_table_answer(&view, record, what);
  cmr_table_view_close(&view);
  return status;
}
