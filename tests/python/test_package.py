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


@pytest.mark.parametrize("text, expected", [
    ("1GiB", 2**30), ("512MB", 512 * 10**6), ("100", 100), ("1.5 KiB", 1536), ("2 gb", 2 * 10**9),
    ("MiB", 2**20), (" 7 b ", 7), ("1e3", 1000), ("4k", 4000), ("1PiB", 2**50),
])
def test_parse_bytes(text, expected):
    assert cmr.parse_bytes(text) == expected


@pytest.mark.parametrize("text", ["", "GiB5", "1.3B", "-1MB", "12 parsecs", "1 2 MB", "2**64"])
def test_parse_bytes_refuses_what_is_not_a_count(text):
    with pytest.raises(ValueError):
        cmr.parse_bytes(text)


def test_parse_bytes_takes_only_text():
    with pytest.raises(TypeError):
        cmr.parse_bytes(5)


def test_sizes_take_units(host_mr):
    pool = mr.PoolMemoryResource(host_mr, initial_pool_size="1MiB", maximum_pool_size="4MiB")
    assert pool.pool_size() == 2**20


def test_the_version_is_the_c_librarys():
    assert cmr.__version__ == cmr.capi.cmr_version()
