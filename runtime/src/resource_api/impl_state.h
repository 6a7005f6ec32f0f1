/* SPDX-License-Identifier: Apache-2.0 */
/* The algorithm's struct (struct cmr_<name>_impl of runtime/resources/<name>.c),
 * made and freed by the generated wrapper: zero-filled, with the parameters
 * the resource was created with copied to its start (its first member,
 * `params`, of the generated type cmr_<name>_params), and the strings among
 * them copied too, so that every parameter lives as long as the resource.
 * The algorithm's init hook, when it has one, does the rest. */
#ifndef CMR_IMPL_STATE_H
#define CMR_IMPL_STATE_H

#include <stdatomic.h>
#include <stddef.h>

#include "errors.h"

/* What the generated wrapper knows of an algorithm's struct, which only the
 * algorithm file defines (CMR_IMPL_LAYOUT in impl.h). */
typedef struct cmr_impl_layout {
  size_t size;
  size_t alignment;
} cmr_impl_layout;

/* Where the `const char *` members of a params struct are (offsetof). */
typedef struct cmr_impl_strings {
  const size_t *offsets;
  size_t count;
} cmr_impl_strings;

/* A zero-filled struct of `layout` beginning with the params_size bytes at
 * `params`, its strings copied; CMR_ERROR_OUT_OF_MEMORY naming `what`. */
cmr_status cmr_impl_new(cmr_impl_layout layout, const void *params, size_t params_size, cmr_impl_strings strings,
                        const char *what, void **out);
/* Frees what cmr_impl_new made (after the algorithm's fini hook); NULL is a no-op. */
void cmr_impl_free(void *impl, cmr_impl_strings strings);

/* What a counter getter returns (spec: counter = "<field>"): the
 * _Atomic size_t at `offset` in the algorithm's struct, loaded relaxed (a
 * counter read alone orders nothing). */
static inline size_t cmr_impl_counter(const void *impl, size_t offset) {
  return atomic_load_explicit((const _Atomic size_t *)(const void *)((const char *)impl + offset),
                              memory_order_relaxed);
}

#endif /* CMR_IMPL_STATE_H */
