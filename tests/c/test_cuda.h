/* SPDX-License-Identifier: Apache-2.0 */
/* What the suites that call CUDA themselves share (CUDA build only). */
#ifndef CMR_TEST_CUDA_H
#define CMR_TEST_CUDA_H

#include <cuda_runtime_api.h>

#include "test_util.h"

/* Fails the test, naming the call and CUDA's error, unless `call` succeeds. */
#define ck_assert_cuda(call)                                                         \
  do {                                                                               \
    cudaError_t error_ = (call);                                                     \
    ck_assert_msg(error_ == cudaSuccess, "%s: %s", #call, cudaGetErrorName(error_)); \
  } while (0)

#endif /* CMR_TEST_CUDA_H */
