# SPDX-License-Identifier: Apache-2.0
"""torch.cuda.graph over cmr's PyTorch allocator (cmr.allocators.torch), on a
GPU with PyTorch (skipped elsewhere). PyTorch takes its allocator once per
process, so this file is its own ctest (python.torch_graphs).

The captured work allocates through cmr's pool (an intermediate it frees in
the capture, an output it keeps): the pool serves both from graph memory
(docs/stream_capture.md), the capture stays valid, 1,000 replays give the
right output each time, and the bytes cmr holds for the graph are back when
the output is dropped."""

import pytest

from conftest import needs_gpu

torch = pytest.importorskip("torch")

from cmr import mr  # noqa: E402

ELEMENTS = 1 << 16
REPLAYS = 1000


@pytest.fixture(scope="module")
def torch_over_cmr():
    """PyTorch's allocator is cmr's for the whole process (it is taken once,
    before any tensor); the counted pool is what cmr serves it from."""
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no GPU")
    from cmr.allocators.torch import cmr_torch_allocator
    stats = mr.StatisticsResourceAdaptor(mr.PoolMemoryResource(mr.CudaMemoryResource(), initial_pool_size=1 << 26))
    mr.set_current_device_resource(stats)
    torch.cuda.memory.change_current_allocator(cmr_torch_allocator)
    return stats


@pytest.fixture
def counted_pool(torch_over_cmr):
    """The device's resource again for each test: conftest's autouse fixture
    puts the default one back after every test."""
    mr.set_current_device_resource(torch_over_cmr)
    return torch_over_cmr


@needs_gpu
def test_a_graph_captured_over_cmr_replays_a_thousand_times(counted_pool):
    static_input = torch.zeros(ELEMENTS, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # the warm-up PyTorch asks for before a capture
        for _ in range(3):
            (static_input * 2 + 1).sum()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    held_before = counted_pool.allocation_counts.current_bytes

    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        doubled = static_input * 2  # graph memory, freed in the capture below
        static_output = doubled + 1  # graph memory the graph keeps
        del doubled
    assert counted_pool.allocation_counts.current_bytes > held_before  # the output, still held

    for replay in range(REPLAYS):
        static_input.fill_(float(replay))
        graph.replay()
        torch.cuda.synchronize()
        expected = 2.0 * replay + 1.0
        assert float(static_output[0]) == expected and float(static_output[-1]) == expected, replay

    del static_output
    del graph
    torch.cuda.synchronize()
    assert counted_pool.allocation_counts.current_bytes == held_before


@needs_gpu
def test_tensors_made_before_the_capture_are_freed_in_it(counted_pool):
    before = torch.ones(ELEMENTS, device="cuda")
    torch.cuda.synchronize()
    held_before = counted_pool.allocation_counts.current_bytes
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        total = before.sum()
        del before  # a free on the capturing stream of a block from before the capture
    graph.replay()
    torch.cuda.synchronize()
    assert float(total) == ELEMENTS
    del total, graph
    torch.cuda.synchronize()
    # The pool serves the block freed in the capture again, out of capture.
    again = torch.ones(ELEMENTS, device="cuda")
    assert float(again.sum()) == ELEMENTS
    del again
    torch.cuda.synchronize()
    assert counted_pool.allocation_counts.current_bytes < held_before


@needs_gpu
def test_the_output_of_a_graph_never_launched_is_forgotten(counted_pool, capfd):
    static_input = torch.ones(ELEMENTS, device="cuda")
    torch.cuda.synchronize()
    held_before = counted_pool.allocation_counts.current_bytes
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_output = static_input * 2  # graph memory the graph keeps
    assert counted_pool.allocation_counts.current_bytes > held_before
    del graph  # never launched: its output was never backed by memory
    torch.cuda.synchronize()
    del static_output  # the driver finds nothing to free; cmr forgets the block
    torch.cuda.synchronize()
    assert counted_pool.allocation_counts.current_bytes == held_before
    assert "cmr_pluggable_deallocate" not in capfd.readouterr().err  # no free reported lost
