"""Timing and memory helpers of the benchmark (built on :class:`repro.p2.cost.PeakMemory`).

- :func:`timed` — median wall time of ``repeats`` calls after ``warmup`` calls (``torch.cuda.synchronize``
  around each call on a GPU).
- :func:`peak_growth` — bytes a call allocates at its peak above what was allocated when it started: the peak
  resident set size growth on the CPU (the process's high-water mark is reset first, and freed heap memory is
  handed back to the OS with ``malloc_trim`` so an earlier measurement's free lists do not hide this one's
  allocations), ``max_memory_allocated`` minus the allocation at entry on a GPU.
"""

from __future__ import annotations

import ctypes
import gc
import statistics
import time
from typing import Any, Callable, Iterable

import torch

from repro.p2.cost import PeakMemory

GIB = 2**30


def sync(device: torch.device | str) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def release_memory() -> None:
    """Collect garbage and return the C heap's free memory to the OS (glibc ``malloc_trim``; no-op elsewhere)."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def timed(fn: Callable[[], Any], device: torch.device | str, repeats: int = 3, warmup: int = 1) -> float:
    """Median seconds of ``repeats`` calls of ``fn`` after ``warmup`` untimed calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(max(repeats, 1)):
        sync(device)
        t0 = time.perf_counter()
        fn()
        sync(device)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def peak_growth(fn: Callable[[], Any], device: torch.device | str) -> tuple[float, Any]:
    """(bytes allocated at the peak of ``fn`` above the allocation at its start, ``fn``'s return value)."""
    device = torch.device(device)
    release_memory()
    start = torch.cuda.memory_allocated(device) if device.type == "cuda" else 0
    with PeakMemory(device) as mem:
        out = fn()
        sync(device)
    return max(mem.gib * GIB - start, 0.0), out


def tensor_bytes(tensors: Iterable[torch.Tensor]) -> int:
    return int(sum(t.numel() * t.element_size() for t in tensors))


def model_bytes(model: torch.nn.Module) -> int:
    """Bytes of every parameter and buffer of ``model`` (one copy of the network)."""
    return tensor_bytes(list(model.parameters()) + list(model.buffers()))
