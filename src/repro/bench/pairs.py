"""Each measured pair: our implementation beside our own faithful re-implementation of what the official code
does (spec: official-code-facts.md), on the same model and the same batch, in this process.

==========================  ===========================================  ==========================================
row                         ours                                         baseline (the official approach)
==========================  ===========================================  ==========================================
graft step                  soft-graft fwd + bwd + S update through      one plain FT forward + backward
                            ``functional_call`` overrides (one copy)     (memory: also Grafting.py's 3 copies)
Fisher round                ``vmap(grad(...))`` per-example gradients    batch forward, one ``backward`` per example
                                                                         (``retain_graph``), TaLoS.score
TaLoS iteration             sparse entries, state for trainable only     dense non-linear FT iteration
linearized iteration        ``jvp`` around θ0                            dense non-linear FT iteration
α grid (linearized)         one jvp, then f0 + α·Jτ for every α          G linearized evaluations
α grid (non-linear)         G evaluations with parameter overrides       G × load θ0 + ατ into the model
storage                     sparse safetensors (indices + values)        dense checkpoint of the whole model
==========================  ===========================================  ==========================================
"""

from __future__ import annotations

import contextlib
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence
import time

import torch

from repro.core.evaluation import forward, predict
from repro.core.fisher import TARGETS, diagonal_fisher, sample_labels, talos_calibrate, talos_select
from repro.core.grafting import base_entries, graft_update, init_scores, movement_mask
from repro.core.masks import Mask
from repro.core.taskvec import TaskVector
from repro.data import chunks
from repro.models.base import Classifier
from repro.p2.cost import measure_iteration
from repro.profiles import FinetuneRecipe
from repro.bench.measure import GIB, model_bytes, paired, peak_growth, release_memory, tensor_bytes
from repro.bench.rows import make_row, format_row
from repro.artifacts import save_tensors

#: P2 Table 3 ViT-B/32 ratios to non-linear FT (book/reference/talos_table3.csv): the issue's targets
PAPER_TALOS_TIME, PAPER_TALOS_MEMORY = 0.1644 / 0.3722, 4.7 / 6.5
PAPER_LINEAR_TIME, PAPER_LINEAR_MEMORY = 0.6961 / 0.3722, 10.2 / 6.5


@dataclass
class Setup:
    """The model and data every pair of one model is measured on."""

    model: Classifier
    task: str
    examples: list  # at least max(batch_size, n_calibration, n_eval) examples
    device: str
    label: str  # model name written into the rows
    batch_size: int = 16
    n_calibration: int = 32
    n_eval: int = 32
    grid_points: int = 21
    repeats: int = 3
    iterations: int = 5
    warmup: int = 2
    talos_rounds: int = 1  # 1 = one round at the final density from the measured Fisher round (quick)
    cache: dict = field(default_factory=dict)

    def row(self, name: str, ours: Any, baseline: Any, unit: str, **kw: Any) -> dict:
        return make_row(name, ours, baseline, unit, device=self.device, model=self.label, **kw)

    @property
    def batch(self) -> list:
        return self.examples[: self.batch_size]


@contextlib.contextmanager
def trainable(model: Classifier, names: Sequence[str]) -> Iterator[None]:
    """requires_grad on ``names`` inside the block; everything frozen and gradients dropped afterwards."""
    keep = set(names)
    for n, p in model.named_parameters():
        p.requires_grad_(n in keep)
    try:
        yield
    finally:
        for p in model.parameters():
            p.requires_grad_(False)
            p.grad = None


@contextlib.contextmanager
def restored(model: Classifier) -> Iterator[None]:
    """Put the model's parameters back as they were (timed training iterations update them)."""
    saved = {n: p.detach().clone() for n, p in model.named_parameters()}
    try:
        yield
    finally:
        with torch.no_grad():
            for n, p in model.named_parameters():
                p.copy_(saved[n])


def synthetic_vector(model: Classifier, names: Sequence[str], scale: float = 1e-3, seed: int = 0) -> dict:
    """A dense stand-in for θ_ft − θ_pre on ``names`` (cost does not depend on the values)."""
    gen = torch.Generator().manual_seed(seed)
    params = dict(model.named_parameters())
    return {n: (torch.randn(params[n].shape, generator=gen) * scale).to(params[n].device) for n in names}


# --- P1 grafting --------------------------------------------------------------------------------------------
def graft_pair(s: Setup) -> tuple[Callable, Callable, dict]:
    """(one graft step, one plain FT forward + backward, sizes) on the setup's batch, model in eval mode."""
    model, names, ex = s.model, s.model.graftable_names(), s.batch
    delta = synthetic_vector(model, names)
    base = movement_mask(delta, 1e-4)
    base = Mask({n: t.to(s.device) for n, t in base.tensors.items()}, base.shapes)
    S = init_scores(delta, seed=0)
    idx = base_entries(base, S)  # once per learn_graft call, as there
    model.eval()  # the official grafting step runs the model in eval mode; FT is timed in eval mode too

    def ours():
        return graft_update(model, s.task, ex, delta, S, base, lr=1e7, batch_size=len(ex), idx=idx)  # learn_graft's

    def plain_ft():
        with trainable(model, names):
            batch = model.tokenize(s.task, ex)
            loss = torch.nn.functional.cross_entropy(model(batch, s.task), batch["labels"])
            loss.backward()

    sizes = {"delta": tensor_bytes(delta.values()), "S": tensor_bytes(S.values()),
             "base": tensor_bytes(base.tensors.values()), "eligible": sum(d.numel() for d in delta.values())}
    return ours, plain_ft, sizes


def graft_rows(s: Setup) -> list[dict]:
    """One graft step (P1 Eq. 2-4) vs one plain FT forward + backward on the same batch, time and peak memory."""
    ours, plain_ft, sz = graft_pair(s)
    a, b = paired(ours, plain_ft, s.device, s.repeats, s.warmup)
    theta = model_bytes(s.model)
    held = sz["delta"] + sz["S"] + sz["base"]
    ours_total = theta + held + a.peak_bytes
    budget = theta + sz["delta"] + sz["S"] + b.peak_bytes
    official = 3 * theta + held + b.peak_bytes
    return [
        s.row("graft step time", a.seconds, b.seconds, "s", target=1.3,
              official="one step = grafted θ written into a working model copy, fwd + bwd, manual S update",
              note=f"batch {len(s.batch)}, eval mode, {sz['eligible']:,} eligible parameters"),
        s.row("graft step peak memory", ours_total / GIB, budget / GIB, "GiB", target=1.0,
              note=f"ours = θ_pre {theta / GIB:.3f} + Δ, S, γ_base {held / GIB:.3f} + step peak "
                   f"{a.peak_bytes / GIB:.3f} GiB; budget = θ_pre + Δ + S + FT fwd/bwd peak "
                   f"{b.peak_bytes / GIB:.3f} GiB (activations and weight gradients)"),
        s.row("graft peak memory vs official 3 copies", ours_total / GIB, official / GIB, "GiB",
              official="Grafting.py: model, finetuned_model, pretrained_model + grad_directions Δ + S",
              note="official figure = 3 θ + Δ + S + γ_base + the same FT fwd/bwd peak"),
    ]


# --- P2 TaLoS / FISH calibration --------------------------------------------------------------------------
def official_fisher_round(model: Classifier, examples: Sequence, task: str, names: Sequence[str],
                          batch_size: int = 16, seed: int = 0, target: str = "logprob") -> dict[str, torch.Tensor]:
    """The official TaLoS.score round (spec D3): per batch one forward, ŷ sampled, then one backward per example
    with ``retain_graph`` and score += grad²; summed over examples.  Same label draws as diagonal_fisher."""
    target_fn = TARGETS[target]
    params = dict(model.named_parameters())
    scores = {n: torch.zeros_like(params[n], dtype=torch.float32) for n in names}
    gen = torch.Generator().manual_seed(int(seed))
    was = model.training
    model.eval()
    with trainable(model, names):
        leaves = [params[n] for n in names]
        for chunk in chunks(list(examples), batch_size):
            batch = model.tokenize(task, chunk)
            batch["labels"] = sample_labels(model, batch, task, gen)
            logits = forward(model, batch, task)
            for i in range(len(chunk)):
                value = target_fn(logits[i], batch["labels"][i])
                grads = torch.autograd.grad(value, leaves, retain_graph=i < len(chunk) - 1, allow_unused=True)
                for n, g in zip(names, grads):
                    if g is not None:
                        scores[n] += g.float().pow(2)
    model.train(was)
    return scores


def fisher_rows(s: Setup) -> list[dict]:
    """One calibration round over ``n_calibration`` examples: vmap per-example gradients vs the official loop."""
    model, names = s.model, s.model.maskable_names()
    calib = s.examples[: s.n_calibration]
    bs = 16  # talos_calibrate's default batch (and TaLoS NLP's 32 examples in two batches)
    ours = lambda: diagonal_fisher(model, calib, s.task, names, batch_size=bs, seed=0, method="vmap",  # noqa: E731
                                   progress=False)
    loop = lambda: official_fisher_round(model, calib, s.task, names, batch_size=bs, seed=0)  # noqa: E731
    ours()  # warm-up (the loop baseline is timed once, cold: its per-example calls dominate)
    a, b = paired(ours, loop, s.device, repeats=max(1, s.repeats - 1), warmup=0, repeats_b=1)
    t_ours, t_loop, grow_ours, grow_loop = a.seconds, b.seconds, a.peak_bytes, b.peak_bytes
    fast, slow = a.output, b.output
    diff = max(float((fast[n] - slow[n]).abs().max()) for n in names)
    scale = max(float(slow[n].abs().max()) for n in names)
    rel = diff / scale if scale else diff
    s.cache["fisher"] = fast
    return [
        s.row("Fisher round time", t_ours, t_loop, "s", target=5.0, op=">=", speedup=True,
              official="TaLoS.score: batch forward, one backward per example (retain_graph)",
              note=f"{len(calib)} examples, batches of {bs}, {sum(f.numel() for f in fast.values()):,} maskable "
                   "entries; ratio = how many times faster ours is"),
        s.row("Fisher scores max relative difference", rel, None, "rel", target=1e-5, ratio=rel,
              ratio_def="max|ours − official| / max|official|",
              note=f"max abs difference {diff:.2e}, max score {scale:.2e}"),
        s.row("Fisher round peak memory", (model_bytes(model) + grow_ours) / GIB,
              (model_bytes(model) + grow_loop) / GIB, "GiB",
              note="θ + peak growth; vmap holds batch × |maskable| gradients (chunked by 16)"),
    ]


def talos_mask(s: Setup) -> Mask:
    """The TaLoS mask at 90 % sparsity: one round at the final density from the measured Fisher round (quick), or
    the full ``talos_rounds``-round calibration (P2 Alg. 1)."""
    names = s.model.maskable_names()
    if s.talos_rounds > 1:
        return talos_calibrate(s.model, s.examples[: s.n_calibration], s.task, names, sparsity=0.9,
                               rounds=s.talos_rounds, method="auto", progress=False)[0]
    scores = s.cache.get("fisher") or diagonal_fisher(s.model, s.examples[: s.n_calibration], s.task, names,
                                                      method="auto", progress=False)
    return talos_select(scores, Mask.full(Mask.shapes_of(scores)), 0.1)[0]


def training_rows(s: Setup) -> list[dict]:
    """TaLoS sparse and linearized FT iterations vs the dense non-linear FT iteration (P2 Table 3 ratios)."""
    model, names = s.model, s.model.maskable_names()
    mask = s.cache.setdefault("talos_mask", talos_mask(s))
    recipe = FinetuneRecipe(optimizer="adamw", lr=1e-5, batch_size=s.batch_size, steps=1, weight_decay=0.1)
    theta = model_bytes(model)

    def run(method: str, which, linearized: bool = False):
        with restored(model):
            grow, cost = peak_growth(lambda: measure_iteration(model, s.examples, s.task, method, which, recipe,
                                                               linearized=linearized, iterations=s.iterations,
                                                               warmup=s.warmup), s.device)
        return cost, (theta + grow) / GIB

    dense, m_dense = run("Non-linear FT", names)
    sparse, m_sparse = run("TaLoS", mask)
    lin, m_lin = run("Linearized FT", names, linearized=True)
    total = sum(model.get_parameter(n).numel() for n in names)
    frozen = sum(1 for t in mask.tensors.values() if not bool(t.any()))
    it = f"batch {s.batch_size}, {s.iterations} iterations after {s.warmup} warm-up, AdamW"
    return [
        s.row("TaLoS iteration time (90% sparse)", sparse.total_iter_s, dense.total_iter_s, "s", target=0.44,
              paper=PAPER_TALOS_TIME, official="AdaptW: dense gradients and Adam moments, lr × 0/1 mask",
              note=f"{it}; density {mask.density():.3f}, {frozen}/{len(mask.shapes)} tensors fully frozen; "
                   f"fwd-bwd {sparse.fwd_bwd_s:.4f} vs {dense.fwd_bwd_s:.4f} s, step {sparse.optim_step_s:.4f} vs "
                   f"{dense.optim_step_s:.4f} s"),
        s.row("TaLoS iteration peak memory", m_sparse, m_dense, "GiB", target=0.72, paper=PAPER_TALOS_MEMORY,
              note="θ + peak growth during the iterations (activations, gradients, optimizer state)"),
        s.row("TaLoS optimizer state entries", sparse.optimizer_state, 2 * total, "entries",
              passed=sparse.optimizer_state == 2 * sparse.trainable,
              official="AdaptW keeps dense Adam moments (2 × every maskable entry)",
              note=f"pass = exactly 2 × {sparse.trainable:,} trainable entries (Adam m and v)"),
        s.row("linearized FT iteration time", lin.total_iter_s, dense.total_iter_s, "s", paper=PAPER_LINEAR_TIME,
              official="functorch jvp around θ0 (tangent_task_arithmetic)", note=it),
        s.row("linearized FT iteration peak memory", m_lin, m_dense, "GiB", paper=PAPER_LINEAR_MEMORY,
              note="θ + peak growth"),
    ]


# --- task arithmetic α grid ---------------------------------------------------------------------------------
def alpha_grid_rows(s: Setup) -> list[dict]:
    """θ0 + ατ on a grid of G α: linear in α for a linearized model (one jvp), G evaluations otherwise."""
    model, names = s.model, s.model.maskable_names()
    ex = s.examples[: s.n_eval]
    pre = {n: p.detach() for n, p in model.named_parameters() if n in set(names)}
    tau = TaskVector(synthetic_vector(model, names, scale=1e-2))
    grid = [i / (s.grid_points - 1) for i in range(s.grid_points)]
    out: dict[str, Any] = {}

    def ours_linear():
        zero = predict(model, ex, s.task).logits
        tangent = predict(model, ex, s.task, tau.apply(pre, 1.0), linear_base=pre).logits - zero
        out["fast"] = [zero + a * tangent for a in grid]

    def official_linear():
        out["slow"] = [predict(model, ex, s.task, tau.apply(pre, a), linear_base=pre).logits for a in grid]

    def ours_nonlinear():
        return [predict(model, ex, s.task, tau.apply(pre, a)).logits for a in grid]

    def official_nonlinear():
        params = dict(model.named_parameters())
        res = []
        with torch.no_grad():
            for a in grid:  # task_vectors apply_to: a fresh state dict θ0 + ατ loaded into the model
                state = {k: v.clone() for k, v in model.state_dict().items()}
                state.update(tau.apply(pre, a))
                model.load_state_dict(state)
                res.append(predict(model, ex, s.task).logits)
            for n in names:
                params[n].copy_(pre_copy[n])
        return res

    pre_copy = {n: t.clone() for n, t in pre.items()}
    lin, lin_base = paired(ours_linear, official_linear, s.device, repeats=1, warmup=0)
    lin_diff = max(float((a - b).abs().max()) for a, b in zip(out["fast"], out["slow"]))
    non, non_base = paired(ours_nonlinear, official_nonlinear, s.device, repeats=1, warmup=0)
    t_lin, t_lin_base, t_non, t_non_base = lin.seconds, lin_base.seconds, non.seconds, non_base.seconds
    g = f"G = {len(grid)} α in [0, 1], {len(ex)} examples"
    return [
        s.row("α grid, linearized model", t_lin, t_lin_base, "s", official="one linearized evaluation per α",
              note=f"{g}; ours = f(θ0) + α·Jτ from one jvp; max |logit difference| {lin_diff:.2e}"),
        s.row("α grid, non-linear model", t_non, t_non_base, "s",
              official="apply_to: build θ0 + ατ state dict, load it, evaluate",
              note=f"{g}; no shortcut (not linear in α): ours = parameter overrides, no state-dict copies"),
    ]


# --- storage ------------------------------------------------------------------------------------------------
def _stored_bytes(stem: Path) -> int:
    return sum(p.stat().st_size for p in (stem.with_suffix(".safetensors"), stem.with_suffix(".json")))


def storage_rows(s: Setup) -> list[dict]:
    """Bytes on disk of a 0.01 % graft and a 90 %-sparse TaLoS task vector vs a dense whole-model checkpoint."""
    model = s.model
    delta = synthetic_vector(model, model.graftable_names())
    region = movement_mask(delta, 1e-4)
    graft = TaskVector({n: d * region.tensors[n].to(d.device, d.dtype) for n, d in delta.items()})
    mask = s.cache.get("talos_mask") or talos_mask(s)
    tau = synthetic_vector(model, model.maskable_names())
    talos = TaskVector({n: tau[n] * mask.tensors[n].to(tau[n].device, tau[n].dtype) for n in mask.shapes})
    with tempfile.TemporaryDirectory(prefix="repro-bench-") as tmp:
        root = Path(tmp)
        save_tensors(root / "dense", dict(model.state_dict()), {"kind": "checkpoint"})
        graft.save(root / "graft")
        talos.save(root / "talos")
        dense, g_bytes, t_bytes = (_stored_bytes(root / k) for k in ("dense", "graft", "talos"))
    return [
        s.row("stored 0.01% graft vs dense checkpoint", g_bytes, dense, "bytes", target=1e-3,
              official="a whole pickled model per checkpoint (torch.save)",
              note=f"{graft.count_nonzero():,} entries as int64 index + float32 value; dense = safetensors of "
                   "the whole state dict"),
        s.row("stored 90%-sparse TaLoS vector vs dense checkpoint", t_bytes, dense, "bytes", target=0.2,
              official="τ = dense state-dict difference (mostly zeros)",
              note=f"{talos.count_nonzero():,} nonzero entries"),
    ]


PAIRS: dict[str, Callable[[Setup], list[dict]]] = {
    "graft": graft_rows,
    "fisher": fisher_rows,
    "training": training_rows,
    "alpha": alpha_grid_rows,
    "storage": storage_rows,
}


def run_pairs(s: Setup, only: Sequence[str] | None = None, log: Callable[[str], None] = print) -> list[dict]:
    """Every pair (or ``only`` these) on one setup; each row gets ``seconds``, the wall time of its pair."""

    rows = []
    for key, fn in PAIRS.items():
        if only and key not in only:
            continue
        release_memory()
        t0 = time.perf_counter()
        try:
            got = fn(s)
        except Exception as err:  # noqa: BLE001 - one failing pair (e.g. a model vmap cannot map) is reported
            got = [s.row(f"{key} pair", None, None, "-", note=f"failed: {type(err).__name__}: {str(err)[:300]}")]
        spent = time.perf_counter() - t0
        for r in got:
            r["seconds"] = round(spent, 2)
            log(format_row(r))
        rows += got
    return rows
