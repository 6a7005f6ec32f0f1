// SPDX-License-Identifier: Apache-2.0
package org.cmr;

import java.lang.ref.Reference;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The library, its devices and the per-device resource table, which C and every language share.
 * The table holds a share of what it stores, so a resource set there may be closed in Java.
 */
public final class Cmr {
  /**
   * The Java objects set in the table, per device, kept while they are there (and by the
   * objects the getters hand out): the resource may call into Java (callbacks) as long as the
   * table holds it.
   */
  private static final Map<Integer, MemoryResource> INSTALLED = new ConcurrentHashMap<>();

  /** The default stream. */
  public static final long DEFAULT_STREAM = 0L;
  /** The alignment of {@link MemoryResource#allocate(long)}, in bytes. */
  public static final long DEFAULT_ALIGNMENT = 256L;

  /** What {@link #initialize} set up, until {@link #shutdown}: guarded by the class's lock. */
  private static ResourceStack initialized;
  private static int initializedDevice;

  private Cmr() {}

  /**
   * Sets up the current device's resource as {@code mode} with the resource's default sizes, as
   * cuDF's {@code Rmm.initialize} does: {@code Cmr.initialize(AllocationMode.POOL)}.
   *
   * @throws IllegalStateException if already initialized (call {@link #shutdown()} first)
   */
  public static void initialize(AllocationMode mode) {
    initialize(mode, 0, 0);
  }

  /** As {@link #initialize(AllocationMode, long, long)} with no maximum. */
  public static void initialize(AllocationMode mode, long initialSize) {
    initialize(mode, initialSize, 0);
  }

  /**
   * Sets up the current device's resource as {@code mode}: a pool of {@code initialSize} bytes
   * that grows to at most {@code maximumSize} (0: the default, no limit), an arena of {@code
   * initialSize} bytes (ARENA takes no maximum), the driver's pool (ASYNC: its initial size and
   * release threshold), or the device memory itself (DEFAULT and MANAGED take no sizes). Every
   * allocation from the current device resource (and every {@link DeviceBuffer} made from it)
   * comes from there until {@link #shutdown()}.
   *
   * @throws IllegalStateException if already initialized (call {@link #shutdown()} first)
   * @throws IllegalArgumentException for a negative size, or a size the mode does not take
   * @throws CmrException when cmr cannot make the resource (e.g. ASYNC in the host build: {@link
   *     Status#ERROR_UNSUPPORTED}); see {@link CmrFailure} for the other kinds
   */
  public static void initialize(AllocationMode mode, long initialSize, long maximumSize) {
    if (mode == null) {
      throw new NullPointerException("mode is null: an AllocationMode is required");
    }
    initialize(mode.expression(initialSize, maximumSize));
  }

  /**
   * Sets up the current device's resource as the stack expression {@code expression} describes
   * (see {@link ResourceStack}), e.g. {@code "statistics(pool(system, initial_pool_size=64MiB))"}.
   *
   * @throws IllegalStateException if already initialized (call {@link #shutdown()} first)
   * @throws IllegalArgumentException for an expression outside the grammar (a {@link
   *     CmrIllegalArgumentException} naming the column)
   */
  public static synchronized void initialize(String expression) {
    if (expression == null) {
      throw new NullPointerException("expression is null: a stack expression is required");
    }
    if (initialized != null) {
      throw new IllegalStateException(
          "cmr is already initialized (" + initialized.expression() + "): call Cmr.shutdown() first");
    }
    ResourceStack stack = new ResourceStack(expression);
    try (MemoryResource top = stack.top()) {
      int device = currentDevice();
      setPerDeviceResource(device, top);
      initialized = stack;
      initializedDevice = device;
    } catch (RuntimeException | Error e) {
      stack.close();
      throw e;
    }
  }

  /** Whether {@link #initialize} has set up a resource that {@link #shutdown()} has not taken down. */
  public static synchronized boolean isInitialized() {
    return initialized != null;
  }

  /**
   * Takes down what {@link #initialize} set up: the device it was set up for goes back to its
   * default resource, and the stack's resources go once nothing else holds them (a buffer or
   * {@link Allocation} still open keeps its resource until it is closed). Does nothing when not
   * initialized.
   */
  public static synchronized void shutdown() {
    if (initialized == null) {
      return;
    }
    try {
      resetPerDeviceResource(initializedDevice);
    } finally {
      initialized.close();
      initialized = null;
    }
  }

  /** The library's version, "MAJOR.MINOR.PATCH". */
  public static String version() {
    return CmrNative.cmr_version();
  }

  /** The JAR's version (its manifest's Implementation-Version), which is the library's; null outside a JAR. */
  public static String packageVersion() {
    return Cmr.class.getPackage().getImplementationVersion();
  }

  /** Whether the library was built with CUDA (false: the host build, whose one device is host memory). */
  public static boolean builtWithCuda() {
    return CmrNative.cmr_built_with_cuda();
  }

  public static int deviceCount() {
    return CmrNative.cmr_device_count();
  }

  public static int currentDevice() {
    return CmrNative.cmr_current_device();
  }

  public static void setCurrentDevice(int device) {
    CmrNative.cmr_set_current_device(device);
  }

  /** The resource used for the current device (a new share: close it when done). */
  public static MemoryResource getCurrentDeviceResource() {
    return getPerDeviceResource(currentDevice());
  }

  /** Makes {@code resource} the current device's (the table takes a share of it). */
  public static void setCurrentDeviceResource(MemoryResource resource) {
    setPerDeviceResource(currentDevice(), resource);
  }

  /** Goes back to the current device's default resource. */
  public static void resetCurrentDeviceResource() {
    resetPerDeviceResource(currentDevice());
  }

  /** The resource used for {@code device} (a new share: close it when done). */
  public static MemoryResource getPerDeviceResource(int device) {
    // A share taken with the read: another thread replacing the entry cannot take the resource away first.
    long ref = CmrNative.cmr_acquire_per_device_resource_ref(device);
    MemoryResource installed = INSTALLED.get(device);
    return installed == null ? MemoryResource.fromAcquired(ref) : MemoryResource.fromAcquired(ref, installed);
  }

  /** Makes {@code resource} the one of {@code device} (the table takes a share of it). */
  public static void setPerDeviceResource(int device, MemoryResource resource) {
    try {
      CmrNative.cmr_set_per_device_resource_ref(device, Arguments.ref("resource", resource));
      INSTALLED.put(device, resource);
    } finally {
      Reference.reachabilityFence(resource);
    }
  }

  /** Goes back to {@code device}'s default resource. */
  public static void resetPerDeviceResource(int device) {
    CmrNative.cmr_reset_per_device_resource_ref(device);
    INSTALLED.remove(device);
  }

  /**
   * The bytes {@code text} writes, by cmr's one size grammar (cmr/stack.h, spec/README.md): e.g.
   * "4096", "1.5GiB", "512 mb", "80%" (of the current device's free memory). A size of 2^63
   * bytes or more comes back negative, as an unsigned 64-bit value ({@link Long#toUnsignedString}).
   * A text outside the grammar throws CmrIllegalArgumentException (INVALID_ARGUMENT, or SIZE_OVERFLOW past 2^64 - 1).
   */
  public static long parseSize(String text) {
    return CmrNative.cmr_parse_size(text);
  }

  /** {@code percent} (0..100) of the current device's free memory, rounded down to 256 bytes. */
  public static long percentOfFreeDeviceMemory(int percent) {
    return CmrNative.cmr_percent_of_free_device_memory(percent);
  }
}
