// SPDX-License-Identifier: Apache-2.0
import org.cmr.Cmr;
import org.cmr.MemoryResource;

/** A program of a cmr.jar user: compiled against the JAR alone, run with no library path. */
public class App {
  public static void main(String[] args) throws Exception {
    try (MemoryResource pool = MemoryResource.parse("pool(system, initial_pool_size=1MiB)")) {
      long pointer = pool.allocate(1000);
      pool.deallocate(pointer, 1000);
    }
    System.out.println("cmr " + Cmr.version() + " jar " + Cmr.packageVersion() + (Cmr.builtWithCuda() ? " cuda" : " host"));
  }
}
