package org.cmr;

import java.nio.file.Paths;

/** Loads the JNI library (libcmr_java) before the first native call. */
final class NativeLibrary {
  /** A system property naming the library file; without it the library is looked up on java.library.path. */
  static final String PATH_PROPERTY = "org.cmr.library";

  private NativeLibrary() {}

  static void load() {
    String path = System.getProperty(PATH_PROPERTY);
    if (path != null) {
      System.load(Paths.get(path).toAbsolutePath().toString());
    } else {
      System.loadLibrary("cmr_java");
    }
  }
}
