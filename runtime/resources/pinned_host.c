/* SPDX-License-Identifier: Apache-2.0 */
/* pinned_host: page-locked host memory from cudaMallocHost / cudaFreeHost,
 * each free vouched for (cuda_memory.h) and made on the device current when
 * the resource was; page aligned; cudaFreeHost synchronizes, so the stream
 * is ignored. */
#include "cuda_memory.h"
#include "impl.h"

CMR_CUDA_LEAF(pinned_host, CMR_CUDA_MEMORY_PINNED)
