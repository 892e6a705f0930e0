"""Timing and memory helpers of the benchmark (built on :func:`repro.device.sync` and :class:`repro.device.PeakMemory`).

- :func:`timed` — median wall time of ``repeats`` calls after ``warmup`` calls (``torch.cuda.synchronize``
  around each call on a GPU).
- :func:`paired` — ours and the baseline timed alternately (a, b, a, b, ...), so a machine whose load changes
  during the run slows both sides alike; the peak memory of each is taken around its first timed call.
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
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import torch

from repro.device import PeakMemory, sync

GIB = 2**30


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


def peak_growth(fn: Callable[[], Any], device: torch.device | str, timing: list[float] | None = None
                ) -> tuple[float, Any]:
    """(bytes allocated at the peak of ``fn`` above the allocation at its start, ``fn``'s return value); the
    seconds of the call itself (after the memory release, which is not timed) are appended to ``timing``."""
    device = torch.device(device)
    release_memory()
    start = torch.cuda.memory_allocated(device) if device.type == "cuda" else 0
    with PeakMemory(device) as mem:
        sync(device)
        t0 = time.perf_counter()
        out = fn()
        sync(device)
        if timing is not None:
            timing.append(time.perf_counter() - t0)
    return max(mem.gib * GIB - start, 0.0), out


def tensor_bytes(tensors: Iterable[torch.Tensor]) -> int:
    return int(sum(t.numel() * t.element_size() for t in tensors))


def model_bytes(model: torch.nn.Module) -> int:
    """Bytes of every parameter and buffer of ``model`` (one copy of the network)."""
    return tensor_bytes(list(model.parameters()) + list(model.buffers()))


@dataclass
class Timing:
    seconds: float  # median of the timed calls
    peak_bytes: float  # peak allocation growth of the first timed call
    output: Any  # the last call's return value


def paired(fa: Callable[[], Any], fb: Callable[[], Any], device: torch.device | str, repeats: int = 3,
           warmup: int = 1, repeats_b: int | None = None) -> tuple[Timing, Timing]:
    """Time ``fa`` and ``fb`` alternately (``warmup`` untimed calls of each first); ``repeats_b`` caps the timed
    calls of ``fb`` (an expensive baseline).  Each one's peak memory growth is measured around its first call
    (:func:`peak_growth`); that call runs right after the heap was handed back to the OS (``malloc_trim``) and
    pays the page faults of re-growing it, so its time counts only when it is the side's one call (``repeats``
    of 1) — with more, the median is of the calls after it (issue 33: that call ran 1.1-1.2x, once 4x, a warm
    one; with it in a median of 3 the graft / FT ratio ranged 0.47-1.39 over five runs, without it 1.11-1.23)."""
    for _ in range(warmup):
        fa()
        fb()
    repeats_b = repeats if repeats_b is None else repeats_b
    times: dict[str, list[float]] = {"a": [], "b": []}
    peaks: dict[str, float] = {}
    outs: dict[str, Any] = {}
    first: dict[str, list[float]] = {"a": [], "b": []}
    for i in range(max(repeats, repeats_b, 1) + 1):
        for key, fn, n in (("a", fa, repeats), ("b", fb, repeats_b)):
            n = max(n, 1)
            if i > n or (i == n and n == 1):
                continue
            if i == 0:
                peaks[key], outs[key] = peak_growth(fn, device, first[key])
                if n == 1:
                    times[key] += first[key]
            else:
                sync(device)
                t0 = time.perf_counter()
                outs[key] = fn()
                sync(device)
                times[key].append(time.perf_counter() - t0)
    return (Timing(statistics.median(times["a"]), peaks["a"], outs["a"]),
            Timing(statistics.median(times["b"]), peaks["b"], outs["b"]))
