"""Artifact store: safetensors tensors + JSON metadata, keyed by a hash of their config, written atomically.

Everything a run produces (fine-tuned backbones as sparse task vectors, masks, graft scores) is stored as
``<root>/<kind>/<hash>.safetensors`` + ``.json``.  Writes go to a temporary file and are renamed into place,
so a killed run never leaves a half-written artifact and simply recomputes the missing ones on resume.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable

import torch
from safetensors.torch import load_file, save_file


def config_hash(config: dict[str, Any]) -> str:
    """Stable 16-hex-digit hash of a JSON-serializable config."""
    blob = json.dumps(config, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def _atomic_write(path: Path, write: Callable[[str], None]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600 files; artifacts and results are meant to be shared
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def write_json(path: str | Path, obj: Any) -> None:
    """Atomic JSON write."""
    def w(tmp: str) -> None:
        with open(tmp, "w") as f:
            json.dump(obj, f, indent=1, sort_keys=False, default=_json_default)
    _atomic_write(Path(path), w)


def _json_default(o: Any) -> Any:
    if hasattr(o, "item"):
        return o.item()
    if hasattr(o, "tolist"):
        return o.tolist()
    return str(o)


def save_tensors(path: str | Path, tensors: dict[str, torch.Tensor], meta: dict[str, Any]) -> None:
    """Write ``<path>.safetensors`` then ``<path>.json`` (the JSON marks the artifact complete)."""
    path = Path(path)
    st = path.with_suffix(".safetensors") if path.suffix != ".safetensors" else path
    js = st.with_suffix(".json")
    contiguous = {k: v.detach().contiguous().cpu() for k, v in tensors.items()}
    _atomic_write(st, lambda tmp: save_file(contiguous, tmp))
    write_json(js, meta)


def load_tensors(path: str | Path) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    path = Path(path)
    st = path.with_suffix(".safetensors") if path.suffix != ".safetensors" else path
    js = st.with_suffix(".json")
    if not js.exists() or not st.exists():
        raise FileNotFoundError(f"no complete artifact at {st} (+ .json)")
    return load_file(str(st)), json.loads(js.read_text())


class ArtifactStore:
    """Content-addressed store under ``root``: ``store.path(kind, config)``, ``exists``, ``save``, ``load``."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def path(self, kind: str, config: dict[str, Any]) -> Path:
        return self.root / kind / config_hash(config)

    def exists(self, kind: str, config: dict[str, Any]) -> bool:
        p = self.path(kind, config)
        return p.with_suffix(".json").exists() and p.with_suffix(".safetensors").exists()

    def save(self, kind: str, config: dict[str, Any], tensors: dict[str, torch.Tensor], meta: dict | None = None) -> Path:
        p = self.path(kind, config)
        save_tensors(p, tensors, {"kind": kind, "config": config, **(meta or {})})
        return p

    def load(self, kind: str, config: dict[str, Any]) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
        return load_tensors(self.path(kind, config))

    def get_or_compute(self, kind: str, config: dict[str, Any],
                       compute: Callable[[], tuple[dict[str, torch.Tensor], dict[str, Any]]]):
        """Load the artifact for ``config`` or compute, save and return it (resume-friendly cache)."""
        if self.exists(kind, config):
            return self.load(kind, config)
        tensors, meta = compute()
        self.save(kind, config, tensors, meta)
        return self.load(kind, config)
