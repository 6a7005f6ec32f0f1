/* SPDX-License-Identifier: Apache-2.0 */
/* Resources at process exit. `leave`: a stack, an allocation from it and
 * the per-device table's entries are still alive when main returns.
 * `atexit`: the same, destroyed from an atexit handler registered before
 * anything else, so it runs after every handler the CUDA runtime registers
 * when it starts (its teardown), the case where a destructor outlives the
 * runtime. Either way the process must exit 0, without crash or hang.
 * Exits 77 (skipped) in a CUDA build on a machine without a device, before
 * anything is made. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmr/cmr.h>

/* In statics, so that what is left alive stays reachable (not a leak to
 * valgrind or LeakSanitizer) and the handler finds it. */
static cmr_stack *stack;
static void *block;
static cmr_resource_ref top;

enum { BLOCK = 4096 };

static int fail(const char *what, cmr_status status) {
  fprintf(stderr, "%s: %s: %s\n", what, cmr_status_string(status), cmr_last_error_message());
  return 1;
}

/* Each step runs whatever the one before returned. After the CUDA
 * runtime's teardown its calls may fail (cudaErrorCudartUnloading), which
 * is reported but allowed: what counts there is no crash and no hang. The
 * host build has no such teardown, so there every step must succeed. */
static void destroy_everything(void) {
  if (stack == NULL) return; /* skipped, or failed before making it */
  int failed = 0;
  cmr_status status = cmr_deallocate(top, block, BLOCK, CMR_DEFAULT_STREAM);
  if (status != CMR_SUCCESS) failed |= fail("cmr_deallocate at exit", status);
  status = cmr_reset_current_device_resource_ref();
  if (status != CMR_SUCCESS) failed |= fail("cmr_reset_current_device_resource_ref at exit", status);
  status = cmr_stack_destroy(stack);
  if (status != CMR_SUCCESS) failed |= fail("cmr_stack_destroy at exit", status);
  if (failed && !cmr_built_with_cuda()) _Exit(1);
}

/* The stack in the table, a block out, and the table's default made too. */
static int make_everything(void) {
  const char *expression = cmr_built_with_cuda() ? "statistics(pool(cuda, initial_pool_size=1MiB))"
                                                 : "statistics(pool(system, initial_pool_size=1MiB))";
  cmr_resource_ref original;
  cmr_status status = cmr_get_current_device_resource_ref(&original);
  if (status == CMR_SUCCESS) status = cmr_stack_parse(expression, &stack);
  if (status == CMR_SUCCESS) status = cmr_stack_ref(stack, &top);
  if (status == CMR_SUCCESS) status = cmr_set_current_device_resource_ref(top);
  if (status == CMR_SUCCESS) status = cmr_allocate(top, BLOCK, CMR_DEFAULT_STREAM, &block);
  return status == CMR_SUCCESS ? 0 : fail("making the stack", status);
}

int main(int argc, char **argv) {
  bool at_exit = argc == 2 && strcmp(argv[1], "atexit") == 0;
  if (argc != 2 || (!at_exit && strcmp(argv[1], "leave") != 0)) {
    fprintf(stderr, "usage: test_exit leave|atexit\n");
    return 2;
  }
  if (at_exit && atexit(destroy_everything) != 0) return 1;
  int count = 0;
  cmr_status status = cmr_device_count(&count);
  if (status == CMR_ERROR_NO_DEVICE) {
    printf("skipped: %s\n", cmr_last_error_message());
    return 77;
  }
  if (status != CMR_SUCCESS) return fail("cmr_device_count", status);
  return make_everything();
}
