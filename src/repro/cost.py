"""Cost of one fine-tuning iteration per method (P2 Table 3 / Table 4): forward-backward time, optimizer-step
time, total iteration time and peak memory, measured with the same training components as :func:`repro.finetune.train`.

Timing uses ``time.perf_counter`` after warm-up iterations (with ``torch.cuda.synchronize`` on a GPU).  Peak
memory is ``torch.cuda.max_memory_allocated`` on a GPU; on the CPU each method runs in a fresh subprocess and
the peak resident set size above the process's size right after loading the model is reported, so methods
do not see each other's allocations.  TaLoS's speed comes only from what the training loop really does:
tensors with no trainable entry get ``requires_grad=False`` (no weight-gradient work in backward) and no
optimizer state is kept for frozen entries.
"""

from __future__ import annotations

import resource
import statistics
import time
from dataclasses import dataclass
from typing import Callable, Sequence

import torch

from repro.data import Example
from repro.evaluation import forward
from repro.finetune import MaskedOptimizer, _resolve_trainable
from repro.masks import Mask
from repro.models.base import Classifier
from repro.profiles import FinetuneRecipe


@dataclass
class IterationCost:
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

    def as_row(self) -> dict:
        return dict(self.__dict__)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # Linux: KiB


def measure_iteration(model: Classifier, examples: Sequence[Example], task: str, method: str,
                      trainable: Sequence[str] | Mask, recipe: FinetuneRecipe, linearized: bool = False,
                      iterations: int = 10, warmup: int = 3) -> IterationCost:
    """Time ``iterations`` training iterations of one method on batches of ``recipe.batch_size``."""
    device = model.device
    entries = _resolve_trainable(model, trainable)
    params = dict(model.named_parameters())
    for n, p in params.items():
        p.requires_grad_(n in entries)
    opt = MaskedOptimizer({n: params[n] for n in entries}, entries, recipe)
    base = {n: params[n].detach().clone() for n in entries} if linearized else None
    batch = model.tokenize(task, list(examples)[: recipe.batch_size])
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    start_rss = _rss_gib()
    fb, st, tot = [], [], []
    model.train()
    for i in range(warmup + iterations):
        _sync(device)
        t0 = time.perf_counter()
        logits = forward(model, batch, task, linear_base=base)
        loss = torch.nn.functional.cross_entropy(logits, batch["labels"])
        opt.zero_grad()
        loss.backward()
        _sync(device)
        t1 = time.perf_counter()
        opt.clip_(recipe.grad_clip)
        opt.step(recipe.lr)
        _sync(device)
        t2 = time.perf_counter()
        if i >= warmup:
            fb.append(t1 - t0)
            st.append(t2 - t1)
            tot.append(t2 - t0)
    model.eval()
    for p in params.values():
        p.requires_grad_(False)
        p.grad = None
    peak = (torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda"
            else max(_rss_gib() - start_rss, 0.0))
    sd = lambda xs: statistics.pstdev(xs) if len(xs) > 1 else 0.0  # noqa: E731
    return IterationCost(method, statistics.mean(fb), sd(fb), statistics.mean(st), sd(st), statistics.mean(tot),
                         sd(tot), peak, sum(params[n].numel() if e is None else e.numel() for n, e in entries.items()),
                         opt.state_numel())


def measure_in_subprocess(build: Callable[[], tuple], method: str, **kw) -> IterationCost:
    """Run :func:`measure_iteration` in a fresh process (CPU peak-memory isolation).

    ``build`` is a picklable zero-argument callable returning ``(model, examples, task, trainable, recipe)``.
    """
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    with ctx.Pool(1) as pool:
        return pool.apply(_child, (build, method, kw))


def _child(build: Callable[[], tuple], method: str, kw: dict) -> IterationCost:
    torch.set_num_threads(max(torch.get_num_threads(), 1))
    model, examples, task, trainable, recipe = build()
    base = _rss_gib()
    cost = measure_iteration(model, examples, task, method, trainable, recipe, **kw)
    cost.peak_memory_gib = max(_rss_gib() - base, 0.0) if model.device.type != "cuda" else cost.peak_memory_gib
    return cost


def ratios(rows: Sequence[dict], reference: str = "Non-linear FT",
           keys: Sequence[str] = ("fwd_bwd_s", "optim_step_s", "total_iter_s", "peak_memory_gib")) -> list[dict]:
    """Each method's cost divided by the reference method's (the comparison P2 Table 3 invites)."""
    ref = next((r for r in rows if r["method"] == reference), None)
    if ref is None:
        raise ValueError(f"reference method {reference!r} not among {[r['method'] for r in rows]}")
    return [{"method": r["method"], **{f"{k}_ratio": (r[k] / ref[k] if ref[k] else float("nan")) for k in keys}}
            for r in rows]
