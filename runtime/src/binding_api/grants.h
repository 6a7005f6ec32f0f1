/* SPDX-License-Identifier: Apache-2.0 */
/* What a binding's allocate() handed out and its deallocate() has not taken
 * back, by (resource identity, address), with the bytes: the bindings'
 * double-free guard, one ledger (ledger.h) for the process, so that a second
 * binding object over the same C resource frees what the first allocated.
 * Exported from libcmr for the bindings, and declared in no public header.
 * Thread-safe. */
#ifndef CMR_GRANTS_H
#define CMR_GRANTS_H

#include <cmr/core.h>

typedef struct cmr_grant cmr_grant;

/* Records that `address` was handed out by the resource `owner` with
 * `bytes` (CMR_ERROR_OUT_OF_MEMORY, with a message, without host memory). */
CMR_API cmr_status cmr_grant_record(const void *owner, void *address, size_t bytes);
/* Takes out the grant of (`owner`, `address`) if it has `bytes`: CMR_SUCCESS,
 * the grant in *out. Else nothing changes and, with no message set,
 * CMR_ERROR_UNKNOWN_POINTER (no such grant) or CMR_ERROR_INVALID_ARGUMENT
 * (*granted: the bytes it was recorded with). */
CMR_API cmr_status cmr_grant_take(const void *owner, const void *address, size_t bytes, cmr_grant **out,
                                  size_t *granted);
/* A taken grant recorded again (its memory was not freed after all); never fails. */
CMR_API void cmr_grant_put_back(cmr_grant *grant);
/* A taken grant's record freed (its memory was freed). */
CMR_API void cmr_grant_discard(cmr_grant *grant);

#endif /* CMR_GRANTS_H */
