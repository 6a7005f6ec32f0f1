# SPDX-License-Identifier: Apache-2.0
"""The per-device table, reinitialize, logging set-up and streams."""

import gc
import weakref

import pytest

import cmr
from cmr import mr


def test_the_default_is_the_builds_own_resource():
    current = mr.get_current_device_resource()
    expected = "cuda" if cmr._capi.cmr_built_with_cuda() else "system"
    assert current.type_name == expected
    assert mr.get_current_device_resource_type() is type(current)
    assert not mr.is_initialized()


def test_set_and_get_keep_the_python_object(host_mr):
    stats = mr.StatisticsResourceAdaptor(host_mr)
    mr.set_current_device_resource(stats)
    assert mr.get_current_device_resource() is stats
    assert mr.get_per_device_resource(0) is stats
    assert mr.get_per_device_resource_type(0) is mr.StatisticsResourceAdaptor
    assert mr.is_initialized()
    watch = weakref.ref(stats)
    del stats
    gc.collect()
    assert watch() is not None  # the table keeps it


def test_bad_devices(host_mr):
    with pytest.raises(ValueError, match="CMR_ERROR_UNKNOWN_DEVICE"):
        mr.set_per_device_resource(99, host_mr)
    with pytest.raises(TypeError):
        mr.get_per_device_resource("0")
    with pytest.raises(TypeError):
        mr.set_current_device_resource("not a resource")


def test_available_device_memory():
    free, total = mr.available_device_memory()
    assert 0 < free <= total


def test_reinitialize_with_rmms_arguments(tmp_path):
    cmr.reinitialize(pool_allocator=True, initial_pool_size="2MiB", maximum_pool_size="8MiB")
    pool = mr.get_current_device_resource()
    assert isinstance(pool, mr.PoolMemoryResource) and pool.pool_size() == 2 << 20
    log = tmp_path / "cmr_log.csv"
    cmr.reinitialize(logging=True, log_file_name=str(log))
    logged = mr.get_current_device_resource()
    assert isinstance(logged, mr.LoggingResourceAdaptor)
    assert logged.get_file_name() == str(tmp_path / "cmr_log.dev0.csv")
    assert mr.get_log_filenames() == {0: str(tmp_path / "cmr_log.dev0.csv")}


def test_reinitialize_with_a_stack_expression():
    cmr.reinitialize(resource="statistics(pool(system, initial_pool_size=1MiB))")
    top = mr.get_current_device_resource()
    assert isinstance(top, mr.StatisticsResourceAdaptor)
    ptr = top.allocate(1000)
    assert top.allocation_counts.current_bytes == 1000
    top.deallocate(ptr, 1000)


def test_reinitialize_refuses_bad_combinations():
    with pytest.raises(ValueError, match="not both"):
        cmr.reinitialize(pool_allocator=True, resource="system")
    # As RMM's: without a pool the sizes are ignored, whatever they are.
    cmr.reinitialize(initial_pool_size="not a size", maximum_pool_size=-5)
    assert type(mr.get_current_device_resource()) is not mr.PoolMemoryResource
    with pytest.raises(TypeError):
        cmr.reinitialize(devices="0")
    with pytest.raises(ValueError, match="CMR_ERROR_INVALID_ARGUMENT"):
        cmr.reinitialize(resource="pool(no_such_resource)")


def test_hooks_run_newest_first_and_can_be_removed():
    order = []
    first = cmr.register_reinitialize_hook(order.append, "first")
    cmr.register_reinitialize_hook(lambda: order.append("second"))
    cmr.reinitialize()
    assert order == ["second", "first"]
    cmr.unregister_reinitialize_hook(first)
    order.clear()
    cmr.reinitialize()
    assert order == ["second"]
    cmr._reinitialize._hooks.clear()


def test_enable_and_disable_logging(host_mr, tmp_path):
    mr.set_current_device_resource(host_mr)
    mr.enable_logging(str(tmp_path / "log.csv"))
    logged = mr.get_current_device_resource()
    assert isinstance(logged, mr.LoggingResourceAdaptor) and logged.upstream_mr is host_mr
    assert mr.get_log_filenames() == {0: str(tmp_path / "log.dev0.csv")}
    ptr = logged.allocate(10)
    logged.deallocate(ptr, 10)
    mr.disable_logging()
    assert mr.get_current_device_resource() is host_mr
    assert mr.get_log_filenames() == {0: None}
    assert len((tmp_path / "log.dev0.csv").read_text().splitlines()) == 3


class _Protocol:
    def __init__(self, handle):
        self.handle_value = handle

    def __cuda_stream__(self):
        return (0, self.handle_value)


class _TorchLike:
    def __init__(self, handle):
        self.cuda_stream = handle


class _CupyLike:
    def __init__(self, handle):
        self.ptr = handle


class _Handle:
    def __init__(self, value):
        self.value = value


class _NumbaLike:
    def __init__(self, handle):
        self.handle = _Handle(handle)


def test_streams_in_every_form(host_mr):
    pool = mr.PoolMemoryResource(host_mr, initial_pool_size=1 << 20)
    made = cmr.Stream()
    assert not made.is_default() and made.handle == int(made) != 0
    made.synchronize()
    for form in (made, int(made), _Protocol(int(made)), _TorchLike(int(made)), _CupyLike(int(made)),
                 _NumbaLike(int(made)), cmr.Stream(_CupyLike(int(made)))):
        ptr = pool.allocate(512, form)
        pool.deallocate(ptr, 512, form)
    assert cmr.Stream(_Protocol(int(made))) == made
    assert cmr.DEFAULT_STREAM == 0 and cmr.DEFAULT_STREAM.is_default()
    assert cmr.LEGACY_DEFAULT_STREAM == 1 and cmr.PER_THREAD_DEFAULT_STREAM == 2


def test_bad_streams(host_mr):
    with pytest.raises(TypeError, match="stream argument cannot be None"):
        host_mr.allocate(10, None)
    with pytest.raises(TypeError, match="a stream must be"):
        host_mr.allocate(10, object())
    with pytest.raises(TypeError, match="__cuda_stream__"):
        host_mr.allocate(10, type("NotATuple", (), {"__cuda_stream__": lambda self: 5})())
    with pytest.raises(TypeError):
        cmr.Stream(3.5)
