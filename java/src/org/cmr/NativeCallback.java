// SPDX-License-Identifier: Apache-2.0
package org.cmr;

import java.lang.ref.Cleaner;

/**
 * The native side of a Java callback (java/swig/callbacks.swg): a global ref to it and the
 * method cmr calls. It is freed once unreachable; the resource objects that may call it keep it
 * until their native resource is gone (see {@link NativeObject}).
 */
final class NativeCallback {
  private static final Cleaner CLEANER = Cleaner.create();

  private final long address;

  private NativeCallback(Object callback, String method, String signature) {
    long made = CmrNative.cmr_java_callback_new(callback, method, signature);
    address = made;
    CLEANER.register(this, () -> CmrNative.cmr_java_callback_free(made));
  }

  static NativeCallback of(AllocateCallback callback) {
    return new NativeCallback(callback, "allocate", "(JJ)J");
  }

  static NativeCallback of(DeallocateCallback callback) {
    return new NativeCallback(callback, "deallocate", "(JJJ)V");
  }

  static NativeCallback of(FailureCallback callback) {
    return new NativeCallback(callback, "retry", "(J)Z");
  }

  /** What the create functions take. */
  long address() {
    return address;
  }
}
