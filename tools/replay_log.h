/* SPDX-License-Identifier: Apache-2.0 */
/* An allocation log in RMM's CSV format (as RMM's logging_resource_adaptor
 * and cmr's logging adaptor write it), read into memory with every free
 * paired with its allocation: what cmr-replay and the fragmentation
 * benchmark replay. A log may be gzip-compressed (.csv.gz) where the build
 * has zlib (CMR_REPLAY_WITH_ZLIB); without it such a log is refused with a
 * message saying to decompress it. */
#ifndef CMR_REPLAY_LOG_H
#define CMR_REPLAY_LOG_H

#include <cmr/cmr.h>
#include <cmr/stack.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LOG_HEADER "Thread,Time,Action,Pointer,Size,Stream"

typedef enum cmr_log_action { ACTION_ALLOCATE, ACTION_FREE, ACTION_FAILURE } cmr_log_action;

typedef struct cmr_log_event {
  cmr_log_action action;
  unsigned thread; /* replay thread */
  size_t line;
  size_t size;
  uintptr_t pointer; /* as logged */
  size_t pair;       /* a free: its allocation's cmr_log_event */
  void *replayed;    /* an allocation: the replayed pointer (NULL when it failed) */
  bool freed;        /* an allocation: the log frees it */
} cmr_log_event;

typedef struct cmr_replay_log {
  const char *program; /* names the reader in messages */
  const char *path;
  cmr_log_event *events;
  size_t count;
  size_t capacity;
  unsigned long long *thread_ids; /* logged id of each replay thread */
  unsigned thread_count;
  size_t allocations, frees, logged_failures;
  size_t leaks, leaked_bytes;
} cmr_replay_log;

/* Reads and pairs the log at `path`: 0, or 1 with the reason on stderr as
 * "<program>: <path>:<line>: ..." (a row that is not RMM's, a free of what
 * is not allocated or of another size, a pointer allocated twice). Rows
 * logged as "allocate failure" are kept (ACTION_FAILURE) and counted, never
 * paired. Free the log with cmr_replay_log_free, whatever the result. */
int cmr_replay_log_read(const char *program, const char *path, cmr_replay_log *log);
void cmr_replay_log_free(cmr_replay_log *log);
/* An unsigned number filling all of `text` in `base` (16 also takes a 0x). */
bool cmr_replay_parse_number(const char *text, int base, unsigned long long *out);

/* The most bytes a stack held from below at once: the simulated leaf's
 * peak in use where the leaf is simulated (cmr-replay --simulated, the
 * fragmentation benchmark); else the peak of held bytes the leaf's own
 * statistics give, for a leaf that holds memory itself (cuda_async's
 * driver pool, expandable's committed granules); false where neither is
 * known (a plain cuda or system leaf). */
bool cmr_replay_held_peak(const cmr_stack *stack, size_t *out);

#endif /* CMR_REPLAY_LOG_H */
