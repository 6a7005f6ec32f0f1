/* SPDX-License-Identifier: Apache-2.0 */
/* What a resource that this build lacks answers. */
#include "internal.h"

cmr_status cmr_unavailable(const char *function, const char *resource) {
#if CMR_WITH_CUDA
  return cmr_error(CMR_ERROR_UNSUPPORTED, "%s: the %s resource exists only in the host build of cmr", function,
                   resource);
#else
  return cmr_error(CMR_ERROR_UNSUPPORTED,
                   "%s: the %s resource needs a CUDA build of cmr (this one was built with CMR_WITH_CUDA=OFF)",
                   function, resource);
#endif
}
