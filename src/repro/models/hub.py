"""The paper profile's pre-trained weights: where ``repro fetch`` puts them and where the builders read them.

Models folder (:func:`repro.paths.models_root`: ``$REPRO_MODELS``, else ``models/`` in the repository)::

    <key>/                 a transformers model (roberta-base, gpt2, t5-*): config, safetensors weights, tokenizer
    clip-vit-b32/          open_clip's download cache for ViT-B-32 / openai (read with ``cache_dir``)
    <key>/FETCHED.json     written last: the folder is complete

Builders call :func:`local_model_dir`, which fails in one line naming the ``repro fetch`` command when a model is
not there, and :func:`offline` before loading, so nothing reaches the network at run time.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repro.paths import OFFLINE_ENV, models_root

MARKER = "FETCHED.json"


@dataclass(frozen=True)
class HubModel:
    """One pre-trained model: a transformers hub repository, or an open_clip (architecture, pretrained tag)."""

    repo: str  # HF repo id (transformers), or the open_clip architecture
    kind: str = "transformers"  # transformers | open_clip
    tag: str = ""  # open_clip pretrained tag
    family: str = "text"  # which `repro fetch --family` fetches it


#: builder key (repro.models.build) -> hub source; the weights files only (safetensors, configs, tokenizers)
HUB_MODELS: dict[str, HubModel] = {
    "roberta-base": HubModel("FacebookAI/roberta-base"),
    "gpt2": HubModel("openai-community/gpt2"),
    "t5-small": HubModel("google-t5/t5-small", family="nlp"),
    "t5-base": HubModel("google-t5/t5-base", family="nlp"),
    "t5-large": HubModel("google-t5/t5-large", family="nlp"),
    "clip-vit-b32": HubModel("ViT-B-32", kind="open_clip", tag="openai", family="vision"),
}
#: what a transformers snapshot keeps (no TF / Flax / ONNX / pickled .bin copies)
ALLOW_PATTERNS: tuple[str, ...] = ("*.json", "*.safetensors", "*.txt", "*.model")


def offline() -> None:
    """Keep the HF hub / datasets / open_clip from reaching the network in this process (runs read local files)."""
    for key, value in OFFLINE_ENV.items():
        os.environ[key] = value
    try:  # the hub library reads the variable once, at import
        import huggingface_hub.constants as hc  # read at import time: after the offline env vars above

        hc.HF_HUB_OFFLINE = True
    except ImportError:  # pragma: no cover - no hub library, nothing to switch off
        pass


def local_model_dir(key: str, root: str | Path | None = None) -> Path:
    """The fetched folder of model ``key``; a one-line error naming the ``repro fetch`` command if it is missing."""
    if key not in HUB_MODELS:
        raise KeyError(f"no hub model {key!r}; choose one of {', '.join(HUB_MODELS)}")
    folder = models_root(root) / key
    if not (folder / MARKER).is_file():
        cmd = f"repro fetch --profile paper --family {HUB_MODELS[key].family}"
        if root is not None or os.environ.get("REPRO_MODELS"):
            cmd += f" --models {models_root(root)}"
        raise FileNotFoundError(f"{folder} holds no fetched {key} weights; run `{cmd}`")
    return folder


def fetch_model(key: str, root: str | Path | None = None) -> dict[str, Any]:
    """Download model ``key`` into ``<models root>/<key>/`` (no-op when already there).  Returns its record."""
    src = HUB_MODELS[key]
    folder = models_root(root) / key
    if (folder / MARKER).is_file():
        return {"model": key, "skipped": True}
    folder.mkdir(parents=True, exist_ok=True)
    if src.kind == "open_clip":
        import open_clip  # optional heavy dependency (open_clip): vision models only

        cfg = open_clip.get_pretrained_cfg(src.repo, src.tag)
        if not cfg:
            raise ValueError(f"open_clip knows no pretrained {src.tag!r} for {src.repo}")
        path = open_clip.download_pretrained(cfg, cache_dir=str(folder))
        record: dict[str, Any] = {"model": key, "source": f"open_clip:{src.repo}/{src.tag}",
                                  "file": os.path.relpath(path, folder)}
    else:
        from huggingface_hub import snapshot_download  # heavy: fetching only

        snapshot_download(src.repo, local_dir=str(folder), allow_patterns=list(ALLOW_PATTERNS))
        record = {"model": key, "source": f"hub:{src.repo}"}
    (folder / MARKER).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return record
