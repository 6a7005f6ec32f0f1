/* The benchmark's resources (see bench_subjects.h). */
#include <stdio.h>
#include <stdlib.h>

#include "bench_subjects.h"

enum { MiB = 1 << 20 };

static void require(cmr_status status, const char *what) {
  if (status == CMR_SUCCESS) return;
  fprintf(stderr, "making %s: %s: %s\n", what, cmr_status_string(status), cmr_last_error_message());
  exit(1);
}

/* Each maker adds one subject over `base`. */
#define CMR_BENCH_OWNED(type, subject_name, work_share, ...)                                               \
  do {                                                                                                  \
    cmr_##type##_resource *handle_ = NULL;                                                              \
    require(cmr_##type##_resource_create(__VA_ARGS__, &handle_), subject_name);                          \
    subjects[count++] = (bench_subject){subject_name, cmr_##type##_resource_ref(handle_), work_share, handle_, \
                                        (cmr_status(*)(void *))cmr_##type##_resource_destroy};          \
  } while (0)

static cmr_resource_ref base_ref;
static void *base_handle;
static cmr_status (*base_destroy)(void *handle);

int bench_make_subjects(bench_subject *subjects) {
  int count = 0;
  size_t pool_bytes = (size_t)1 << 30;
  if (cmr_built_with_cuda()) {
    CMR_BENCH_OWNED(cuda_async, "cuda_async (driver pool)", 1.0, 0, CMR_SIZE_DEFAULT,
                    CMR_CUDA_ASYNC_EXPORT_HANDLE_TYPE_NONE);
    cmr_cuda_resource *cuda = NULL;
    require(cmr_cuda_resource_create(&cuda), "cuda");
    base_ref = cmr_cuda_resource_ref(cuda);
    base_handle = cuda;
    base_destroy = (cmr_status(*)(void *))cmr_cuda_resource_destroy;
    subjects[count++] = (bench_subject){"cuda (cudaMalloc)", base_ref, 0.01, NULL, NULL};
    pool_bytes = (size_t)8 << 30;
  } else {
    cmr_system_resource *system = NULL;
    require(cmr_system_resource_create(&system), "system");
    base_ref = cmr_system_resource_ref(system);
    base_handle = system;
    base_destroy = (cmr_status(*)(void *))cmr_system_resource_destroy;
    subjects[count++] = (bench_subject){"system (malloc)", base_ref, 1.0, NULL, NULL};
  }
  CMR_BENCH_OWNED(pool, "pool", 1.0, base_ref, pool_bytes, CMR_SIZE_DEFAULT);
  CMR_BENCH_OWNED(arena, "arena", 1.0, base_ref, pool_bytes, false, "");
  CMR_BENCH_OWNED(fixed_size, "fixed_size (64 KiB)", 1.0, base_ref, (size_t)64 << 10, 1024);
  CMR_BENCH_OWNED(binning, "binning (2^8..2^16)", 1.0, base_ref, 8, 16);
  return count;
}

void bench_destroy_subjects(bench_subject *subjects, int count) {
  for (int i = count - 1; i >= 0; --i) {
    if (subjects[i].destroy != NULL) require(subjects[i].destroy(subjects[i].handle), subjects[i].name);
  }
  require(base_destroy(base_handle), "base");
}
