/* SPDX-License-Identifier: Apache-2.0 */
/* cuda: device memory straight from cudaMalloc / cudaFree, each free
 * vouched for (cuda_memory.h) and made on the device current when the
 * resource was; the stream is ignored because both calls synchronize. */
#include "cuda_memory.h"
#include "impl.h"

CMR_CUDA_LEAF(cuda, CMR_CUDA_MEMORY_DEVICE)
