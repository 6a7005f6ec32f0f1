/* SPDX-License-Identifier: Apache-2.0 */
/* Dispatch through a resource ref: every argument is checked here, once, so
 * an ops table only ever sees bytes > 0, a power-of-two alignment of at least
 * CMR_DEFAULT_ALIGNMENT and no overflow once bytes are rounded up to it. The
 * pointers a resource hands back are checked here too. */
#include "backend.h"
#include "internal.h"

/* For the few functions every allocate and deallocate runs through: kept
 * in their callers so that a call through a ref costs no extra calls,
 * prologues or argument moves (GCC and clang alike; the error paths they
 * reach stay out of line). */
#define CMR_HOT_INLINE inline __attribute__((always_inline))

/* ---- refs ------------------------------------------------------------------ */

static const char *cmr_type_name_of(cmr_resource_ref ref) {
  return ref.ops->type_name != NULL ? ref.ops->type_name : "(unnamed)";
}

cmr_status cmr_ref_check(cmr_resource_ref ref, const char *what) {
  if (ref.ops == NULL) {
    return cmr_error(CMR_ERROR_INVALID_REF, "%s: the ref has no ops table (zeroed or never made)", what);
  }
  if (ref.ops->flags & CMR_OPS_FLAG_COUNTED) {
    if (ref.self == NULL) {
      return cmr_error(CMR_ERROR_INVALID_REF, "%s: the ref to resource %s has a NULL handle", what,
                       cmr_type_name_of(ref));
    }
    if ((uint64_t)(uintptr_t)ref.self & CMR_TOKEN_HANDLE_BIT) {
      /* What a ref constructor gives for a handle that is not a live one of
       * its resource: the handle itself. */
      void *token;
      cmr_status status = cmr_handle_target(ref.self, what, &token);
      if (status == CMR_SUCCESS) {
        return cmr_error(CMR_ERROR_INVALID_ARGUMENT,
                         "%s: the ref to resource %s was made from handle %p, a handle of another resource", what,
                         cmr_type_name_of(ref), ref.self);
      }
      if (status == CMR_ERROR_FORKED) return status;
      return cmr_error(CMR_ERROR_DESTROYED_HANDLE,
                       "%s: the ref to resource %s was made from handle %p, already destroyed", what,
                       cmr_type_name_of(ref), ref.self);
    }
    cmr_object *object;
    cmr_status status = cmr_object_resolve(ref.self, NULL, what, &object);
    if (status != CMR_SUCCESS) {
      return status;
    }
  }
  if (ref.ops->allocate == NULL || ref.ops->deallocate == NULL) {
    return cmr_error(CMR_ERROR_INVALID_REF, "%s: resource %s has no %s function", what, cmr_type_name_of(ref),
                     ref.ops->allocate == NULL ? "allocate" : "deallocate");
  }
  return CMR_SUCCESS;
}

unsigned cmr_ref_properties_of(cmr_resource_ref ref) {
  void *self = cmr_ref_self(ref);
  return ref.ops->properties != NULL && self != NULL ? ref.ops->properties(self) : 0u;
}

cmr_status cmr_ref_hold(cmr_resource_ref ref, const char *what) {
  if (ref.ops->flags & CMR_OPS_FLAG_COUNTED) {
    return cmr_object_retain(ref.self, what);
  }
  if (ref.ops->retain != NULL) {
    ref.ops->retain(ref.self);
  }
  return CMR_SUCCESS;
}

void cmr_ref_drop(cmr_resource_ref ref) {
  if (ref.ops->flags & CMR_OPS_FLAG_COUNTED) {
    (void)cmr_object_release(ref.self, "cmr_ref_drop");
  } else if (ref.ops->release != NULL) {
    ref.ops->release(ref.self);
  }
}

bool cmr_ref_same(cmr_resource_ref a, cmr_resource_ref b) {
  if (a.self == b.self && a.ops == b.ops) {
    return true;
  }
  void *self = cmr_ref_self(a);
  return a.ops->is_equal != NULL && self != NULL && a.ops->is_equal(self, b);
}

/* ---- argument checks ---------------------------------------------------------- */

static bool cmr_is_power_of_two(size_t value) { return value != 0 && (value & (value - 1)) == 0; }

static cmr_status cmr_bad_alignment(size_t alignment, const char *what) {
  if (alignment == 0) {
    return cmr_error(CMR_ERROR_BAD_ALIGNMENT, "%s: alignment 0 is not a power of two", what);
  }
  return cmr_error(CMR_ERROR_BAD_ALIGNMENT, "%s: alignment %zu is not a power of two", what, alignment);
}

/* Checks a caller's alignment and gives the one the ops table sees. */
static inline cmr_status cmr_effective_alignment(size_t alignment, const char *what, size_t *out) {
  if (!cmr_is_power_of_two(alignment)) {
    return cmr_bad_alignment(alignment, what);
  }
  *out = alignment < CMR_DEFAULT_ALIGNMENT ? CMR_DEFAULT_ALIGNMENT : alignment;
  return CMR_SUCCESS;
}

static cmr_status cmr_check_rounding(size_t bytes, size_t alignment, const char *what) {
  if (bytes > SIZE_MAX - (alignment - 1)) {
    return cmr_error(CMR_ERROR_SIZE_OVERFLOW, "%s: %zu bytes overflow once rounded up to alignment %zu", what, bytes,
                     alignment);
  }
  return CMR_SUCCESS;
}

/* The checks shared by every allocate: ref, alignment, size. *alignment is
 * replaced by the effective one. */
static CMR_HOT_INLINE cmr_status cmr_check_allocate(cmr_resource_ref ref, size_t bytes, size_t *alignment,
                                                    const char *what, void **self) {
  cmr_status status = cmr_ref_target(ref, self) ? CMR_SUCCESS : cmr_ref_check(ref, what);
  if (status == CMR_SUCCESS) {
    status = cmr_effective_alignment(*alignment, what, alignment);
  }
  if (status == CMR_SUCCESS) {
    status = cmr_check_rounding(bytes, *alignment, what);
  }
  return status;
}

/* The same for deallocate; *skip is set when there is nothing to free. */
static CMR_HOT_INLINE cmr_status cmr_check_deallocate(cmr_resource_ref ref, const void *ptr, size_t bytes,
                                                      size_t *alignment, const char *what, bool *skip, void **self) {
  *skip = false;
  cmr_status status = cmr_ref_target(ref, self) ? CMR_SUCCESS : cmr_ref_check(ref, what);
  if (status == CMR_SUCCESS) {
    status = cmr_effective_alignment(*alignment, what, alignment);
  }
  if (status != CMR_SUCCESS) {
    return status;
  }
  if (ptr == NULL) {
    *skip = true;
    return CMR_SUCCESS;
  }
  if (bytes == 0) {
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "%s: pointer %p with a size of 0 bytes", what, ptr);
  }
  return cmr_check_rounding(bytes, *alignment, what);
}

/* A resource that failed without recording a message still gets one. Out
 * of line: the fast paths then keep only the serial across their call. */
static __attribute__((noinline)) cmr_status cmr_resource_failed(cmr_status status, unsigned long serial_before,
                                                                cmr_resource_ref ref, const char *what, size_t bytes) {
  if (cmr_error_serial() == serial_before) {
    return cmr_error(status, "%s: resource %s failed with %s for %zu bytes", what, cmr_type_name_of(ref),
                     cmr_status_string(status), bytes);
  }
  return status;
}

static size_t cmr_alignment_of(const void *ptr) {
  uintptr_t address = (uintptr_t)ptr;
  return (size_t)(address & (~address + 1));
}

typedef cmr_status (*cmr_give_back_fn)(cmr_resource_ref ref, void *self, void *ptr, size_t bytes, size_t alignment,
                                       cmr_stream stream);

/* What every allocate checks in what a resource returned: a pointer for
 * bytes > 0, aligned as asked. A misaligned one is given back. */
static cmr_status cmr_check_returned(cmr_resource_ref ref, void *self, void **out, size_t bytes, size_t alignment,
                                     cmr_stream stream, const char *what, cmr_give_back_fn give_back) {
  void *ptr = *out;
  if (ptr == NULL) {
    return cmr_error(CMR_ERROR_INTERNAL, "%s: resource %s returned NULL for %zu bytes", what, cmr_type_name_of(ref),
                     bytes);
  }
  if (((uintptr_t)ptr & (alignment - 1)) != 0) {
    *out = NULL;
    give_back(ref, self, ptr, bytes, alignment, stream);
    return cmr_error(CMR_ERROR_UNSUPPORTED_ALIGNMENT,
                     "%s: resource %s returned a pointer aligned to only %zu bytes (alignment %zu "
                     "requested)",
                     what, cmr_type_name_of(ref), cmr_alignment_of(ptr), alignment);
  }
  return CMR_SUCCESS;
}

/* ---- stream-ordered pair ----------------------------------------------------------- */

/* Each call has a fast path and a checked one. The fast path tests, in a
 * few instructions, that every argument is one the checks would pass (and
 * the ref a live one), calls the resource, and tests its answer; anything
 * else (a bad argument, a failed call, a pointer to refuse) goes to the
 * checked path, out of line, which finds what is wrong and says so exactly
 * as before: the fast path only ever passes what the checks pass. */

static cmr_status cmr_give_back_async(cmr_resource_ref ref, void *self, void *ptr, size_t bytes, size_t alignment,
                                      cmr_stream stream) {
  return ref.ops->deallocate(self, ptr, bytes, alignment, stream);
}

/* Every check, in order, then the call: the path of any call the fast path
 * did not take. */
static __attribute__((noinline)) cmr_status cmr_allocate_checked(const char *what, cmr_resource_ref ref, size_t bytes,
                                                                 size_t alignment, cmr_stream stream, void **out) {
  if (out == NULL) {
    return cmr_error(CMR_ERROR_NULL_POINTER, "%s: out is NULL", what);
  }
  *out = NULL;
  void *self = NULL;
  cmr_status status = cmr_check_allocate(ref, bytes, &alignment, what, &self);
  if (status != CMR_SUCCESS || bytes == 0) {
    return status;
  }
  unsigned long serial = cmr_error_serial();
  status = ref.ops->allocate(self, bytes, alignment, stream, out);
  if (status != CMR_SUCCESS) {
    *out = NULL;
    return cmr_resource_failed(status, serial, ref, what, bytes);
  }
  return cmr_check_returned(ref, self, out, bytes, alignment, stream, what, cmr_give_back_async);
}

/* What the checked path needs of a call the fast path made, should its
 * answer be refused: kept in the caller's frame (a few stores) rather than
 * in saved registers across the call. */
typedef struct cmr_allocate_call {
  cmr_resource_ref ref;
  void *self;
  size_t bytes;
  size_t alignment;
  cmr_stream stream;
  void **out;
  unsigned long serial;
} cmr_allocate_call;

/* What the fast path's call returned, when it was not a success with a
 * pointer aligned as asked. */
static __attribute__((noinline)) cmr_status cmr_allocate_answered(const char *what, const cmr_allocate_call *call,
                                                                  cmr_status status) {
  if (status != CMR_SUCCESS) {
    *call->out = NULL;
    return cmr_resource_failed(status, call->serial, call->ref, what, call->bytes);
  }
  return cmr_check_returned(call->ref, call->self, call->out, call->bytes, call->alignment, call->stream, what,
                            cmr_give_back_async);
}

/* bytes in [1, SIZE_MAX - (alignment - 1)]: neither the zero-byte case nor
 * one that overflows once rounded up (alignment a power of two). */
static inline bool cmr_plain_size(size_t bytes, size_t alignment) { return bytes - 1 < SIZE_MAX - (alignment - 1); }

/* `alignment` a power of two: the one the ops table sees (at least the
 * default). Zero or another value is the checked path's to report. */
static inline bool cmr_plain_alignment(size_t alignment, size_t *effective) {
  *effective = alignment < CMR_DEFAULT_ALIGNMENT ? CMR_DEFAULT_ALIGNMENT : alignment;
  return (alignment & (alignment - 1)) == 0 && alignment != 0;
}

/* The call, with arguments known good, and the check of its answer. */
static CMR_HOT_INLINE cmr_status cmr_allocate_call_checked(const char *what, cmr_resource_ref ref, void *self,
                                                           size_t bytes, size_t alignment, cmr_stream stream,
                                                           void **out) {
  *out = NULL;
  cmr_allocate_call call = {ref, self, bytes, alignment, stream, out, cmr_error_serial()};
  cmr_status status = ref.ops->allocate(self, bytes, alignment, stream, out);
  uintptr_t address = (uintptr_t)*out;
  if (__builtin_expect(status == CMR_SUCCESS && address != 0 && (address & (alignment - 1)) == 0, 1)) {
    return CMR_SUCCESS;
  }
  return cmr_allocate_answered(what, &call, status);
}

/* Whether a call with these arguments passes every check (the pointer
 * argument, out or ptr, is the caller's to test): then the alignment the
 * ops table sees in *effective and the ref's target in *self. */
static CMR_HOT_INLINE bool cmr_plain_call(cmr_resource_ref ref, size_t bytes, size_t alignment, size_t *effective,
                                          void **self) {
  return cmr_plain_alignment(alignment, effective) && cmr_plain_size(bytes, *effective) && cmr_ref_target(ref, self);
}

static CMR_HOT_INLINE cmr_status cmr_allocate_as(const char *what, cmr_resource_ref ref, size_t bytes, size_t alignment,
                                                 cmr_stream stream, void **out) {
  void *self;
  size_t effective;
  if (__builtin_expect(out == NULL || !cmr_plain_call(ref, bytes, alignment, &effective, &self), 0)) {
    return cmr_allocate_checked(what, ref, bytes, alignment, stream, out);
  }
  return cmr_allocate_call_checked(what, ref, self, bytes, effective, stream, out);
}

static __attribute__((noinline)) cmr_status cmr_deallocate_checked(const char *what, cmr_resource_ref ref, void *ptr,
                                                                   size_t bytes, size_t alignment, cmr_stream stream) {
  bool skip;
  void *self = NULL;
  cmr_status status = cmr_check_deallocate(ref, ptr, bytes, &alignment, what, &skip, &self);
  if (status != CMR_SUCCESS || skip) {
    return status;
  }
  unsigned long serial = cmr_error_serial();
  status = ref.ops->deallocate(self, ptr, bytes, alignment, stream);
  if (status != CMR_SUCCESS) {
    return cmr_resource_failed(status, serial, ref, what, bytes);
  }
  return CMR_SUCCESS;
}

/* The call, with arguments known good, and a message should it fail without one. */
static CMR_HOT_INLINE cmr_status cmr_deallocate_call_checked(const char *what, cmr_resource_ref ref, void *self,
                                                             void *ptr, size_t bytes, size_t alignment,
                                                             cmr_stream stream) {
  unsigned long serial = cmr_error_serial();
  cmr_status status = ref.ops->deallocate(self, ptr, bytes, alignment, stream);
  if (__builtin_expect(status == CMR_SUCCESS, 1)) {
    return CMR_SUCCESS;
  }
  return cmr_resource_failed(status, serial, ref, what, bytes);
}

static CMR_HOT_INLINE cmr_status cmr_deallocate_as(const char *what, cmr_resource_ref ref, void *ptr, size_t bytes,
                                                   size_t alignment, cmr_stream stream) {
  void *self;
  size_t effective;
  if (__builtin_expect(ptr == NULL || !cmr_plain_call(ref, bytes, alignment, &effective, &self), 0)) {
    return cmr_deallocate_checked(what, ref, ptr, bytes, alignment, stream);
  }
  return cmr_deallocate_call_checked(what, ref, self, ptr, bytes, effective, stream);
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

cmr_status cmr_held_allocate(cmr_resource_ref ref, void *self, size_t bytes, size_t alignment, cmr_stream stream,
                             void **out) {
  return cmr_allocate_call_checked("cmr_allocate_aligned", ref, self, bytes, alignment, stream, out);
}

cmr_status cmr_held_deallocate(cmr_resource_ref ref, void *self, void *ptr, size_t bytes, size_t alignment,
                               cmr_stream stream) {
  return cmr_deallocate_call_checked("cmr_deallocate_aligned", ref, self, ptr, bytes, alignment, stream);
}

/* ---- synchronous pair ---------------------------------------------------------------- */

/* deallocate_sync, or deallocate on the default stream and wait for it. */
static cmr_status cmr_call_deallocate_sync(cmr_resource_ref ref, void *self, void *ptr, size_t bytes,
                                           size_t alignment) {
  if (ref.ops->deallocate_sync != NULL) {
    return ref.ops->deallocate_sync(self, ptr, bytes, alignment);
  }
  cmr_status status = ref.ops->deallocate(self, ptr, bytes, alignment, CMR_DEFAULT_STREAM);
  if (status != CMR_SUCCESS) {
    return status;
  }
  return cmr_backend_stream_synchronize(CMR_DEFAULT_STREAM);
}

static cmr_status cmr_give_back_sync(cmr_resource_ref ref, void *self, void *ptr, size_t bytes, size_t alignment,
                                     cmr_stream stream) {
  (void)stream;
  return cmr_call_deallocate_sync(ref, self, ptr, bytes, alignment);
}

/* allocate_sync, or allocate on the default stream and wait for it. */
static cmr_status cmr_call_allocate_sync(cmr_resource_ref ref, void *self, size_t bytes, size_t alignment, void **out) {
  if (ref.ops->allocate_sync != NULL) {
    return ref.ops->allocate_sync(self, bytes, alignment, out);
  }
  cmr_status status = ref.ops->allocate(self, bytes, alignment, CMR_DEFAULT_STREAM, out);
  if (status != CMR_SUCCESS) {
    return status;
  }
  status = cmr_backend_stream_synchronize(CMR_DEFAULT_STREAM);
  if (status != CMR_SUCCESS) {
    ref.ops->deallocate(self, *out, bytes, alignment, CMR_DEFAULT_STREAM);
  }
  return status;
}

cmr_status cmr_allocate_sync(cmr_resource_ref ref, size_t bytes, size_t alignment, void **out) {
  static const char what[] = "cmr_allocate_sync";
  if (out == NULL) {
    return cmr_error(CMR_ERROR_NULL_POINTER, "%s: out is NULL", what);
  }
  *out = NULL;
  void *self = NULL;
  cmr_status status = cmr_check_allocate(ref, bytes, &alignment, what, &self);
  if (status != CMR_SUCCESS || bytes == 0) {
    return status;
  }
  unsigned long serial = cmr_error_serial();
  status = cmr_call_allocate_sync(ref, self, bytes, alignment, out);
  if (status != CMR_SUCCESS) {
    *out = NULL;
    return cmr_resource_failed(status, serial, ref, what, bytes);
  }
  return cmr_check_returned(ref, self, out, bytes, alignment, CMR_DEFAULT_STREAM, what, cmr_give_back_sync);
}

cmr_status cmr_deallocate_sync(cmr_resource_ref ref, void *ptr, size_t bytes, size_t alignment) {
  static const char what[] = "cmr_deallocate_sync";
  bool skip;
  void *self = NULL;
  cmr_status status = cmr_check_deallocate(ref, ptr, bytes, &alignment, what, &skip, &self);
  if (status != CMR_SUCCESS || skip) {
    return status;
  }
  unsigned long serial = cmr_error_serial();
  status = cmr_call_deallocate_sync(ref, self, ptr, bytes, alignment);
  if (status != CMR_SUCCESS) {
    return cmr_resource_failed(status, serial, ref, what, bytes);
  }
  return CMR_SUCCESS;
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
    *out = cmr_ref_same(a, b);
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
    *out = cmr_ref_properties_of(ref);
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
  unsigned missing = required & ~cmr_ref_properties_of(ref);
  if (missing == 0) {
    return CMR_SUCCESS;
  }
  bool device = missing & CMR_PROPERTY_DEVICE_ACCESSIBLE;
  bool host = missing & CMR_PROPERTY_HOST_ACCESSIBLE;
  return cmr_error(CMR_ERROR_PROPERTY_MISSING, "%s: resource %s is not %s%s%s", what, cmr_type_name_of(ref),
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
    *out = cmr_type_name_of(ref);
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
