/* callback: memory from the user's allocate / deallocate functions. */
#include <stdlib.h>

#include "impl.h"

struct cmr_callback_impl {
  cmr_allocate_callback allocate;
  cmr_deallocate_callback deallocate;
  void *allocate_arg;
  void *deallocate_arg;
  unsigned properties;
};

cmr_status cmr_callback_impl_create(cmr_allocate_callback allocate, cmr_deallocate_callback deallocate,
                                    void *allocate_arg, void *deallocate_arg, unsigned properties,
                                    cmr_callback_impl **out) {
  cmr_callback_impl *impl = malloc(sizeof *impl);
  if (impl == NULL) return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "callback: no host memory for the resource");
  *impl = (cmr_callback_impl){allocate, deallocate, allocate_arg, deallocate_arg, properties};
  *out = impl;
  return CMR_SUCCESS;
}

void cmr_callback_impl_destroy(cmr_callback_impl *impl) { free(impl); }

cmr_status cmr_callback_impl_allocate(cmr_callback_impl *impl, size_t bytes, size_t alignment, cmr_stream stream,
                                      void **out) {
  (void)alignment; /* the functions promise 256; dispatch verifies what comes back */
  *out = impl->allocate(bytes, stream, impl->allocate_arg);
  if (*out == NULL) {
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "callback: the allocate function returned NULL for %zu bytes", bytes);
  }
  return CMR_SUCCESS;
}

cmr_status cmr_callback_impl_deallocate(cmr_callback_impl *impl, void *ptr, size_t bytes, size_t alignment,
                                        cmr_stream stream) {
  (void)alignment;
  impl->deallocate(ptr, bytes, stream, impl->deallocate_arg);
  return CMR_SUCCESS;
}

bool cmr_callback_impl_is_equal(const cmr_callback_impl *impl, const cmr_callback_impl *other) {
  return impl->allocate == other->allocate && impl->deallocate == other->deallocate &&
         impl->allocate_arg == other->allocate_arg && impl->deallocate_arg == other->deallocate_arg &&
         impl->properties == other->properties;
}

unsigned cmr_callback_impl_properties(const cmr_callback_impl *impl) { return impl->properties; }
