# SPDX-License-Identifier: Apache-2.0
"""install.consumer's Python step: the installed package, imported from its
prefix (PYTHONPATH), allocates through a pool and reports its version."""

import sys

import cmr
import cmr.mr

prefix = sys.argv[1]
if not cmr.__file__.startswith(prefix + "/"):
    sys.exit(f"cmr was imported from {cmr.__file__}, not from the prefix {prefix}")
pool = cmr.mr.PoolMemoryResource(cmr.mr.SystemMemoryResource(), "1MiB")
ptr = pool.allocate(1000)
pool.deallocate(ptr, 1000)
print("cmr", cmr.__version__, "python", pool.pool_size())
