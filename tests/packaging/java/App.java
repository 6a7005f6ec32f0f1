// SPDX-License-Identifier: Apache-2.0
import org.cmr.Allocation;
import org.cmr.AllocationMode;
import org.cmr.Cmr;
import org.cmr.MemoryResource;

/** A program of a cmr.jar user: compiled against the JAR alone, run with no library path. */
public class App {
  public static void main(String[] args) throws Exception {
    Cmr.initialize(AllocationMode.POOL, 1 << 20);
    try (MemoryResource pool = Cmr.getCurrentDeviceResource();
        Allocation block = pool.allocation(1000)) {
      if (block.getSize() != 1000 || !pool.typeName().equals("pool")) {
        throw new AssertionError(block + " from " + pool);
      }
    } finally {
      Cmr.shutdown();
    }
    System.out.println("cmr " + Cmr.version() + " jar " + Cmr.packageVersion() + (Cmr.builtWithCuda() ? " cuda" : " host"));
  }
}
