# SPDX-License-Identifier: Apache-2.0
"""Details of RMM 26.08 that its own test suite relies on: the private names
it imports, the tracking adaptor's outstanding allocations (text and
records), the async resource's handle types, and the dask extra."""

import os
import tomllib

import pytest

import cmr
from cmr import _capi as capi, mr
from conftest import CUDA_BUILD, GPU, needs_gpu

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


# ---- the private names RMM's tests import --------------------------------------------------

def test_flush_logs_flushes_every_logging_resource_set_from_python(host_mr, tmp_path):
    """RMM's test_logging imports _flush_logs from here and reads the log
    right after: what was logged is in the file without a flush() of its own."""
    from cmr.pylibrmm.memory_resource._memory_resource import PoolMemoryResource, _flush_logs
    assert PoolMemoryResource is mr.PoolMemoryResource  # RMM's classes live in that module too
    mr.set_current_device_resource(host_mr)
    mr.enable_logging(str(tmp_path / "log.csv"))
    logged = mr.get_current_device_resource()
    ptr = logged.allocate(10)
    logged.deallocate(ptr, 10)
    _flush_logs()
    lines = (tmp_path / "log.dev0.csv").read_text().splitlines()
    assert "Time,Action,Pointer,Size,Stream" in lines[0] and len(lines) == 3
    mr.disable_logging()


def test_flush_logs_without_logging_does_nothing(host_mr):
    from cmr.pylibrmm.memory_resource._memory_resource import _flush_logs
    mr.set_current_device_resource(host_mr)
    assert _flush_logs() is None


def test_supports_cuda_array_interface_is_rmms_protocol(host_mr):
    from typing import Protocol

    from cmr.pylibrmm.device_buffer import SupportsCUDAArrayInterface
    assert Protocol in SupportsCUDAArrayInterface.__mro__
    buffer = cmr.DeviceBuffer(size=16, mr=host_mr)
    assert isinstance(buffer, SupportsCUDAArrayInterface)
    assert not isinstance(b"bytes", SupportsCUDAArrayInterface)
    assert "SupportsCUDAArrayInterface" in cmr.pylibrmm.device_buffer.__all__


# ---- cmr.dask ------------------------------------------------------------------------------

def test_pyproject_declares_the_dask_extra():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as file:
        extras = tomllib.load(file)["project"]["optional-dependencies"]
    assert "distributed" in extras["dask"] and "dask" in extras["dask"]


def test_cmr_dask_exports_what_it_defines():
    dask = pytest.importorskip("cmr.dask", reason="cmr.dask needs distributed (Debian: python3-distributed)")
    assert sorted(dask.__all__) == ["CmrWorkerPlugin", "configure_workers", "worker_resource"]
    for name in dask.__all__:
        assert getattr(dask, name).__module__ == "cmr.dask"
