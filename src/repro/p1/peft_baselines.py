"""Cached LoRA and bottleneck-adapter runs on a :class:`~repro.workbench.Workbench` (P1 Tables 6-7).

LoRA is folded into a task vector by :func:`repro.core.adapters.lora_finetune`, so a LoRA run is stored and evaluated
like every other fine-tuned model (``wb.overrides(tau)``).  Adapters change the architecture: their weights are
stored, and :func:`adapter_applied` re-inserts them around evaluation code.  Budgets are reported as the
fraction of the P1 eligible set (transformer-block parameters), the convention of the paper's "sparsity".
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import asdict
from typing import TYPE_CHECKING, Iterator

import torch

from repro.core.adapters import adapter_finetune, adapter_sites, bottleneck_adapters, lora_finetune, LORA_TARGETS
from repro.profiles import FinetuneRecipe
from repro.workbench import TENSORS, VECTOR
from repro.jobcall import recipe_of, register_driver

if TYPE_CHECKING:  # pragma: no cover
    from repro.workbench import Workbench

ADAPTER_KINDS = ("houlsby", "pfeiffer")


def _base_config(wb: "Workbench", task: str, recipe: FinetuneRecipe, seed: int, k: int | None = None) -> dict:
    return {"task": task, "k": int(k or wb.profile.k_shot), "seed": seed, "recipe": asdict(recipe), **wb.data_key(),
            **wb.precision_key()}


def lora_params(wb: "Workbench", rank: int, targets=LORA_TARGETS) -> int:
    """Trainable LoRA parameters: r·(in + out) per adapted weight."""
    total = 0
    for n in wb.names("graftable"):
        if n.endswith(".weight") and any(f".{t}." in n for t in targets) and wb.pre[n].ndim == 2:
            out_f, in_f = wb.pre[n].shape
            total += rank * (in_f + out_f)
    return total


def adapter_params(wb: "Workbench", kind: str, size: int) -> int:
    """Trainable parameters of the adapters of ``kind`` with bottleneck ``size``."""
    total = 0
    for site in adapter_sites(wb.model, kind):
        dim = wb.model.get_submodule(site).out_features
        total += dim * size + size + size * dim + dim
    return total


def budget_pct(wb: "Workbench", count: int) -> float:
    """``count`` as a percentage of the eligible set (P1's sparsity column)."""
    return 100.0 * count / sum(wb.pre[n].numel() for n in wb.names("graftable"))


def lora_run(wb: "Workbench", task: str, rank: int, recipe: FinetuneRecipe, alpha: float | None = None,
             seed: int | None = None, k: int | None = None) -> tuple[dict[str, torch.Tensor], dict]:
    """τ of LoRA (rank ``rank``, scale α/r with α = 2r unless given) on ``task``'s ``k``-shot data (None: the
    profile's k_shot; cached)."""
    seed = wb.seed if seed is None else seed
    alpha = float(2 * rank if alpha is None else alpha)
    recipe = wb.p1_recipe(task, recipe, k=k)  # steps = 0: the profile's P1 step budget
    data = wb.task(task, k=k, seed=seed)
    config = {"kind": "lora", "rank": rank, "alpha": alpha, "targets": list(LORA_TARGETS),
              **_base_config(wb, task, recipe, seed, k)}

    def compute() -> tuple[dict[str, torch.Tensor], dict]:
        tau, res = lora_finetune(wb.model, {task: data.train}, recipe, rank=rank, alpha=alpha,
                                 dev_data={task: data.dev}, seed=seed)
        return tau, {"train": {"best_step": res.best_step, "best_dev": res.best_dev,
                               "trainable_count": res.trainable_count, "seconds": res.seconds}}

    return wb.cached("taskvec", config, compute, VECTOR)


def adapter_run(wb: "Workbench", task: str, kind: str, size: int, recipe: FinetuneRecipe,
                seed: int | None = None, k: int | None = None) -> tuple[dict[str, torch.Tensor], dict]:
    """Trained adapter weights (``adapters.*`` names) of a Houlsby / Pfeiffer run on ``task``'s ``k``-shot data
    (None: the profile's k_shot; cached)."""
    if kind not in ADAPTER_KINDS:
        raise ValueError(f"unknown adapter kind {kind!r}; choose one of {ADAPTER_KINDS}")
    seed = wb.seed if seed is None else seed
    recipe = wb.p1_recipe(task, recipe, k=k)  # steps = 0: the profile's P1 step budget
    data = wb.task(task, k=k, seed=seed)
    config = {"kind": f"adapter-{kind}", "size": size, **_base_config(wb, task, recipe, seed, k)}

    def compute() -> tuple[dict[str, torch.Tensor], dict]:
        torch.manual_seed(seed)
        with bottleneck_adapters(wb.model, kind, size) as names:
            res = adapter_finetune(wb.model, {task: data.train}, recipe, names, dev_data={task: data.dev},
                                   seed=seed)
            weights = {n: p.detach().clone() for n, p in wb.model.named_parameters() if n in set(names)}
        for p in wb.model.parameters():
            p.requires_grad_(False)
        return weights, {"train": {"best_step": res.best_step, "best_dev": res.best_dev,
                                   "trainable_count": res.trainable_count, "seconds": res.seconds}}

    return wb.cached("adapter", config, compute, TENSORS)


@contextmanager
def adapter_applied(wb: "Workbench", kind: str, size: int, weights: dict[str, torch.Tensor]) -> Iterator[None]:
    """Inside the block the workbench model carries the given trained adapters (θ_pre elsewhere)."""
    with bottleneck_adapters(wb.model, kind, size) as names:
        missing = set(names) - set(weights)
        if missing:
            raise KeyError(f"adapter weights lack {sorted(missing)[:3]}…; trained with another kind/size?")
        with torch.no_grad():
            own = dict(wb.model.named_parameters())
            for n in names:
                own[n].copy_(weights[n])
                own[n].requires_grad_(False)
        yield


register_driver("repro.p1.peft_baselines.lora_run",
                lambda wb, k, value: lora_run(wb, k["task"], k["rank"], recipe_of(k["recipe"]), alpha=k["alpha"],
                                              seed=k["seed"], k=k["k"]))
register_driver("repro.p1.peft_baselines.adapter_run",
                lambda wb, k, value: adapter_run(wb, k["task"], k["kind"], k["size"], recipe_of(k["recipe"]),
                                                 seed=k["seed"], k=k["k"]))
