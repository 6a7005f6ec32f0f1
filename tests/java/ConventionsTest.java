// SPDX-License-Identifier: Apache-2.0
package org.cmr.tests;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import org.cmr.Cmr;
import org.cmr.Status;
import org.junit.Test;

/** The public API of org.cmr speaks Java: no SWIG name in it, enums as plain Java enums. */
public class ConventionsTest {
  /** Every class of org.cmr in the JAR the tests run over. */
  private static List<Class<?>> packageClasses() throws Exception {
    File jar = new File(Cmr.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    List<Class<?>> classes = new ArrayList<>();
    try (JarFile file = new JarFile(jar)) {
      for (Enumeration<JarEntry> entries = file.entries(); entries.hasMoreElements(); ) {
        String name = entries.nextElement().getName();
        if (name.startsWith("org/cmr/") && name.endsWith(".class") && name.indexOf('/', "org/cmr/".length()) < 0) {
          String binary = name.substring(0, name.length() - ".class".length()).replace('/', '.');
          classes.add(Class.forName(binary, false, Cmr.class.getClassLoader()));
        }
      }
    }
    assertTrue("found only " + classes.size() + " classes in " + jar, classes.size() > 30);
    return classes;
  }

  private static boolean visible(int modifiers) {
    return Modifier.isPublic(modifiers) || Modifier.isProtected(modifiers);
  }

  private static boolean swigName(String name) {
    return name.toLowerCase().contains("swig");
  }

  @Test
  public void noSwigNameIsPublic() throws Exception {
    List<String> found = new ArrayList<>();
    for (Class<?> type : packageClasses()) {
      if (!Modifier.isPublic(type.getModifiers())) {
        continue;
      }
      if (swigName(type.getSimpleName()) || type.getSimpleName().startsWith("CmrNative")) {
        found.add(type.getName());
      }
      for (Method method : type.getDeclaredMethods()) {
        if (visible(method.getModifiers()) && swigName(method.getName())) {
          found.add(type.getName() + "." + method.getName() + "()");
        }
      }
      for (Field field : type.getDeclaredFields()) {
        if (visible(field.getModifiers()) && swigName(field.getName())) {
          found.add(type.getName() + "." + field.getName());
        }
      }
    }
    assertEquals("public SWIG names", List.of(), found);
  }

  @Test
  public void swigsModulesArePackagePrivate() throws Exception {
    int modules = 0;
    for (Class<?> type : packageClasses()) {
      if (type.getSimpleName().startsWith("CmrNative")) {
        modules++;
        assertFalse(type.getName(), Modifier.isPublic(type.getModifiers()));
      }
    }
    assertEquals("CmrNative and CmrNativeJNI", 2, modules);
  }

  @Test
  public void enumsArePlainJavaEnums() {
    assertTrue(Status.class.isEnum());
    assertEquals(Status.ERROR_INVALID_ARGUMENT, Status.valueOf("ERROR_INVALID_ARGUMENT"));
    for (Method method : Status.class.getDeclaredMethods()) {
      assertFalse(method.getName(), visible(method.getModifiers()) && swigName(method.getName()));
    }
  }
}
