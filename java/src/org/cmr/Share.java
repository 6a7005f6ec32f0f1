package org.cmr;

import java.util.function.LongConsumer;
import java.util.function.LongUnaryOperator;

/**
 * One share of a C resource as a Java object holds it: the typed handle (for the resource's own
 * methods), a ref (a heap copy, for the common ones) and the Java objects the resource was made
 * over, kept until the share is released (see {@link NativeObject}). Releasing it drops the share
 * and frees the copy.
 */
record Share(long handle, long ref, Object... kept) {
  /**
   * The share of a resource just created over {@code kept}: {@code toRef} makes its ref; {@code
   * destroy} undoes the creation if that fails.
   */
  static Share created(long handle, LongUnaryOperator toRef, LongConsumer destroy, Object... kept) {
    try {
      return new Share(handle, toRef.applyAsLong(handle), kept);
    } catch (RuntimeException | Error e) {
      destroy.accept(handle);
      throw e;
    }
  }

  /**
   * The share the caller took (cmr_ref_retain) of the resource behind {@code ref}, whose handle
   * {@code fromRef} finds, keeping {@code kept}.
   */
  static Share adopted(long ref, LongUnaryOperator fromRef, Object... kept) {
    try {
      return new Share(fromRef.applyAsLong(ref), ref, kept);
    } catch (RuntimeException | Error e) {
      release(ref);
      throw e;
    }
  }

  /** A share of a resource cmr did not make (a C program's own ops table): it has no typed handle. */
  static Share foreign(long ref, Object... kept) {
    return new Share(0, ref, kept);
  }

  /** Drops the share behind {@code ref} and frees the copy. */
  static void release(long ref) {
    try {
      CmrNative.cmr_ref_release(ref);
    } finally {
      CmrNative.cmr_java_ref_free(ref);
    }
  }

  /** Takes a new share of the resource behind a ref copy the caller owns, freeing the copy if that fails. */
  static long retain(long ref) {
    try {
      CmrNative.cmr_ref_retain(ref);
    } catch (RuntimeException | Error e) {
      CmrNative.cmr_java_ref_free(ref);
      throw e;
    }
    return ref;
  }
}
