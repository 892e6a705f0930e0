"""The classifier interface every model family implements.

A :class:`Classifier` maps a tokenized batch of one task to C-way logits.  It owns one *backbone* (the
parameters that fine-tuning edits, and that grafting / task vectors / masks are defined over) and one *head*
per task (frozen zero-shot heads, label-word heads, or a trained linear head for "standard FT").

Parameter sets used by the papers are named here once:

- :meth:`Classifier.graftable_names`: P1's eligible set, the transformer blocks only (attention, FFN,
  LayerNorms, biases); embeddings and heads excluded.  Sparsity in P1 is relative to this set.
- :meth:`Classifier.maskable_names`: P2's maskable set (Linear / conv layers and LayerNorms of the
  backbone; embeddings, LM head and task heads excluded).
"""

from __future__ import annotations

from typing import Iterable, Sequence

import torch
from torch import nn

from repro.data.tasks import Example, TaskSpec


class Classifier(nn.Module):
    """Backbone + one head per task.  ``forward(batch, task) -> logits[B, C]``."""

    #: name prefix of the per-task heads (never part of a task vector)
    HEAD_PREFIX = "heads."
    #: whether batches are worth building in DataLoader worker processes (image decoding and augmentation):
    #: :meth:`collate` then returns CPU tensors and the loops move them (repro.core.evaluation.batches)
    COLLATE_IN_WORKERS = False

    def __init__(self) -> None:
        super().__init__()
        self.heads = nn.ModuleDict()
        self.specs: dict[str, TaskSpec] = {}

    # --- tasks -------------------------------------------------------------------------------------------
    def add_task(self, spec: TaskSpec, linear_head: bool = False) -> None:
        """Register a task (builds its head).  ``linear_head`` = P1 "standard FT" trainable linear head."""
        raise NotImplementedError

    def has_task(self, task: str) -> bool:
        return task in self.specs

    def _check_task(self, task: str) -> TaskSpec:
        if task not in self.specs:
            raise KeyError(f"task {task!r} has no head; registered: {sorted(self.specs)}. Call add_task first.")
        return self.specs[task]

    # --- batches -----------------------------------------------------------------------------------------
    def tokenize(self, task: str, examples: Sequence[Example]) -> dict[str, torch.Tensor]:
        """Turn examples of ``task`` into a model batch (tensors on the model's device, plus ``labels``)."""
        raise NotImplementedError

    def forward(self, batch: dict[str, torch.Tensor], task: str) -> torch.Tensor:  # noqa: D401
        raise NotImplementedError

    def collate(self, task: str, examples: Sequence[Example], train: bool = False) -> dict[str, torch.Tensor]:
        """The batch of the training (``train``) or evaluation loop: :meth:`tokenize` unless a model adds to it
        (T5: the gold answer to decode; CLIP: CPU tensors built in a worker, augmented when ``train``)."""
        return self.tokenize(task, examples)

    def training_loss(self, logits: torch.Tensor, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """The training objective on a :meth:`collate` (``train=True``) batch: cross-entropy over the C logits."""
        return torch.nn.functional.cross_entropy(logits, batch["labels"])

    # --- parameter sets ----------------------------------------------------------------------------------
    def backbone_names(self) -> list[str]:
        """All non-head parameter names (what a dense task vector covers)."""
        return [n for n, _ in self.named_parameters() if not n.startswith(self.HEAD_PREFIX)]

    def graftable_names(self) -> list[str]:
        """P1 eligible set: parameters inside transformer blocks."""
        raise NotImplementedError

    def full_names(self) -> list[str]:
        """P2's "all" scope: every backbone parameter a full fine-tune trains (the official FT trains every parameter
        that requires a gradient); by default :meth:`backbone_names`."""
        return self.backbone_names()

    def maskable_names(self) -> list[str]:
        """P2 maskable set: Linear/conv weights and biases and LayerNorms of the backbone."""
        raise NotImplementedError

    def bias_names(self, names: Iterable[str]) -> list[str]:
        """BitFit subset of ``names``: every bias (LayerNorm biases included)."""
        return [n for n in names if n.endswith("bias")]

    def head_names(self, task: str | None = None) -> list[str]:
        pref = self.HEAD_PREFIX + (f"{task}." if task else "")
        return [n for n, _ in self.named_parameters() if n.startswith(pref)]

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    def param_dict(self, names: Iterable[str] | None = None) -> dict[str, torch.Tensor]:
        """Detached views of parameters by name (all parameters when ``names`` is None)."""
        params = dict(self.named_parameters())
        if names is None:
            return {n: p.detach() for n, p in params.items()}
        return {n: params[n].detach() for n in names}

    def freeze_except(self, names: Iterable[str]) -> None:
        """requires_grad=True exactly for ``names``."""
        keep = set(names)
        unknown = keep - {n for n, _ in self.named_parameters()}
        if unknown:
            raise KeyError(f"unknown parameter names: {sorted(unknown)[:5]}")
        for n, p in self.named_parameters():
            p.requires_grad_(n in keep)


def layer_index(name: str) -> int | None:
    """Transformer block index of a parameter name (``encoder.layer.3.…``, ``transformer.h.3.…``, ``block.3.…``)."""
    parts = name.split(".")
    for i, part in enumerate(parts[:-1]):
        if part in ("layer", "h", "block", "resblocks") and parts[i + 1].isdigit():
            return int(parts[i + 1])
    return None


def module_type(name: str) -> str:
    """Coarse sub-module type of a parameter name, for the per-type breakdowns (P1 Fig. 10, P2 Fig. 4)."""
    n = name.lower()
    if "layernorm" in n or "layer_norm" in n or ".ln_" in n or n.endswith(("ln_1.weight", "ln_1.bias")):
        return "LayerNorm"
    for key, label in (
        ("query", "Q"), (".q.", "Q"), ("q_proj", "Q"),
        ("key", "K"), (".k.", "K"), ("k_proj", "K"),
        ("value", "V"), (".v.", "V"), ("v_proj", "V"),
        ("in_proj", "QKV"), ("c_attn", "QKV"),
        ("attention.output", "O"), (".o.", "O"), ("out_proj", "O"), ("attn.c_proj", "O"),
        ("intermediate", "FFN-in"), ("wi", "FFN-in"), ("c_fc", "FFN-in"), ("mlp.c_fc", "FFN-in"),
        ("output.dense", "FFN-out"), ("wo", "FFN-out"), ("mlp.c_proj", "FFN-out"),
        ("conv1", "patch-embed"),
    ):
        if key in n:
            return label
    return "other"
