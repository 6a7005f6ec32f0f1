#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Records two real GPU workloads as allocation logs for bench/fragmentation,
through cmr's Python package: every allocation of the workload goes to a
logging adaptor over cuda_async (cmr.mr.LoggingResourceAdaptor over
cmr.mr.CudaAsyncMemoryResource), set as the current device's resource, so
the log is the application's own stream of requests in RMM's CSV format.

  torch_training.csv.gz  a PyTorch training loop: a small Transformer
                         encoder (4 layers, d_model 512, 8 heads) with a
                         classification head, AdamW, 60 steps of batches
                         whose sequence length varies (64 to 512 tokens,
                         seeded), as real text batches do; PyTorch
                         allocates through cmr_torch_allocator (a
                         CUDAPluggableAllocator), so no caching allocator
                         sits between the model and the log.
  cupy_workload.csv.gz   a CuPy workload through cmr_cupy_allocator:
                         matrices of varying sizes multiplied, FFTs,
                         sorts, reductions and concatenations, with a
                         sliding window of live arrays, so lifetimes
                         interleave (seeded).

Each workload runs in a process of its own (an allocator is chosen before a
library's first allocation and stays for the process); the logs are
written gzip-compressed with a fixed header (no name, time 0).

    PYTHONPATH=BUILD/python python3 bench/traces/record_gpu.py OUT_DIR

needs a GPU, the CUDA build's Python package, PyTorch and CuPy: it exists to
be run on the GPU machine (bench/fragmentation/run_gpu.sh runs it), and
fails with a message anywhere else. Exit status 0 when both logs were
written, 1 otherwise."""
import gzip
import io
import os
import subprocess
import sys
import tempfile
from pathlib import Path

WORKLOADS = {"torch": "torch_training.csv.gz", "cupy": "cupy_workload.csv.gz"}


def logged_cuda_async(log_path):
    """The current device's resource: a logging adaptor over cuda_async."""
    import cmr.mr as mr

    logged = mr.LoggingResourceAdaptor(mr.CudaAsyncMemoryResource(), log_file_name=str(log_path))
    mr.set_current_device_resource(logged)
    return logged


def run_torch(log_path):
    import torch
    from cmr.allocators.torch import cmr_torch_allocator

    if cmr_torch_allocator is None:
        raise SystemExit("record_gpu.py: PyTorch has no CUDA here")
    logged = logged_cuda_async(log_path)
    torch.cuda.memory.change_current_allocator(cmr_torch_allocator)
    torch.manual_seed(1)
    device = torch.device("cuda")
    d_model, vocabulary, classes = 512, 8192, 16
    layer = torch.nn.TransformerEncoderLayer(d_model, nhead=8, dim_feedforward=2048, batch_first=True)
    embedding = torch.nn.Embedding(vocabulary, d_model).to(device)
    encoder = torch.nn.TransformerEncoder(layer, num_layers=4).to(device)
    head = torch.nn.Linear(d_model, classes).to(device)
    parameters = list(embedding.parameters()) + list(encoder.parameters()) + list(head.parameters())
    optimiser = torch.optim.AdamW(parameters, lr=1e-4)
    generator = torch.Generator().manual_seed(2)
    for _ in range(60):
        length = int(torch.randint(64, 513, (1,), generator=generator))
        tokens = torch.randint(0, vocabulary, (32, length), generator=generator).to(device)
        labels = torch.randint(0, classes, (32,), generator=generator).to(device)
        logits = head(encoder(embedding(tokens)).mean(dim=1))
        loss = torch.nn.functional.cross_entropy(logits, labels)
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()
    torch.cuda.synchronize()
    del embedding, encoder, head, parameters, optimiser, tokens, labels, logits, loss, layer
    import gc

    gc.collect()
    torch.cuda.synchronize()
    logged.flush()


def run_cupy(log_path):
    import cupy
    from cmr.allocators.cupy import cmr_cupy_allocator

    logged = logged_cuda_async(log_path)
    cupy.cuda.set_allocator(cmr_cupy_allocator)
    rng = cupy.random.default_rng(3)
    sizes = [256, 512, 1024, 1536, 2048, 3072, 4096]
    window = []
    for step in range(200):
        n = sizes[step * 7 % len(sizes)]
        a = rng.standard_normal((n, n), dtype=cupy.float32)
        b = rng.standard_normal((n, n), dtype=cupy.float32)
        c = a @ b
        spectrum = cupy.fft.rfft2(c)
        ordered = cupy.sort(c.ravel())
        joined = cupy.concatenate([ordered[: n * 4], cupy.abs(spectrum).ravel()[: n * 4]])
        window.append((c, joined))
        if len(window) > 6:
            window.pop(step * 5 % len(window))
        del a, b, spectrum, ordered
    cupy.cuda.Device().synchronize()
    window.clear()
    import gc

    gc.collect()
    cupy.cuda.Device().synchronize()
    logged.flush()


def write_gzip(source: Path, target: Path):
    """gzip with no file name and time 0 in the header."""
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=9) as out:
        out.write(source.read_bytes())
    target.write_bytes(buffer.getvalue())


def main(argv):
    if len(argv) == 4 and argv[1] == "--workload":  # the child process of one workload
        {"torch": run_torch, "cupy": run_cupy}[argv[2]](Path(argv[3]))
        return 0
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[1])
    out.mkdir(parents=True, exist_ok=True)
    failed = 0
    with tempfile.TemporaryDirectory() as scratch:
        for workload, name in WORKLOADS.items():
            log = Path(scratch) / f"{workload}.csv"
            done = subprocess.run([sys.executable, os.path.abspath(__file__), "--workload", workload, str(log)])
            if done.returncode != 0 or not log.exists():
                print(f"record_gpu.py: the {workload} workload failed (exit {done.returncode})", file=sys.stderr)
                failed = 1
                continue
            write_gzip(log, out / name)
            rows = len(log.read_text().splitlines()) - 1
            print(f"{out / name}: {rows} rows, {(out / name).stat().st_size} bytes")
    return failed


if __name__ == "__main__":
    sys.exit(main(sys.argv))
