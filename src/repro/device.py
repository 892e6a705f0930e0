"""Where the models run: the one place that decides the device and the numeric precision.

A profile declares ``device`` ("auto", "cpu", "cuda", "cuda:1", ...) and ``precision`` ("fp32", "bf16", "tf32");
``repro book --device`` / ``repro run --device`` and a notebook's ``device`` parameter override the profile's
device.  :func:`resolve_device` turns that into a concrete ``torch.device``: "auto" is ``cuda`` when a GPU is
visible and ``cpu`` otherwise; asking for ``cuda`` without a GPU fails with a clear message.

Precision applies on CUDA only (on the CPU every profile runs fp32): "bf16" wraps every forward pass of the one
training loop and the one evaluation loop in ``torch.autocast(bfloat16)`` (the official TaLoS vision / T5 code
trains under bf16 autocast), "tf32" enables TF32 matmuls.  :func:`precision_used` is what was actually applied;
:func:`environment_meta` records it, with the device, library versions and the git commit, in every results
``meta`` (:class:`repro.report.results.Results`).
"""

from __future__ import annotations

import contextlib
import functools
import subprocess
from typing import Any

import torch

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


def configure(model: torch.nn.Module, device: torch.device, precision: str = "fp32") -> str:
    """Move ``model`` to ``device`` and set its precision (``model.precision``, read by :func:`autocast`).

    Returns the precision actually used; "tf32" also switches on TF32 matmuls for the process.
    """
    used = precision_used(precision, device)
    model.to(device)
    model.precision = used  # type: ignore[attr-defined]
    if used == "tf32":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    _CURRENT.update(device=str(device), precision=used)
    backbone = getattr(model, "backbone", None)
    name = type(model).__name__ + (f"({type(backbone).__name__})" if backbone is not None else "")
    models = _CURRENT.setdefault("models", [])
    if name not in models:
        models.append(name)
    return used


def autocast(model: torch.nn.Module) -> contextlib.AbstractContextManager:
    """The autocast context for one forward pass of ``model``: bf16 autocast when configured, else a no-op."""
    if getattr(model, "precision", "fp32") == "bf16":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def _version(module: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(module)
    except Exception:  # noqa: BLE001 - a missing optional package is recorded as None
        return None


@functools.lru_cache(maxsize=1)
def git_commit() -> str | None:
    """The repository's HEAD commit (with "+dirty" when the work tree differs), or None outside a checkout."""
    from repro.paths import project_root

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
        "precision": _CURRENT.get("precision", "fp32"),
        "models": list(_CURRENT.get("models", [])),
        "gpu": torch.cuda.get_device_name(torch.device(device)) if device.startswith("cuda") else None,
        "versions": {"torch": torch.__version__, "transformers": _version("transformers"),
                     "peft": _version("peft"), "open_clip": _version("open_clip_torch")},
        "git_commit": git_commit(),
    }
    return meta
