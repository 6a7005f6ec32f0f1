/* SPDX-License-Identifier: Apache-2.0 */
/* Dispatch through a resource ref: every argument is checked here, once, so
 * an ops table only ever sees bytes > 0, a power-of-two alignment of at least
 * CMR_DEFAULT_ALIGNMENT and no overflow once bytes are rounded up to it. The
 * pointers a resource hands back are checked here too. */
#include "backend.h"
#include "held_calls.h"
#include "history.h"
#include "internal.h"
#include "resource_class.h"
#include "stats_report.h"

/* For the few functions every allocate and deallocate runs through: kept
 * in their callers so that a call through a ref costs no extra calls,
 * prologues or argument moves (GCC and clang alike; the error paths they
 * reach stay out of line). */
#define CMR_HOT_INLINE inline __attribute__((always_inline))

/* After a call into a resource, has what the fast path still needs of
 * `record` (its copy of the arguments, kept for the slow path anyway) read
 * back from the frame: a load costs less than a register saved and
 * restored across the call. */
#define CMR_READ_BACK(record) __asm__ volatile("" : "+m"(record))

/* ---- argument checks ---------------------------------------------------------- */

/* The rules, each written once; the fast paths test them inline, the
 * checked path calls them to say what is wrong. */

/* `alignment` a power of two: the one the ops table sees (at least the
 * default) in *effective. */
static inline bool cmr_plain_alignment(size_t alignment, size_t *effective) {
  *effective = alignment < CMR_DEFAULT_ALIGNMENT ? CMR_DEFAULT_ALIGNMENT : alignment;
  return (alignment & (alignment - 1)) == 0 && alignment != 0;
}

/* bytes in [1, SIZE_MAX - (alignment - 1)]: neither the zero-byte case nor
 * one that overflows once rounded up (alignment a power of two). */
static inline bool cmr_plain_size(size_t bytes, size_t alignment) { return bytes - 1 < SIZE_MAX - (alignment - 1); }

/* Checks a caller's alignment and gives the one the ops table sees. */
static cmr_status cmr_check_alignment(size_t alignment, const char *what, size_t *effective) {
  if (cmr_plain_alignment(alignment, effective)) {
    return CMR_SUCCESS;
  }
  return cmr_error(CMR_ERROR_BAD_ALIGNMENT, "%s: alignment %zu is not a power of two", what, alignment);
}

/* Checks that `bytes` (0 is for the caller to handle) do not overflow once
 * rounded up to `alignment`. */
static cmr_status cmr_check_rounding(size_t bytes, size_t alignment, const char *what) {
  if (bytes == 0 || cmr_plain_size(bytes, alignment)) {
    return CMR_SUCCESS;
  }
  return cmr_error(CMR_ERROR_SIZE_OVERFLOW, "%s: %zu bytes overflow once rounded up to alignment %zu", what, bytes,
                   alignment);
}

/* The checks shared by every allocate and deallocate: ref, alignment, size.
 * *alignment is replaced by the effective one. */
static cmr_status cmr_check_call(cmr_resource_ref ref, size_t bytes, size_t *alignment, const char *what, void **self) {
  cmr_status status = cmr_ref_target(ref, self) ? CMR_SUCCESS : cmr_ref_check(ref, what);
  if (status == CMR_SUCCESS) {
    status = cmr_check_alignment(*alignment, what, alignment);
  }
  if (status == CMR_SUCCESS) {
    status = cmr_check_rounding(bytes, *alignment, what);
  }
  return status;
}

/* Whether a call with these arguments passes every check (the pointer
 * argument, out or ptr, is the caller's to test): then the alignment the
 * ops table sees in *effective and the ref's target in *self. */
static CMR_HOT_INLINE bool cmr_plain_call(cmr_resource_ref ref, size_t bytes, size_t alignment, size_t *effective,
                                          void **self) {
  return cmr_plain_alignment(alignment, effective) && cmr_plain_size(bytes, *effective) && cmr_ref_target(ref, self);
}

/* ---- the calls ------------------------------------------------------------------- */

/* The counts of cmr's own resources (usage.h) move here, after each call of
 * an ops entry that succeeded: every call into those entries is one of
 * dispatch's, and the entries stay the algorithm's alone (a tail call). */
static CMR_HOT_INLINE cmr_status cmr_counted_allocate(cmr_resource_ref ref, void *self, cmr_status status,
                                                      size_t bytes) {
  cmr_usage *usage = cmr_usage_of(ref.ops, self);
  if (usage != NULL) cmr_usage_allocated(usage, status, bytes);
  return status;
}

static CMR_HOT_INLINE cmr_status cmr_counted_deallocate(cmr_resource_ref ref, void *self, cmr_status status,
                                                        size_t bytes) {
  cmr_usage *usage = cmr_usage_of(ref.ops, self);
  if (usage != NULL) cmr_usage_deallocated(usage, status, bytes);
  return status;
}

/* How a call reaches the resource: stream-ordered, or synchronous (the
 * resource's _sync entry, else the stream-ordered one on the default
 * stream, then a wait for it). */
typedef enum cmr_call_kind { CMR_CALL_ORDERED, CMR_CALL_SYNC } cmr_call_kind;

static CMR_HOT_INLINE cmr_status cmr_call_deallocate(cmr_call_kind kind, cmr_resource_ref ref, void *self, void *ptr,
                                                     size_t bytes, size_t alignment, cmr_stream stream) {
  if (kind == CMR_CALL_ORDERED) {
    return cmr_counted_deallocate(ref, self, ref.ops->deallocate(self, ptr, bytes, alignment, stream), bytes);
  }
  if (ref.ops->deallocate_sync != NULL) {
    return cmr_counted_deallocate(ref, self, ref.ops->deallocate_sync(self, ptr, bytes, alignment), bytes);
  }
  cmr_status status =
      cmr_counted_deallocate(ref, self, ref.ops->deallocate(self, ptr, bytes, alignment, CMR_DEFAULT_STREAM), bytes);
  return status == CMR_SUCCESS ? cmr_backend_stream_synchronize(CMR_DEFAULT_STREAM) : status;
}

/* Says what giving memory back failed with, after the failure `status`
 * whose message was kept; or restores that message when it worked. */
static cmr_status cmr_given_back(cmr_status status, const cmr_kept_message *kept, cmr_status given,
                                 unsigned long serial, const void *ptr, size_t bytes) {
  if (given == CMR_SUCCESS) {
    cmr_restore_message(kept);
    return status;
  }
  const char *why = cmr_error_serial() != serial ? cmr_last_error_message() : "(no message)";
  return cmr_error(status, "%s; giving its %zu bytes at %p back failed too: %s: %s", kept->text, bytes, ptr,
                   cmr_status_string(given), why);
}

/* cmr_give_back through the resource's own entry (dispatch's checks are done). */
static cmr_status cmr_give_back_raw(cmr_status status, cmr_call_kind kind, cmr_resource_ref ref, void *self, void *ptr,
                                    size_t bytes, size_t alignment, cmr_stream stream) {
  cmr_kept_message kept;
  cmr_keep_message(&kept);
  cmr_status given = cmr_call_deallocate(kind, ref, self, ptr, bytes, alignment, stream);
  return cmr_given_back(status, &kept, given, kept.serial, ptr, bytes);
}

cmr_status cmr_held_give_back(cmr_status status, cmr_resource_ref ref, void *self, void *ptr, size_t bytes,
                              size_t alignment, cmr_stream stream) {
  return cmr_give_back_raw(status, CMR_CALL_ORDERED, ref, self, ptr, bytes, alignment, stream);
}

cmr_status cmr_give_back(cmr_status status, cmr_resource_ref ref, void *ptr, size_t bytes, size_t alignment,
                         cmr_stream stream) {
  cmr_kept_message kept;
  cmr_keep_message(&kept);
  cmr_status given = cmr_deallocate_aligned(ref, ptr, bytes, alignment, stream);
  return cmr_given_back(status, &kept, given, kept.serial, ptr, bytes);
}

static CMR_HOT_INLINE cmr_status cmr_call_allocate(cmr_call_kind kind, cmr_resource_ref ref, void *self, size_t bytes,
                                                   size_t alignment, cmr_stream stream, void **out) {
  if (kind == CMR_CALL_ORDERED) {
    return cmr_counted_allocate(ref, self, ref.ops->allocate(self, bytes, alignment, stream, out), bytes);
  }
  if (ref.ops->allocate_sync != NULL) {
    return cmr_counted_allocate(ref, self, ref.ops->allocate_sync(self, bytes, alignment, out), bytes);
  }
  cmr_status status =
      cmr_counted_allocate(ref, self, ref.ops->allocate(self, bytes, alignment, CMR_DEFAULT_STREAM, out), bytes);
  if (status != CMR_SUCCESS) {
    return status;
  }
  status = cmr_backend_stream_synchronize(CMR_DEFAULT_STREAM);
  if (status != CMR_SUCCESS) {
    status = cmr_give_back_raw(status, CMR_CALL_ORDERED, ref, self, *out, bytes, alignment, CMR_DEFAULT_STREAM);
    *out = NULL;
  }
  return status;
}

/* A resource that failed without recording a message still gets one. Out
 * of line: the fast paths then keep only the serial across their call. */
static __attribute__((noinline)) cmr_status cmr_resource_failed(cmr_status status, unsigned long serial_before,
                                                                cmr_resource_ref ref, const char *what, size_t bytes) {
  if (cmr_error_serial() == serial_before) {
    return cmr_error(status, "%s: resource %s failed with %s for %zu bytes", what, cmr_ref_type_name_of(ref),
                     cmr_status_string(status), bytes);
  }
  return status;
}

static size_t cmr_alignment_of(const void *ptr) {
  uintptr_t address = (uintptr_t)ptr;
  return (size_t)(address & (~address + 1));
}

/* What an allocate's answer is checked against, should it not be a plain
 * success: kept in the caller's frame (a few stores) rather than in saved
 * registers across the call. */
typedef struct cmr_allocate_call {
  cmr_call_kind kind;
  void *ref_self; /* the ref, as two words */
  const cmr_resource_ops *ops;
  void *self;
  size_t bytes;
  size_t alignment;
  cmr_stream stream;
  void **out;
  unsigned long serial;
} cmr_allocate_call;

/* An allocation's answer that is not a plain success, as dispatch and a
 * held call (held_calls.h) both say it: a failure (a message when the
 * resource left none since `serial`; out of memory noted in the history,
 * counted and reported), or a NULL pointer refused, or a success noted in
 * the history. The alignment of a pointer is the caller's to check. */
static cmr_status cmr_allocation_answer(const char *what, cmr_resource_ref ref, cmr_status status, unsigned long serial,
                                        size_t bytes, size_t alignment, cmr_stream stream, void **out) {
  if (status != CMR_SUCCESS) {
    *out = NULL;
    if (status == CMR_ERROR_OUT_OF_MEMORY) cmr_history_note(CMR_HISTORY_OUT_OF_MEMORY, ref, stream, NULL, bytes);
    status = cmr_resource_failed(status, serial, ref, what, bytes);
    if (status == CMR_ERROR_OUT_OF_MEMORY) status = cmr_stats_out_of_memory(ref, bytes, alignment, stream, serial);
    return status;
  }
  if (*out == NULL) {
    return cmr_error(CMR_ERROR_INTERNAL, "%s: resource %s returned NULL for %zu bytes", what, cmr_ref_type_name_of(ref),
                     bytes);
  }
  cmr_history_note(CMR_HISTORY_ALLOCATE, ref, stream, *out, bytes);
  return CMR_SUCCESS;
}

/* The same for a deallocate: a failure said, or a success noted. */
static cmr_status cmr_deallocation_answer(const char *what, cmr_resource_ref ref, cmr_status status,
                                          unsigned long serial, void *ptr, size_t bytes, cmr_stream stream) {
  if (status != CMR_SUCCESS) return cmr_resource_failed(status, serial, ref, what, bytes);
  cmr_history_note(CMR_HISTORY_FREE, ref, stream, ptr, bytes);
  return CMR_SUCCESS;
}

/* The answer of a call that was not a success with a pointer aligned as
 * asked (cmr_allocation_answer; a misaligned pointer is refused and given
 * back). Then the call ends (cmr_call_end). */
static __attribute__((noinline)) cmr_status cmr_allocate_answered(const char *what, const cmr_allocate_call *call,
                                                                  cmr_status status) {
  cmr_resource_ref ref = {call->ref_self, call->ops};
  void *ptr = *call->out;
  if (status == CMR_SUCCESS && ptr != NULL && ((uintptr_t)ptr & (call->alignment - 1)) != 0) {
    *call->out = NULL;
    status = cmr_error(CMR_ERROR_UNSUPPORTED_ALIGNMENT,
                       "%s: resource %s returned a pointer aligned to only %zu bytes (alignment %zu requested)", what,
                       cmr_ref_type_name_of(ref), cmr_alignment_of(ptr), call->alignment);
    status = cmr_give_back_raw(status, call->kind, ref, call->self, ptr, call->bytes, call->alignment, call->stream);
  } else {
    status =
        cmr_allocation_answer(what, ref, status, call->serial, call->bytes, call->alignment, call->stream, call->out);
  }
  cmr_call_end();
  return status;
}

/* The call, with arguments known good (`self` the ref's live target), and
 * the check of its answer; the resource is held alive throughout. */
static CMR_HOT_INLINE cmr_status cmr_allocate_call_checked(const char *what, cmr_call_kind kind, cmr_resource_ref ref,
                                                           void *self, size_t bytes, size_t alignment,
                                                           cmr_stream stream, void **out) {
  *out = NULL;
  cmr_allocate_call call = {kind, ref.self, ref.ops, self, bytes, alignment, stream, out, cmr_error_serial()};
  cmr_call_begin();
  cmr_status status;
  if (kind == CMR_CALL_ORDERED) {
    status = ref.ops->allocate(self, bytes, alignment, stream, out);
    CMR_READ_BACK(call);
    status = cmr_counted_allocate((cmr_resource_ref){call.ref_self, call.ops}, call.self, status, call.bytes);
  } else {
    status = cmr_call_allocate(kind, ref, self, bytes, alignment, stream, out);
  }
  uintptr_t address = (uintptr_t)*call.out;
  if (__builtin_expect(
          status == CMR_SUCCESS && address != 0 && (address & (alignment - 1)) == 0 && !cmr_history_is_on(), 1)) {
    cmr_call_end();
    return CMR_SUCCESS;
  }
  return cmr_allocate_answered(what, &call, status);
}

/* Every check, in order, then the call: the path of a synchronous call and
 * of any call the fast path did not take, which finds what is wrong and
 * says so. The ref comes as its two words: passed whole, GCC spills the
 * fast path's ref to the stack and reads it back through a vector
 * register. */
static __attribute__((noinline)) cmr_status cmr_allocate_checked(const char *what, cmr_call_kind kind, void *ref_self,
                                                                 const cmr_resource_ops *ops, size_t bytes,
                                                                 size_t alignment, cmr_stream stream, void **out) {
  cmr_resource_ref ref = {ref_self, ops};
  if (out == NULL) {
    return cmr_error(CMR_ERROR_NULL_POINTER, "%s: out is NULL", what);
  }
  *out = NULL;
  void *self = NULL;
  cmr_status status = cmr_check_call(ref, bytes, &alignment, what, &self);
  if (status != CMR_SUCCESS || bytes == 0) {
    return status;
  }
  return cmr_allocate_call_checked(what, kind, ref, self, bytes, alignment, stream, out);
}

/* Each call has a fast path and a checked one. The fast path tests, in a
 * few instructions, that every argument is one the checks would pass (and
 * the ref a live one), calls the resource, and tests its answer; anything
 * else (a bad argument, a failed call, a pointer to refuse) goes to the
 * checked path, out of line: the fast path only ever passes what the checks
 * pass. */
static CMR_HOT_INLINE cmr_status cmr_allocate_as(const char *what, cmr_resource_ref ref, size_t bytes, size_t alignment,
                                                 cmr_stream stream, void **out) {
  void *self;
  size_t effective;
  if (__builtin_expect(out == NULL || !cmr_plain_call(ref, bytes, alignment, &effective, &self), 0)) {
    return cmr_allocate_checked(what, CMR_CALL_ORDERED, ref.self, ref.ops, bytes, alignment, stream, out);
  }
  return cmr_allocate_call_checked(what, CMR_CALL_ORDERED, ref, self, bytes, effective, stream, out);
}

/* What a deallocate's answer is checked against, should it not be a
 * plain success (kept in the caller's frame, as cmr_allocate_call). */
typedef struct cmr_deallocate_call {
  void *ref_self; /* the ref, as two words */
  const cmr_resource_ops *ops;
  void *self;
  void *ptr;
  size_t bytes;
  cmr_stream stream;
  unsigned long serial;
} cmr_deallocate_call;

/* The answer of a deallocate that failed, or succeeded while the history
 * records (cmr_deallocation_answer); then the call ends. */
static __attribute__((noinline)) cmr_status cmr_deallocate_answered(const char *what, const cmr_deallocate_call *call,
                                                                    cmr_status status) {
  cmr_resource_ref ref = {call->ref_self, call->ops};
  status = cmr_deallocation_answer(what, ref, status, call->serial, call->ptr, call->bytes, call->stream);
  cmr_call_end();
  return status;
}

/* The call, with arguments known good, and a message should it fail without one. */
static CMR_HOT_INLINE cmr_status cmr_deallocate_call_checked(const char *what, cmr_call_kind kind, cmr_resource_ref ref,
                                                             void *self, void *ptr, size_t bytes, size_t alignment,
                                                             cmr_stream stream) {
  cmr_deallocate_call call = {ref.self, ref.ops, self, ptr, bytes, stream, cmr_error_serial()};
  cmr_call_begin();
  cmr_status status;
  if (kind == CMR_CALL_ORDERED) {
    status = ref.ops->deallocate(self, ptr, bytes, alignment, stream);
    CMR_READ_BACK(call);
    status = cmr_counted_deallocate((cmr_resource_ref){call.ref_self, call.ops}, call.self, status, call.bytes);
  } else {
    status = cmr_call_deallocate(kind, ref, self, ptr, bytes, alignment, stream);
  }
  if (__builtin_expect(status == CMR_SUCCESS && !cmr_history_is_on(), 1)) {
    cmr_call_end();
    return CMR_SUCCESS;
  }
  return cmr_deallocate_answered(what, &call, status);
}

/* The same for a deallocate (the ref as two words, as there). */
static __attribute__((noinline)) cmr_status cmr_deallocate_checked(const char *what, cmr_call_kind kind, void *ref_self,
                                                                   const cmr_resource_ops *ops, void *ptr, size_t bytes,
                                                                   size_t alignment, cmr_stream stream) {
  cmr_resource_ref ref = {ref_self, ops};
  void *self = NULL;
  cmr_status status = cmr_check_call(ref, bytes, &alignment, what, &self);
  if (status != CMR_SUCCESS || ptr == NULL) {
    return status; /* nothing to free */
  }
  if (bytes == 0) {
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "%s: pointer %p with a size of 0 bytes", what, ptr);
  }
  return cmr_deallocate_call_checked(what, kind, ref, self, ptr, bytes, alignment, stream);
}

static CMR_HOT_INLINE cmr_status cmr_deallocate_as(const char *what, cmr_resource_ref ref, void *ptr, size_t bytes,
                                                   size_t alignment, cmr_stream stream) {
  void *self;
  size_t effective;
  if (__builtin_expect(ptr == NULL || !cmr_plain_call(ref, bytes, alignment, &effective, &self), 0)) {
    return cmr_deallocate_checked(what, CMR_CALL_ORDERED, ref.self, ref.ops, ptr, bytes, alignment, stream);
  }
  return cmr_deallocate_call_checked(what, CMR_CALL_ORDERED, ref, self, ptr, bytes, effective, stream);
}

cmr_status cmr_allocate(cmr_resource_ref ref, size_t bytes, cmr_stream stream, void **out) {
  return cmr_allocate_as("cmr_allocate", ref, bytes, CMR_DEFAULT_ALIGNMENT, stream, out);
}

cmr_status cmr_deallocate(cmr_resource_ref ref, void *ptr, size_t bytes, cmr_stream stream) {
  return cmr_deallocate_as("cmr_deallocate", ref, ptr, bytes, CMR_DEFAULT_ALIGNMENT, stream);
}

cmr_status cmr_allocate_aligned(cmr_resource_ref ref, size_t bytes, size_t alignment, cmr_stream stream, void **out) {
  return cmr_allocate_as("cmr_allocate_aligned", ref, bytes, alignment, stream, out);
}

cmr_status cmr_deallocate_aligned(cmr_resource_ref ref, void *ptr, size_t bytes, size_t alignment, cmr_stream stream) {
  return cmr_deallocate_as("cmr_deallocate_aligned", ref, ptr, bytes, alignment, stream);
}

cmr_status cmr_held_allocate_answered(const cmr_resource_ref *held, cmr_status status, unsigned long serial,
                                      size_t bytes, size_t alignment, cmr_stream stream, void **out) {
  return cmr_allocation_answer("cmr_held_allocate", *held, status, serial, bytes, alignment, stream, out);
}

cmr_status cmr_held_deallocate_answered(const cmr_resource_ref *held, cmr_status status, unsigned long serial,
                                        void *ptr, size_t bytes, cmr_stream stream) {
  return cmr_deallocation_answer("cmr_held_deallocate", *held, status, serial, ptr, bytes, stream);
}

cmr_status cmr_allocate_sync(cmr_resource_ref ref, size_t bytes, size_t alignment, void **out) {
  return cmr_allocate_checked("cmr_allocate_sync", CMR_CALL_SYNC, ref.self, ref.ops, bytes, alignment,
                              CMR_DEFAULT_STREAM, out);
}

cmr_status cmr_deallocate_sync(cmr_resource_ref ref, void *ptr, size_t bytes, size_t alignment) {
  return cmr_deallocate_checked("cmr_deallocate_sync", CMR_CALL_SYNC, ref.self, ref.ops, ptr, bytes, alignment,
                                CMR_DEFAULT_STREAM);
}

/* ---- queries and lifetime ------------------------------------------------------------ */

cmr_status cmr_ref_equal(cmr_resource_ref a, cmr_resource_ref b, bool *out) {
  static const char what[] = "cmr_ref_equal";
  if (out == NULL) {
    return cmr_error(CMR_ERROR_NULL_POINTER, "%s: out is NULL", what);
  }
  *out = false;
  cmr_status status = cmr_ref_check(a, what);
  if (status == CMR_SUCCESS) {
    status = cmr_ref_check(b, what);
  }
  if (status == CMR_SUCCESS) {
    cmr_call_begin(); /* is_equal is a call into the resource */
    *out = cmr_ref_same(a, b);
    cmr_call_end();
  }
  return status;
}

cmr_status cmr_ref_properties(cmr_resource_ref ref, unsigned *out) {
  static const char what[] = "cmr_ref_properties";
  if (out == NULL) {
    return cmr_error(CMR_ERROR_NULL_POINTER, "%s: out is NULL", what);
  }
  *out = 0;
  cmr_status status = cmr_ref_check(ref, what);
  if (status == CMR_SUCCESS) {
    cmr_call_begin();
    *out = cmr_ref_properties_of(ref);
    cmr_call_end();
  }
  return status;
}

#define CMR_KNOWN_PROPERTIES (CMR_PROPERTY_DEVICE_ACCESSIBLE | CMR_PROPERTY_HOST_ACCESSIBLE)

cmr_status cmr_ref_require_properties(cmr_resource_ref ref, unsigned required) {
  static const char what[] = "cmr_ref_require_properties";
  cmr_status status = cmr_ref_check(ref, what);
  if (status != CMR_SUCCESS) {
    return status;
  }
  if (required & ~CMR_KNOWN_PROPERTIES) {
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "%s: unknown property bits 0x%x", what,
                     required & ~CMR_KNOWN_PROPERTIES);
  }
  cmr_call_begin();
  unsigned missing = required & ~cmr_ref_properties_of(ref);
  cmr_call_end();
  if (missing == 0) {
    return CMR_SUCCESS;
  }
  bool device = missing & CMR_PROPERTY_DEVICE_ACCESSIBLE;
  bool host = missing & CMR_PROPERTY_HOST_ACCESSIBLE;
  return cmr_error(CMR_ERROR_PROPERTY_MISSING, "%s: resource %s is not %s%s%s", what, cmr_ref_type_name_of(ref),
                   device ? "device_accessible" : "", device && host ? " and not " : "", host ? "host_accessible" : "");
}

cmr_status cmr_ref_type_name(cmr_resource_ref ref, const char **out) {
  static const char what[] = "cmr_ref_type_name";
  if (out == NULL) {
    return cmr_error(CMR_ERROR_NULL_POINTER, "%s: out is NULL", what);
  }
  *out = NULL;
  cmr_status status = cmr_ref_check(ref, what);
  if (status == CMR_SUCCESS) {
    *out = cmr_ref_type_name_of(ref);
  }
  return status;
}

cmr_status cmr_ref_retain(cmr_resource_ref ref) {
  cmr_status status = cmr_ref_check(ref, "cmr_ref_retain");
  if (status == CMR_SUCCESS) {
    status = cmr_ref_hold(ref, "cmr_ref_retain");
  }
  return status;
}

cmr_status cmr_ref_release(cmr_resource_ref ref) {
  static const char what[] = "cmr_ref_release";
  cmr_status status = cmr_ref_check(ref, what);
  if (status == CMR_ERROR_FORKED) {
    return CMR_SUCCESS; /* a share of the parent's resource: nothing of it goes in a child (object.h) */
  }
  if (status != CMR_SUCCESS) {
    return status;
  }
  if (ref.ops->flags & CMR_OPS_FLAG_COUNTED) {
    return cmr_object_release(ref.self, what);
  }
  cmr_ref_drop(ref);
  return CMR_SUCCESS;
}

cmr_status cmr_ref_validate(cmr_resource_ref ref) { return cmr_ref_check(ref, "cmr_ref_validate"); }
