// SPDX-License-Identifier: Apache-2.0
package org.cmr;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.Locale;

/**
 * Loads the JNI library (libcmr_java) and libcmr before the first native call, from the first of:
 * the file the system property {@value #PATH_PROPERTY} names; the copies the JAR carries for this
 * platform (under {@value #RESOURCE_ROOT}/PLATFORM/, whose file {@value #LIST} names them in load
 * order, extracted once per process into a temporary folder); java.library.path.
 */
final class NativeLibrary {
  /** A system property naming the library file; without it the library is looked up as above. */
  static final String PATH_PROPERTY = "org.cmr.library";
  /** Where in the JAR the native libraries lie, one folder per platform (linux-x86_64). */
  static final String RESOURCE_ROOT = "/org/cmr/native";
  /** The list of a platform's libraries: libcmr (under its soname) first, so that the JNI library's need for it is met by the one loaded. */
  static final String LIST = "libraries.txt";

  private NativeLibrary() {}

  static void load() {
    String path = System.getProperty(PATH_PROPERTY);
    if (path != null) {
      System.load(Paths.get(path).toAbsolutePath().toString());
    } else if (NativeLibrary.class.getResource(resource(LIST)) != null) {
      loadFromJar();
    } else {
      System.loadLibrary("cmr_java");
    }
  }

  /** linux-x86_64 and the like: the platform folder's name. */
  static String platform() {
    String os = System.getProperty("os.name").toLowerCase(Locale.ROOT).replaceAll("[^a-z]", "");
    String arch = System.getProperty("os.arch").toLowerCase(Locale.ROOT);
    return os + "-" + (arch.equals("amd64") ? "x86_64" : arch);
  }

  private static String resource(String library) {
    return RESOURCE_ROOT + "/" + platform() + "/" + library;
  }

  private static void loadFromJar() {
    try {
      String[] libraries;
      try (InputStream in = NativeLibrary.class.getResourceAsStream(resource(LIST))) {
        libraries = new String(in.readAllBytes(), StandardCharsets.UTF_8).strip().split("\\s+");
      }
      Path folder = Files.createTempDirectory("cmr-native-");
      folder.toFile().deleteOnExit();
      for (String library : libraries) {
        Path file = folder.resolve(library);
        try (InputStream in = NativeLibrary.class.getResourceAsStream(resource(library))) {
          if (in == null) {
            throw new UnsatisfiedLinkError("cmr: the JAR has no " + resource(library));
          }
          Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
        }
        file.toFile().deleteOnExit(); // after the folder's: deleted first
        System.load(file.toString());
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cmr: extracting the native libraries from the JAR failed", e);
    }
  }
}
