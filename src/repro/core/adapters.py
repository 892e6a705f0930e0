"""Parameter-efficient baselines: LoRA (via ``peft``; P1 Table 6-7, P2 L-LoRA) and bottleneck adapters
(Houlsby et al. 2019 after attention and FFN; Pfeiffer et al. 2021 after the FFN only; P1 Table 6-7).

Both are *temporary* additions to a :class:`~repro.models.base.Classifier`: LoRA is trained, folded into a dense
task vector τ over the original parameter names (ΔW = s·B·A), and removed again, so LoRA models flow through
the same task-vector code as every other method.  Adapters change the architecture; they live only inside the
:func:`bottleneck_adapters` context (train and evaluate inside it).

**L-LoRA** (Tang et al. 2024; P2's baseline) as the official TaLoS code builds it, per family (spec D9):

- *scope*: each LoRA branch x ↦ s·B·A·x is linearized in (A, B) around its initialisation (A_0, B_0 = 0); the rest
  of the network stays non-linear.  The first-order branch is s·(B − B_0)·A_0·x + s·B_0·(A − A_0)·x = s·B·A_0·x:
  B trains, A gets no gradient and stays at A_0.  So L-LoRA is exactly LoRA with A frozen at its initialisation
  (:func:`lora_finetune` with ``linearized=True`` trains the B factors only).  The official code also keeps A
  in AdamW, where weight decay shrinks it without any effect on the linearized branch; we leave A out of the
  optimizer, which gives the same model and lets the folded τ = s·B·A_0 be exactly the trained update.
- *scale and init* (:data:`LORA_STYLES`): vision ("official-vision") s = α, A = xavier_uniform / √r, B = 0;
  NLP (peft, "peft") s = α / r, A = kaiming_uniform(a = √5), B = 0.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, Mapping, Sequence

import torch
from torch import nn
from torch.nn.utils import parametrize

from repro.data import Example
from repro.core.finetune import TrainResult, train
from repro.models.base import Classifier
from repro.profiles import FinetuneRecipe

LORA_TARGETS = ("query", "value")  # BERT/RoBERTa names of Q and V (P2: "LoRA on Q and V")


@dataclass(frozen=True)
class LoraStyle:
    """How a LoRA update is scaled and initialised: ΔW = s·B·A with s = α (``scale="alpha"``) or α/r
    (``scale="alpha/r"``); A from ``init`` ("xavier": xavier_uniform / √r; "kaiming": kaiming_uniform(a=√5), as
    peft); B = 0 always (ΔW = 0 at the start)."""

    scale: str = "alpha/r"
    init: str = "kaiming"

    def __post_init__(self) -> None:
        if self.scale not in ("alpha", "alpha/r"):
            raise ValueError(f"unknown LoRA scale {self.scale!r}; choose 'alpha' or 'alpha/r'")
        if self.init not in ("xavier", "kaiming"):
            raise ValueError(f"unknown LoRA init {self.init!r}; choose 'xavier' or 'kaiming'")

    def factor(self, rank: int, alpha: float) -> float:
        return float(alpha) if self.scale == "alpha" else float(alpha) / rank

    def init_a(self, a: torch.Tensor, rank: int) -> None:
        """Initialise a LoRA A factor [r, d] in place."""
        with torch.no_grad():
            if self.init == "xavier":
                nn.init.xavier_uniform_(a)
                a.mul_(1.0 / rank ** 0.5)
            else:
                nn.init.kaiming_uniform_(a, a=5 ** 0.5)


#: the official L-LoRA conventions (spec D9): vision/lora.py (s = α, xavier / √r) and peft, used by the NLP code
#: and by plain LoRA (s = α / r, kaiming)
LORA_STYLES: dict[str, LoraStyle] = {"official-vision": LoraStyle("alpha", "xavier"),
                                     "peft": LoraStyle("alpha/r", "kaiming")}


def lora_style(name: str) -> LoraStyle:
    """The named :data:`LORA_STYLES` entry (fails naming the valid ones)."""
    if name not in LORA_STYLES:
        raise ValueError(f"unknown LoRA style {name!r}; choose one of {sorted(LORA_STYLES)}")
    return LORA_STYLES[name]


def _lora_modules(model: Classifier) -> dict[str, nn.Module]:
    return {n: m for n, m in model.named_modules() if hasattr(m, "get_delta_weight") and hasattr(m, "base_layer")}


def _remove_lora(model: Classifier) -> None:
    for name, mod in _lora_modules(model).items():
        parent_name, _, child = name.rpartition(".")
        setattr(model.get_submodule(parent_name), child, mod.base_layer)


class PackedQVLoRA(nn.Module):
    """LoRA on the Q and V blocks of a packed ``in_proj_weight`` [3d, d] (nn.MultiheadAttention, CLIP ViT), as a
    parametrization W ↦ W + s·[B_q A_q; 0; B_v A_v] (the official vision L-LoRA adapts Q and V only); s and the
    init of A follow ``style`` (default peft's: s = α/r)."""

    def __init__(self, dim: int, rank: int, alpha: float, style: LoraStyle | None = None) -> None:
        super().__init__()
        style = style or LORA_STYLES["peft"]
        self.scale = style.factor(rank, alpha)
        self.lora_A_q = nn.Parameter(torch.empty(rank, dim))
        self.lora_A_v = nn.Parameter(torch.empty(rank, dim))
        for a in (self.lora_A_q, self.lora_A_v):
            style.init_a(a, rank)  # A random, B zero (ΔW = 0 at the start)
        self.lora_B_q = nn.Parameter(torch.zeros(dim, rank))
        self.lora_B_v = nn.Parameter(torch.zeros(dim, rank))

    def delta(self) -> torch.Tensor:
        d = self.lora_A_q.shape[1]
        zero = torch.zeros(d, d, dtype=self.lora_A_q.dtype, device=self.lora_A_q.device)
        return self.scale * torch.cat([self.lora_B_q @ self.lora_A_q, zero, self.lora_B_v @ self.lora_A_v])

    def forward(self, weight: torch.Tensor) -> torch.Tensor:
        return weight + self.delta().to(weight.dtype)


def lora_targets(model: Classifier) -> tuple[str, ...]:
    """The Q / V module names LoRA adapts in ``model`` (``model.LORA_TARGETS``, default BERT/RoBERTa's)."""
    return tuple(getattr(model, "LORA_TARGETS", LORA_TARGETS))


def inject_lora(model: Classifier, rank: int, alpha: float, targets: Sequence[str] | None = None,
                style: LoraStyle | str = "peft",
                ) -> tuple[list[str], Callable[[], dict[str, torch.Tensor]], Callable[[], None]]:
    """Insert LoRA on Q and V; returns (its parameter names, fold() → τ over the original names, remove()).

    ``style`` (a :class:`LoraStyle` or a key of :data:`LORA_STYLES`) sets the scale s and the init of A."""
    style = lora_style(style) if isinstance(style, str) else style
    targets = lora_targets(model) if targets is None else tuple(targets)
    if targets == ("in_proj_weight",):  # packed attention (CLIP ViT): our own Q/V parametrization
        sites = {n: m for n, m in model.named_modules() if isinstance(m, nn.MultiheadAttention)
                 and n.startswith("backbone.visual.")}
        for m in sites.values():
            lora = PackedQVLoRA(m.embed_dim, rank, alpha, style).to(m.in_proj_weight.device)
            parametrize.register_parametrization(m, "in_proj_weight", lora)

        def fold() -> dict[str, torch.Tensor]:
            with torch.no_grad():
                return {f"{n}.in_proj_weight": m.parametrizations.in_proj_weight[0].delta().detach().clone()
                        for n, m in sites.items()}

        def remove() -> None:
            for m in sites.values():
                parametrize.remove_parametrizations(m, "in_proj_weight", leave_parametrized=False)
    else:
        from peft import LoraConfig, inject_adapter_in_model  # heavy (peft, ~10 s import): the PEFT LoRA path only

        # peft scales by lora_alpha / r: s = α asks for lora_alpha = α·r
        peft_alpha = alpha if style.scale == "alpha/r" else alpha * rank
        cfg = LoraConfig(r=rank, lora_alpha=peft_alpha, target_modules=list(targets), lora_dropout=0.0, bias="none")
        inject_adapter_in_model(cfg, getattr(model, "backbone"))
        if style.init != "kaiming":  # peft initialises A with kaiming_uniform(a=√5) and B with zeros
            for m in _lora_modules(model).values():
                style.init_a(m.lora_A["default"].weight, rank)

        def fold() -> dict[str, torch.Tensor]:
            with torch.no_grad():
                return {f"{n}.weight": m.get_delta_weight("default").detach().clone()
                        for n, m in _lora_modules(model).items()}

        def remove() -> None:
            _remove_lora(model)
    names = [n for n, _ in model.named_parameters() if ".lora_" in n]
    if not names:
        remove()
        raise ValueError(f"no LoRA parameters were injected for targets {targets}")
    return names, fold, remove


def lora_b_names(names: Sequence[str]) -> list[str]:
    """The B factors among LoRA parameter names (peft ``lora_B``, :class:`PackedQVLoRA` ``lora_B_q`` / ``_v``)."""
    return [n for n in names if ".lora_B" in n]


def lora_finetune(model: Classifier, train_data: Mapping[str, Sequence[Example]], recipe: FinetuneRecipe,
                  rank: int = 16, alpha: float = 32.0, targets: Sequence[str] | None = None,
                  dev_data: Mapping[str, Sequence[Example]] | None = None, linearized: bool = False,
                  seed: int = 0, progress: bool = True, style: LoraStyle | str = "peft",
                  ) -> tuple[dict[str, torch.Tensor], TrainResult]:
    """Train LoRA (Hu et al. 2021) on ``targets``; return τ = s·B·A per adapted weight, and the train log.

    ``linearized=True`` is L-LoRA (Tang et al. 2024) as the official code builds it: each LoRA branch linearized
    around (A_0, B_0 = 0), which is s·B·A_0·x, so only the B factors train and A stays at A_0 (module docstring);
    the network is not linearized, and τ = s·B·A_0 is exactly the trained update.  ``style`` sets s and the init.
    The model is left exactly as it was (adapters removed).
    """
    torch.manual_seed(seed)
    names, fold, remove = inject_lora(model, rank, alpha, targets, style=style)
    try:
        trainable = lora_b_names(names) if linearized else names
        res = train(model, train_data, recipe, trainable, dev_data=dev_data, seed=seed, progress=progress)
        tau = fold()
    finally:
        remove()
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
