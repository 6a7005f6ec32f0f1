// SPDX-License-Identifier: Apache-2.0
package org.cmr;

import java.util.function.LongConsumer;
import java.util.function.LongUnaryOperator;

/**
 * One share of a C resource as a Java object holds it: the typed handle that owns the share (for
 * the resource's own methods; 0 for a resource cmr did not make, whose share is held through the
 * ref), a ref (a heap copy, for the common calls), what destroys the handle, and the Java objects
 * the resource was made over, kept until the share is released (see {@link NativeObject}).
 */
record Share(long handle, long ref, LongConsumer destroy, Object... kept) {
  /**
   * The share of a resource just created over {@code kept}: {@code toRef} makes its ref; {@code
   * destroy} ends the handle (and undoes the creation if that fails).
   */
  static Share created(long handle, LongUnaryOperator toRef, LongConsumer destroy, Object... kept) {
    try {
      return new Share(handle, toRef.applyAsLong(handle), destroy, kept);
    } catch (RuntimeException | Error e) {
      destroy.accept(handle);
      throw e;
    }
  }

  /**
   * A share of its own of the resource behind {@code ref} (a copy this takes over): the handle
   * {@code fromRef} makes owns it. With {@code held}, the share the caller took with the ref
   * (cmr_acquire_*) is given back, whatever happens.
   */
  static Share fromRef(
      long ref, boolean held, LongUnaryOperator fromRef, LongConsumer destroy, Object... kept) {
    long handle;
    try {
      handle = fromRef.applyAsLong(ref);
    } catch (RuntimeException | Error e) {
      drop(ref, held);
      throw e;
    }
    try {
      if (held) {
        CmrNative.cmr_ref_release(ref);
      }
    } catch (RuntimeException | Error e) {
      try {
        destroy.accept(handle);
      } finally {
        CmrNative.cmr_java_ref_free(ref);
      }
      throw e;
    }
    return new Share(handle, ref, destroy, kept);
  }

  /**
   * A share of a resource cmr did not make (a C program's own ops table), which has no typed
   * handle: the caller's ({@code held}) or one taken here.
   */
  static Share foreign(long ref, boolean held, Object... kept) {
    if (!held) {
      try {
        CmrNative.cmr_ref_retain(ref);
      } catch (RuntimeException | Error e) {
        CmrNative.cmr_java_ref_free(ref);
        throw e;
      }
    }
    return new Share(0, ref, null, kept);
  }

  /**
   * Frees a ref copy the caller cannot use, giving back the share taken with it if {@code held}.
   */
  static void drop(long ref, boolean held) {
    try {
      if (held) {
        CmrNative.cmr_ref_release(ref);
      }
    } finally {
      CmrNative.cmr_java_ref_free(ref);
    }
  }

  /**
   * What drops the share and frees the ref copy given to it. It holds the handle and its destroy
   * function, not this record: the objects kept are released by {@link NativeObject} itself.
   */
  LongConsumer releaser() {
    long owner = handle;
    LongConsumer end = destroy;
    if (owner == 0) {
      return copy -> drop(copy, true);
    }
    return copy -> {
      try {
        end.accept(owner);
      } finally {
        CmrNative.cmr_java_ref_free(copy);
      }
    };
  }
}
