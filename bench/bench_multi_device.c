/* SPDX-License-Identifier: Apache-2.0 */
/* cmr-bench-multi-device: pool allocate+free pairs per second on two
 * devices at once, one thread per device (each on a stream of its device,
 * from a pool over cudaMalloc made on it), against one device alone. The
 * pools share nothing but the process, so two devices should give twice the
 * pairs: "scaling" is the two devices' total over one device's figure.
 * Also the pool made on device 1 used from a thread whose current device is
 * 0 (every call then switches devices around its work), against the same
 * pool used with its own device current.
 *
 *   cmr-bench-multi-device [--quick] [--csv FILE]
 *
 * With fewer than two devices (or in the host build) it prints why and
 * exits 0. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmr/cmr.h>

#include "bench_subjects.h"

enum { max_devices = 2, sizes = 9 };

static long pairs_per_thread;

typedef struct worker {
  int device;  /* the pool's */
  int current; /* the device the thread has current while it measures */
  cmr_pool_resource *pool;
  cmr_stream stream;
  double seconds;
} worker;

static void make_worker(worker *w, int device) {
  w->device = device;
  w->current = device;
  bench_check(cmr_set_current_device(device), "cmr_set_current_device", "multi_device");
  cmr_resource_ref upstream;
  bench_check(cmr_acquire_current_device_resource_ref(&upstream), "the device's resource", "multi_device");
  bench_check(cmr_pool_resource_create(upstream, CMR_SIZE((size_t)1 << 30), CMR_SIZE_DEFAULT, CMR_SIZE_DEFAULT,
                                       CMR_POOL_CAPTURE_SERVE, &w->pool),
              "pool", "multi_device");
  bench_check(cmr_ref_release(upstream), "cmr_ref_release", "multi_device");
  bench_check(cmr_stream_create(&w->stream), "cmr_stream_create", "multi_device");
}

static void destroy_worker(worker *w) {
  bench_check(cmr_set_current_device(w->device), "cmr_set_current_device", "multi_device");
  bench_check(cmr_stream_synchronize(w->stream), "cmr_stream_synchronize", "multi_device");
  bench_check(cmr_stream_destroy(w->stream), "cmr_stream_destroy", "multi_device");
  bench_check(cmr_pool_resource_destroy(w->pool), "pool destroy", "multi_device");
}

/* Sizes 256 B..64 KiB in turn, warm first. */
static void *run_pairs(void *arg) {
  worker *w = arg;
  bench_check(cmr_set_current_device(w->current), "cmr_set_current_device", "multi_device");
  cmr_resource_ref ref = cmr_pool_resource_ref(w->pool);
  for (long i = -sizes; i < pairs_per_thread; i++) {
    if (i == 0) w->seconds = bench_now_seconds();
    size_t bytes = (size_t)256 << (i < 0 ? -i - 1 : i % sizes);
    void *ptr;
    bench_check(cmr_allocate(ref, bytes, w->stream, &ptr), "allocate", "pool");
    bench_check(cmr_deallocate(ref, ptr, bytes, w->stream), "deallocate", "pool");
  }
  w->seconds = bench_now_seconds() - w->seconds;
  return NULL;
}

/* Runs the workers at once, one thread each; returns total pairs/s. */
static double run_at_once(worker *workers, int count) {
  pthread_t threads[max_devices];
  for (int i = 0; i < count; i++) pthread_create(&threads[i], NULL, run_pairs, &workers[i]);
  double total = 0;
  for (int i = 0; i < count; i++) {
    pthread_join(threads[i], NULL);
    total += (double)pairs_per_thread / workers[i].seconds;
  }
  return total;
}

static void row(FILE *csv, const char *name, double pairs_per_second, double against) {
  printf("%-44s %12.0f  %6.2fx\n", name, pairs_per_second, pairs_per_second / against);
  if (csv != NULL) fprintf(csv, "multi_device,pool,%s,%.0f\n", name, pairs_per_second);
}

int main(int argc, char **argv) {
  bench_options options = bench_parse_options(
      "cmr-bench-multi-device", "pool pairs/s on two devices at once, one thread per device, against one device", true,
      argc, argv);
  int count = 0;
  if (!cmr_built_with_cuda() || cmr_device_count(&count) != CMR_SUCCESS || count < max_devices) {
    printf("cmr-bench-multi-device: %d device(s)%s: it needs 2, skipped\n", count,
           cmr_built_with_cuda() ? "" : " (host build)");
    return 0;
  }
  pairs_per_thread = options.quick ? 100000 : 2000000;
  worker workers[max_devices];
  for (int device = 0; device < max_devices; device++) make_worker(&workers[device], device);

  double alone = run_at_once(&workers[0], 1);
  double alone_1 = run_at_once(&workers[1], 1);
  double both = run_at_once(workers, max_devices);
  /* Device 1's pool from a thread with device 0 current. */
  workers[1].current = 0;
  double switching = run_at_once(&workers[1], 1);

  printf("pool pairs/s, %ld pairs per thread, sizes 256 B..64 KiB, one stream per thread   ratio\n", pairs_per_thread);
  row(options.csv, "device 0 alone (1 thread)", alone, alone);
  row(options.csv, "device 1 alone (1 thread)", alone_1, alone);
  row(options.csv, "devices 0 and 1 at once (2 threads, total)", both, alone);
  row(options.csv, "device 1's pool with device 0 current", switching, alone_1);
  printf("scaling: %.2fx of one device (2.00 = no interference)\n", both / alone);

  for (int device = 0; device < max_devices; device++) destroy_worker(&workers[device]);
  if (options.csv != NULL) fclose(options.csv);
  return 0;
}
