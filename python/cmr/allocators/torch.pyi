# SPDX-License-Identifier: Apache-2.0
# PyTorch's CUDAPluggableAllocator over libcmr, or None where PyTorch or its
# CUDA is missing (PyTorch ships no types this package could name).
from typing import Any

cmr_torch_allocator: Any
rmm_torch_allocator: Any
