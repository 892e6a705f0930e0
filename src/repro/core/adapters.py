"""Parameter-efficient baselines: LoRA (via ``peft``; P1 Table 6-7, P2 L-LoRA) and bottleneck adapters
(Houlsby et al. 2019 after attention and FFN; Pfeiffer et al. 2021 after the FFN only; P1 Table 6-7).

Both are *temporary* additions to a :class:`~repro.models.base.Classifier`: LoRA is trained, folded into a dense
task vector τ over the original parameter names (ΔW = (α/r)·B·A), and removed again, so LoRA models flow through
the same task-vector code as every other method.  Adapters change the architecture; they live only inside the
:func:`bottleneck_adapters` context (train and evaluate inside it).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Mapping, Sequence

import torch
from torch import nn

from repro.data import Example
from repro.core.finetune import TrainResult, train
from repro.models.base import Classifier
from repro.profiles import FinetuneRecipe

LORA_TARGETS = ("query", "value")  # BERT/RoBERTa names of Q and V (P2: "LoRA on Q and V")


def _lora_modules(model: Classifier) -> dict[str, nn.Module]:
    return {n: m for n, m in model.named_modules() if hasattr(m, "get_delta_weight") and hasattr(m, "base_layer")}


def _remove_lora(model: Classifier) -> None:
    for name, mod in _lora_modules(model).items():
        parent_name, _, child = name.rpartition(".")
        setattr(model.get_submodule(parent_name), child, mod.base_layer)


def lora_finetune(model: Classifier, train_data: Mapping[str, Sequence[Example]], recipe: FinetuneRecipe,
                  rank: int = 16, alpha: float = 32.0, targets: Sequence[str] = LORA_TARGETS,
                  dev_data: Mapping[str, Sequence[Example]] | None = None, linearized: bool = False,
                  seed: int = 0, progress: bool = True) -> tuple[dict[str, torch.Tensor], TrainResult]:
    """Train LoRA (Hu et al. 2021) on ``targets``; return τ = (α/r)·B·A per adapted weight, and the train log.

    ``linearized=True`` trains the LoRA parameters of the linearized model (L-LoRA, Tang et al. 2024).
    The model is left exactly as it was (adapters removed).
    """
    from peft import LoraConfig, inject_adapter_in_model

    torch.manual_seed(seed)
    backbone = getattr(model, "backbone")
    cfg = LoraConfig(r=rank, lora_alpha=alpha, target_modules=list(targets), lora_dropout=0.0, bias="none")
    inject_adapter_in_model(cfg, backbone)
    try:
        names = [n for n, _ in model.named_parameters() if ".lora_" in n]
        if not names:
            raise ValueError(f"no LoRA parameters were injected for targets {targets}")
        res = train(model, train_data, recipe, names, dev_data=dev_data, seed=seed, linearized=linearized,
                    progress=progress)
        tau = {}
        for name, mod in _lora_modules(model).items():
            with torch.no_grad():
                tau[f"{name}.weight"] = mod.get_delta_weight("default").detach().clone()
    finally:
        _remove_lora(model)
        for p in model.parameters():
            p.requires_grad_(False)
    return tau, res


class BottleneckAdapter(nn.Module):
    """h + W_up·act(W_down·h), W_up initialized to zero so the adapter starts as the identity."""

    def __init__(self, dim: int, size: int) -> None:
        super().__init__()
        self.down = nn.Linear(dim, size)
        self.up = nn.Linear(size, dim)
        nn.init.normal_(self.down.weight, std=1e-2)
        nn.init.zeros_(self.up.weight)
        nn.init.zeros_(self.up.bias)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return h + self.up(torch.nn.functional.gelu(self.down(h)))


def adapter_sites(model: Classifier, kind: str) -> list[str]:
    """Module names whose output gets an adapter: Houlsby = attention output and FFN output projections,
    Pfeiffer = FFN output projection only (before the residual + LayerNorm)."""
    if kind not in ("houlsby", "pfeiffer"):
        raise ValueError(f"unknown adapter kind {kind!r}; choose houlsby or pfeiffer")
    names = [n for n, _ in model.named_modules()]
    ffn = [n for n in names if n.endswith("output.dense") and ".attention." not in n]
    attn = [n for n in names if n.endswith("attention.output.dense")]
    return sorted(attn + ffn) if kind == "houlsby" else ffn


@contextmanager
def bottleneck_adapters(model: Classifier, kind: str, size: int) -> Iterator[list[str]]:
    """Insert adapters (trainable, everything else frozen); yields their parameter names; removes them on exit."""
    sites = adapter_sites(model, kind)
    if not sites:
        raise ValueError("this model has no BERT-style output.dense modules to attach adapters to")
    holder = nn.ModuleDict()
    hooks = []
    for i, site in enumerate(sites):
        mod = model.get_submodule(site)
        ad = BottleneckAdapter(mod.out_features, size).to(next(mod.parameters()).device)
        holder[str(i)] = ad
        hooks.append(mod.register_forward_hook(lambda _m, _inp, out, ad=ad: ad(out)))
    model.add_module("adapters", holder)
    try:
        yield [n for n, _ in model.named_parameters() if n.startswith("adapters.")]
    finally:
        for h in hooks:
            h.remove()
        del model.adapters


def adapter_finetune(model: Classifier, train_data: Mapping[str, Sequence[Example]], recipe: FinetuneRecipe,
                     names: Sequence[str], dev_data: Mapping[str, Sequence[Example]] | None = None,
                     seed: int = 0, progress: bool = True) -> TrainResult:
    """Train only the adapter parameters ``names`` (call inside :func:`bottleneck_adapters`)."""
    return train(model, train_data, recipe, list(names), dev_data=dev_data, seed=seed, progress=progress)
