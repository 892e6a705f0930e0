"""Where the models run: the one place that decides the device and the numeric precision.

A profile declares ``device`` ("auto", "cpu", "cuda", "cuda:1", ...) and ``precision`` ("fp32", "bf16", "tf32");
``repro book --device`` / ``repro run --device`` and a notebook's ``device`` parameter override the profile's
device.  :func:`resolve_device` turns that into a concrete ``torch.device``: "auto" is ``cuda`` when a GPU is
visible and ``cpu`` otherwise; asking for ``cuda`` without a GPU fails with a clear message.

Precision has two phases: the training loop's forward passes (``Profile.precision``) and the evaluation loop's
(``Profile.eval_precision``, None = the same).  "bf16" wraps those forward passes in ``torch.autocast(bfloat16)``,
"tf32" enables TF32 matmuls, "fp32" is plain float32.  The paper profile follows the official code per phase
(spec D4/D7): P2 vision trains under bf16 autocast and evaluates in fp32, P2 T5 trains and evaluates under bf16,
P1 and TaLoS calibration run fp32 (calibration, grafting and AdaMerging never autocast).  ``--precision`` on
``repro run`` / ``repro book`` (a notebook's ``precision`` parameter) sets both phases.  A profile's precision
applies on CUDA only (on the CPU it runs fp32; :func:`precision_used`); a model's ``precision`` attribute set by
hand is honoured on any device (tests use bf16 autocast on the CPU).  :func:`environment_meta` records what was
applied, with the device, library versions and the git commit, in every results ``meta``
(:class:`repro.report.results.Results`).

Image batches are built in ``torch.utils.data.DataLoader`` workers (:func:`repro.core.evaluation.batches`);
:func:`loader_workers` is their count: ``Profile.loader_workers``, or None = 0 on the CPU and every core but
one on CUDA.

Measuring on the device: :func:`sync` before a clock read and :class:`PeakMemory` around a block are the one timing
and memory primitives (P2 Table 3's iteration cost, :mod:`repro.p2.efficiency` and the benchmark's
:mod:`repro.bench.measure` build on them).
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import resource
import subprocess
from importlib.metadata import version
from typing import Any

import torch

from repro.paths import project_root

DEVICE_CHOICES: tuple[str, ...] = ("auto", "cpu", "cuda")
PRECISIONS: tuple[str, ...] = ("fp32", "bf16", "tf32")

#: what :func:`configure` settled on in this process (for the results meta): device, precision, model classes
_CURRENT: dict[str, Any] = {}


def resolve_device(requested: str | None = "auto") -> torch.device:
    """The concrete device for ``requested`` ("auto" / None → cuda when available, else cpu)."""
    req = (requested or "auto").strip().lower()
    if req == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if req == "cpu":
        return torch.device("cpu")
    if req.startswith("cuda"):
        if not torch.cuda.is_available():
            raise RuntimeError(f"device {requested!r} asked for, but torch sees no CUDA GPU "
                               f"(torch {torch.__version__}, built for CUDA {torch.version.cuda}); "
                               "use --device cpu / auto, or install a CUDA build of torch (see the README)")
        return torch.device(req)
    raise ValueError(f"unknown device {requested!r}; choose one of {', '.join(DEVICE_CHOICES)} (or cuda:N)")


def precision_used(precision: str, device: torch.device | str) -> str:
    """The precision that applies on ``device``: ``precision`` on CUDA, "fp32" on the CPU."""
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; choose one of {', '.join(PRECISIONS)}")
    return precision if torch.device(device).type == "cuda" else "fp32"


def default_workers(device: torch.device | str) -> int:
    """DataLoader workers for image batches when the profile does not say: 0 on the CPU, every core but one on CUDA
    (measured on an H200, benchmarks/gpu_paper_path.py: a ViT-B/32 step at batch 128 consumes 2,288 images/s, and
    decoding 500x375 JPEGs gave 149-190 images/s without workers, 879 with 8 and 1,235 with 15)."""
    if torch.device(device).type != "cuda":
        return 0
    return max(0, (os.cpu_count() or 1) - 1)


def configure(model: torch.nn.Module, device: torch.device, precision: str = "fp32",
              eval_precision: str | None = None, workers: int | None = None) -> str:
    """Move ``model`` to ``device``; set its training and evaluation precision (``model.precision``,
    ``model.eval_precision``, read by :func:`autocast`) and its DataLoader workers (``model.loader_workers``).

    Returns the training precision actually used; "tf32" also switches on TF32 matmuls for the process.
    """
    used = precision_used(precision, device)
    used_eval = precision_used(eval_precision or precision, device)
    if workers is not None and workers < 0:
        raise ValueError(f"loader workers must be >= 0 (or None: {default_workers(device)} here), got {workers}")
    model.to(device)
    model.precision = used  # type: ignore[attr-defined]
    model.eval_precision = used_eval  # type: ignore[attr-defined]
    model.loader_workers = default_workers(device) if workers is None else int(workers)  # type: ignore[attr-defined]
    if "tf32" in (used, used_eval):
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    _CURRENT.update(device=str(device), precision=used, eval_precision=used_eval)
    backbone = getattr(model, "backbone", None)
    name = type(model).__name__ + (f"({type(backbone).__name__})" if backbone is not None else "")
    models = _CURRENT.setdefault("models", [])
    if name not in models:
        models.append(name)
    return used


PHASES: tuple[str, ...] = ("train", "eval")


def autocast(model: torch.nn.Module, phase: str = "train") -> contextlib.AbstractContextManager:
    """The autocast context of ``phase`` ("train": ``model.precision``, "eval": ``model.eval_precision``) for a
    forward pass of ``model``: bf16 autocast on the model's device type when that precision is "bf16", else a no-op."""
    if phase not in PHASES:
        raise ValueError(f"unknown precision phase {phase!r}; choose one of {', '.join(PHASES)}")
    precision = getattr(model, "precision", "fp32")
    if phase == "eval":
        precision = getattr(model, "eval_precision", None) or precision
    if precision == "bf16":
        param = next(model.parameters(), None)
        return torch.autocast(param.device.type if param is not None else "cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def loader_workers(model: torch.nn.Module) -> int:
    """DataLoader workers of ``model``'s image batches (set by :func:`configure`; 0 when never configured)."""
    return int(getattr(model, "loader_workers", 0))


def _version(module: str) -> str | None:
    try:
        return version(module)
    except Exception:  # noqa: BLE001 - a missing optional package is recorded as None
        return None


@functools.lru_cache(maxsize=1)
def git_commit() -> str | None:
    """The repository's HEAD commit (with "+dirty" when the work tree differs), or None outside a checkout."""
    root = project_root()
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if dirty else "") if head else None


def environment_meta() -> dict[str, Any]:
    """Device, precision, model classes, GPU name, library versions and git commit: every results ``meta``."""
    device = _CURRENT.get("device") or str(resolve_device("cpu"))
    meta: dict[str, Any] = {
        "device": device,
        "precision": _CURRENT.get("precision", "fp32"),  # the training loop's
        "eval_precision": _CURRENT.get("eval_precision", _CURRENT.get("precision", "fp32")),
        "models": list(_CURRENT.get("models", [])),
        "gpu": torch.cuda.get_device_name(torch.device(device)) if device.startswith("cuda") else None,
        "versions": {"torch": torch.__version__, "transformers": _version("transformers"),
                     "peft": _version("peft"), "open_clip": _version("open_clip_torch")},
        "git_commit": git_commit(),
    }
    return meta


# --- measuring on the device ------------------------------------------------------------------------------
def sync(device: torch.device | str) -> None:
    """Wait for the device's queued work before a clock read (``torch.cuda.synchronize`` on a GPU; no-op on the CPU)."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def _status_kib(field: str) -> int | None:
    """A ``kB`` field of Linux's ``/proc/self/status`` (``VmRSS``, ``VmHWM``); None where there is none."""
    try:
        with open("/proc/self/status") as f:
            m = re.search(rf"^{field}:\s+(\d+) kB", f.read(), re.MULTILINE)
    except OSError:
        return None
    return int(m.group(1)) if m else None


def _reset_high_water_mark() -> bool:
    """Reset this process's peak resident set size (Linux ``clear_refs`` 5); False where that is not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return _status_kib("VmHWM") is not None


class PeakMemory:
    """Peak memory of a ``with`` block in GiB (``.gib``): CUDA peak allocation on a GPU, else peak RSS growth.

    On the CPU the process's high-water mark is reset on entry, so the figure is the block's own peak above the
    resident size it started with (activations, gradients, optimizer state), not an earlier peak such as model
    loading.  Where the mark cannot be reset (not Linux), ``ru_maxrss`` is used and ``.exact`` is False.
    """

    def __init__(self, device: torch.device | str = "cpu") -> None:
        self.device = torch.device(device)
        self.gib = 0.0
        self.exact = True

    def _cpu_kib(self, field: str) -> int:
        if self.exact:
            return _status_kib(field) or 0
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux

    def __enter__(self) -> "PeakMemory":
        if self.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(self.device)
        else:
            self.exact = _reset_high_water_mark()
            self._start_kib = self._cpu_kib("VmRSS")
        return self

    def __exit__(self, *exc: object) -> None:
        if self.device.type == "cuda":
            self.gib = torch.cuda.max_memory_allocated(self.device) / 2**30
        else:
            self.gib = max(self._cpu_kib("VmHWM") - self._start_kib, 0) / 2**20


def out_of_memory_line(job: str, batch_size: int | None, error: BaseException) -> str:
    """One line for a GPU out-of-memory error of ``job`` (``torch.OutOfMemoryError``, which is
    ``torch.cuda.OutOfMemoryError``): the job, its batch size, the memory the allocator asked for and what the GPU
    had, and the way out (the workflow's retry asks for a bigger GPU and more memory)."""
    text = " ".join(str(error).split())
    asked = re.search(r"[Tt]ried to allocate ([\d.]+ [KMGT]i?B)", text)
    total = re.search(r"total capacity of ([\d.]+ [KMGT]i?B)", text)
    free = re.search(r"of which ([\d.]+ [KMGT]i?B) is free", text)
    parts = [f"batch size {batch_size}" if batch_size else "batch size: the profile's",
             f"asked for {asked.group(1)}" if asked else "asked for more than was free"]
    if total:
        parts.append(f"the GPU holds {total.group(1)}" + (f", {free.group(1)} free" if free else ""))
    return (f"{job}: out of GPU memory ({'; '.join(parts)}); nothing was stored: run it on a GPU with more memory "
            f"(the slurm profile's retry asks for the next gpu_models entry and 1.5x mem_mb) or lower the batch size")
