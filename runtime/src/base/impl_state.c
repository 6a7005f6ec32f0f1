/* SPDX-License-Identifier: Apache-2.0 */
/* The algorithms' structs, as the generated wrappers make them (impl_state.h). */
#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "impl_state.h"

static const char **cmr_impl_string_at(void *impl, cmr_impl_strings strings, size_t i) {
  return (const char **)(void *)((char *)impl + strings.offsets[i]);
}

/* Frees the first `count` strings of impl's parameters. */
static void cmr_impl_free_strings(void *impl, cmr_impl_strings strings, size_t count) {
  for (size_t i = 0; i < count; ++i) free((char *)*cmr_impl_string_at(impl, strings, i));
}

cmr_status cmr_impl_new(cmr_impl_layout layout, const void *params, size_t params_size, cmr_impl_strings strings,
                        const char *what, void **out) {
  /* aligned_alloc wants a size that is a multiple of the alignment */
  size_t alignment = layout.alignment > alignof(max_align_t) ? layout.alignment : alignof(max_align_t);
  size_t size = (layout.size + alignment - 1) / alignment * alignment;
  void *impl = layout.size <= SIZE_MAX - alignment ? aligned_alloc(alignment, size) : NULL;
  if (impl == NULL) return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "%s: no host memory for the resource", what);
  memset(impl, 0, size);
  if (params_size > 0) memcpy(impl, params, params_size);
  for (size_t i = 0; i < strings.count; ++i) {
    const char **string = cmr_impl_string_at(impl, strings, i);
    if (*string != NULL && (*string = strdup(*string)) == NULL) {
      cmr_impl_free_strings(impl, strings, i);
      free(impl);
      return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "%s: no host memory for a copy of its parameters", what);
    }
  }
  *out = impl;
  return CMR_SUCCESS;
}

void cmr_impl_free(void *impl, cmr_impl_strings strings) {
  if (impl == NULL) return;
  cmr_impl_free_strings(impl, strings, strings.count);
  free(impl);
}
