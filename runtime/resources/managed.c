/* SPDX-License-Identifier: Apache-2.0 */
/* managed: unified memory from cudaMallocManaged / cudaFree, each free
 * vouched for (cuda_memory.h) and made on the device current when the
 * resource was; both calls synchronize, so the stream is ignored. */
#include "cuda_memory.h"
#include "impl.h"

CMR_CUDA_LEAF(managed, CMR_CUDA_MEMORY_MANAGED)
