# SPDX-License-Identifier: Apache-2.0
"""The package as a whole: what it exports, and its byte-count parsing."""

import pytest

import cmr
from cmr import mr


def test_every_spec_resource_has_its_rmm_class():
    for name in ("CudaMemoryResource", "ManagedMemoryResource", "SystemMemoryResource", "PinnedHostMemoryResource",
                 "CudaAsyncMemoryResource", "CudaAsyncViewMemoryResource", "CallbackMemoryResource",
                 "PoolMemoryResource", "ArenaMemoryResource", "FixedSizeMemoryResource", "BinningMemoryResource",
                 "LimitingResourceAdaptor", "LoggingResourceAdaptor", "StatisticsResourceAdaptor",
                 "TrackingResourceAdaptor", "FailureCallbackResourceAdaptor", "PrefetchResourceAdaptor",
                 "AlignedResourceAdaptor", "ThreadSafeResourceAdaptor"):
        cls = getattr(mr, name)
        assert issubclass(cls, mr.DeviceMemoryResource), name
        assert name in mr.__all__


def test_adaptors_derive_from_upstream_resource_adaptor():
    assert issubclass(mr.PoolMemoryResource, mr.UpstreamResourceAdaptor)
    assert issubclass(mr.StatisticsResourceAdaptor, mr.UpstreamResourceAdaptor)
    assert not issubclass(mr.SystemMemoryResource, mr.UpstreamResourceAdaptor)


def test_the_base_class_is_not_made_directly():
    with pytest.raises(TypeError, match="cannot be made directly"):
        mr.DeviceMemoryResource()


def test_sizes_take_units(host_mr):
    pool = mr.PoolMemoryResource(host_mr, initial_pool_size="1MiB", maximum_pool_size="4MiB")
    assert pool.pool_size() == 2**20


def test_the_version_is_the_c_librarys():
    """cmr.__version__ is VERSION's number, as cmr_version() reports it, with no label: the build is in
    the distribution's name (cmr-host, cmr-cu13), not in its version."""
    assert cmr.__version__ == cmr._capi.cmr_version()
    assert "+" not in cmr.__version__