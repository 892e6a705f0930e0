"""Cost of one fine-tuning iteration per method (P2 Table 3 / Table 4): forward-backward time, optimizer-step
time, total iteration time and peak memory, measured with the same training components as :func:`repro.core.finetune.train`.

Timing uses ``time.perf_counter`` after warm-up iterations (:func:`repro.device.sync` on a GPU).  Peak memory
(:class:`repro.device.PeakMemory`) is ``torch.cuda.max_memory_allocated`` on a GPU; on the CPU it is the growth of the
peak resident set size above the resident size when the measured block starts (Linux's high-water mark,
reset at the start of the block), and :mod:`repro.p2.efficiency` runs each method in a fresh subprocess, so
methods do not see each other's allocations.  TaLoS's speed comes only from what the training loop really does:
tensors with no trainable entry get ``requires_grad=False`` (no weight-gradient work in backward) and no
optimizer state is kept for frozen entries.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Sequence

from repro.data import Example
from repro.core.evaluation import forward
from repro.core.finetune import MaskedOptimizer, trainable_entries
from repro.device import PeakMemory, autocast, sync
from repro.core.masks import Mask
from repro.models.base import Classifier
from repro.profiles import FinetuneRecipe


@dataclass
class IterationCost:
    """One method's iteration cost: means and population stds of the timed iterations, peak memory of the timed
    block, and the timed iterations themselves (``*_repeats``, seconds, for a bootstrap over repeats)."""

    method: str
    fwd_bwd_s: float
    fwd_bwd_std: float
    optim_step_s: float
    optim_step_std: float
    total_iter_s: float
    total_iter_std: float
    peak_memory_gib: float
    trainable: int
    optimizer_state: int
    fwd_bwd_repeats: list[float] = field(default_factory=list)
    optim_step_repeats: list[float] = field(default_factory=list)
    total_iter_repeats: list[float] = field(default_factory=list)

    def as_row(self) -> dict:
        return dict(self.__dict__)


def measure_iteration(model: Classifier, examples: Sequence[Example], task: str, method: str,
                      trainable: Sequence[str] | Mask, recipe: FinetuneRecipe, linearized: bool = False,
                      iterations: int = 10, warmup: int = 3) -> IterationCost:
    """Time ``iterations`` training iterations of one method on batches of ``recipe.batch_size``."""
    device = model.device
    entries = trainable_entries(model, trainable)
    params = dict(model.named_parameters())
    for n, p in params.items():
        p.requires_grad_(n in entries)
    opt = MaskedOptimizer({n: params[n] for n in entries}, entries, recipe)
    base = {n: params[n].detach().clone() for n in entries} if linearized else None
    batch = {k: v.to(device) for k, v in model.collate(task, list(examples)[: recipe.batch_size], train=True).items()}
    fb, st, tot = [], [], []
    model.train()
    with PeakMemory(device) as memory:
        for i in range(warmup + iterations):
            sync(device)
            t0 = time.perf_counter()
            with autocast(model, "train"):  # the training loop's precision and loss
                logits = forward(model, batch, task, linear_base=base)
                loss = model.training_loss(logits, batch)
            opt.zero_grad()
            loss.backward()
            sync(device)
            t1 = time.perf_counter()
            opt.clip_(recipe.grad_clip)
            opt.step(recipe.lr)
            sync(device)
            t2 = time.perf_counter()
            if i >= warmup:
                fb.append(t1 - t0)
                st.append(t2 - t1)
                tot.append(t2 - t0)
    model.eval()
    for p in params.values():
        p.requires_grad_(False)
        p.grad = None
    sd = lambda xs: statistics.pstdev(xs) if len(xs) > 1 else 0.0  # noqa: E731
    return IterationCost(method, statistics.mean(fb), sd(fb), statistics.mean(st), sd(st), statistics.mean(tot),
                         sd(tot), memory.gib,
                         sum(params[n].numel() if e is None else e.numel() for n, e in entries.items()),
                         opt.state_numel(), fb, st, tot)


def ratios(rows: Sequence[dict], reference: str = "Non-linear FT",
           keys: Sequence[str] = ("fwd_bwd_s", "optim_step_s", "total_iter_s", "peak_memory_gib")) -> list[dict]:
    """Each method's cost divided by the reference method's (the comparison P2 Table 3 invites)."""
    ref = next((r for r in rows if r["method"] == reference), None)
    if ref is None:
        raise ValueError(f"reference method {reference!r} not among {[r['method'] for r in rows]}")
    return [{"method": r["method"], **{f"{k}_ratio": (r[k] / ref[k] if ref[k] else float("nan")) for k in keys}}
            for r in rows]
