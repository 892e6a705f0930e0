"""Steady-state cost of each job kind, measured inside one long call, as a real run pays it.

- :func:`train_steps` — one :func:`repro.core.finetune.train` call of ``steps`` SGD steps at P1's batch 2; a step's
  time is the interval between two consecutive ``callback`` calls (:func:`repro.device.sync` first), so the
  optimizer, the data loader and the parameter copies a call sets up once are not counted per step.
- :func:`graft_steps` — one :func:`repro.core.grafting.learn_graft` call of several steps (the gradient over
  ``max_examples``, then the rounded graft scored on train and dev, as the official code), timed the same way.
- :func:`eval_times` — whole :func:`repro.core.evaluation.predict` calls over ``n_eval`` examples.
- :func:`table3` — P2 Table 3's iteration time per method (non-linear FT, linearized FT, TaLoS 90 % sparse) in
  interleaved rounds (the order rotates each round, so a load change hits every method alike); each method /
  FT ratio is the ratio of median iteration times with a percentile CI from a bootstrap over rounds, paired by
  round (:func:`repro.report.verdicts.paired_bootstrap`), and its verdict in the claims' words
  (:func:`repro.report.verdicts.decide`: holds / does-not-hold / inconclusive).
- :func:`kind_flops` — FLOPs of one unit of each kind (``torch.utils.flop_counter``: the matmuls), for the
  achieved FLOP/s beside the device's measured ``torch.mm`` peak.

Every repeated measurement is summarised by :func:`spread` (median, quartiles, n).  :func:`steady_report` runs them
all on one :class:`~repro.bench.pairs.Setup` and returns the JSON-ready dict and the rows.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import replace
from typing import Any, Callable, Sequence

import numpy as np
import torch
from torch.utils.flop_counter import FlopCounterMode

from repro.bench.pairs import PAPER_LINEAR_TIME, PAPER_TALOS_TIME, Setup, restored, synthetic_vector, talos_mask
from repro.bench.rows import make_row
from repro.core.evaluation import predict
from repro.core.finetune import MaskedOptimizer, train
from repro.core.grafting import learn_graft, movement_mask, scored_train
from repro.device import sync
from repro.p2.cost import measure_iteration
from repro.profiles import FinetuneRecipe, GraftRecipe
from repro.report.verdicts import HOLDS, decide, paired_bootstrap

#: the steady-state settings of ``--quick`` and of the full run
QUICK_STEADY = dict(train_steps=120, graft_steps=4, graft_examples=16, eval_repeats=5, rounds=5, iterations=2)
FULL_STEADY = dict(train_steps=400, graft_steps=8, graft_examples=64, eval_repeats=9, rounds=12, iterations=5)
#: steps dropped at the start of a long call (allocator and caches warming up)
SKIP = 3


def spread(xs: Sequence[float]) -> dict[str, Any]:
    """Median, quartiles, min / max and count of repeated measurements; ``rel_iqr`` = IQR / median."""
    xs = [float(x) for x in xs]
    if not xs:
        return {"n": 0, "median": None, "q1": None, "q3": None, "min": None, "max": None, "rel_iqr": None}
    q1, med, q3 = (np.quantile(xs, [0.25, 0.5, 0.75]).tolist())
    return {"n": len(xs), "median": med, "q1": q1, "q3": q3, "min": min(xs), "max": max(xs),
            "rel_iqr": (q3 - q1) / med if med else None}


class StepClock:
    """``callback`` for a training or graft loop: records the synchronized clock after every step; ``times`` are
    the intervals between consecutive steps (the first step, which pays the call's setup, has no interval)."""

    def __init__(self, device: torch.device | str) -> None:
        self.device, self.stamps = device, []

    def __call__(self, *_: Any) -> None:
        sync(self.device)
        self.stamps.append(time.perf_counter())

    def times(self, skip: int = SKIP) -> list[float]:
        deltas = [b - a for a, b in zip(self.stamps, self.stamps[1:])]
        return deltas[skip:] if len(deltas) > skip + 2 else deltas


def _recipe(steps: int, batch: int = 2) -> FinetuneRecipe:
    """P1's official SGD recipe at ``batch``, ``steps`` steps, no dev evaluation inside the call."""
    return FinetuneRecipe(optimizer="sgd", lr=1e-5, batch_size=batch, steps=steps, eval_every=0)


def train_steps(s: Setup, steps: int, batch: int = 2) -> list[float]:
    """Seconds of each step of one ``train()`` call of ``steps`` steps (parameters restored afterwards)."""
    clock = StepClock(s.device)
    with restored(s.model):
        train(s.model, {s.task: s.examples}, _recipe(steps, batch), s.model.graftable_names(), progress=False,
              callback=clock)
    return clock.times()


def foreach_ab(s: Setup, steps: int, rounds: int) -> dict[str, Any]:
    """The batch-2 SGD step with the per-tensor update and with ``torch._foreach_*``
    (:attr:`repro.core.finetune.MaskedOptimizer.foreach`), alternating whole ``train()`` calls ``rounds`` times each;
    the parameters after the last pair are compared bit for bit."""
    times: dict[str, list[float]] = {"per_tensor": [], "foreach": []}
    final: dict[str, dict] = {}
    saved = MaskedOptimizer.foreach
    try:
        for r in range(rounds):
            for key in (("per_tensor", "foreach") if r % 2 == 0 else ("foreach", "per_tensor")):
                MaskedOptimizer.foreach = key == "foreach"
                clock = StepClock(s.device)
                with restored(s.model):
                    train(s.model, {s.task: s.examples}, _recipe(steps), s.model.graftable_names(), progress=False,
                          callback=clock)
                    final[key] = {n: p.detach().clone() for n, p in s.model.named_parameters()}
                times[key].append(statistics.median(clock.times()))
    finally:
        MaskedOptimizer.foreach = saved
    est, lo, hi = paired_bootstrap([times["foreach"], times["per_tensor"]], _median_ratio, n_resamples=1000)
    diff = max(float((final["foreach"][n] - final["per_tensor"][n]).abs().max()) for n in final["foreach"])
    return {"times": times, "ratio": est, "ci_low": lo, "ci_high": hi, "max_abs_diff": diff,
            "verdict": decide(lo, hi, "<", 1.0), "claim": "foreach SGD step / per-tensor SGD step < 1"}


def graft_setup(s: Setup, n_examples: int) -> tuple[dict, list, list, GraftRecipe]:
    """(Δ, train, dev, recipe) of a graft on the setup: ``n_examples`` per step in batches of 8, dev = n/4."""
    delta = synthetic_vector(s.model, s.model.graftable_names())
    train_set = [s.examples[i % len(s.examples)] for i in range(n_examples)]
    dev_set = [s.examples[-1 - i % len(s.examples)] for i in range(max(n_examples // 4, 2))]
    return delta, train_set, dev_set, GraftRecipe(lr=1e7, steps=1, batch_size=8, max_examples=n_examples)


def graft_steps(s: Setup, steps: int, n_examples: int) -> tuple[list[float], float]:
    """(seconds of each step of one ``learn_graft`` call, example-passes per step: the gradient over
    ``n_examples`` + the scored train and dev examples at 1/3 each, as the job inventory counts them)."""
    delta, tr, dev, recipe = graft_setup(s, n_examples)
    base = movement_mask(delta, 1e-4)
    clock = StepClock(s.device)
    learn_graft(s.model, s.task, delta, tr, dev, base, replace(recipe, steps=steps), progress=False, callback=clock)
    passes = n_examples + (len(scored_train(tr, recipe, 0)) + len(dev)) / 3
    return clock.times(skip=0), passes


def eval_times(s: Setup, repeats: int, batch: int = 64) -> list[float]:
    """Seconds of ``repeats`` whole evaluations of ``n_eval`` examples (after one untimed)."""
    ex = s.examples[: s.n_eval]
    predict(s.model, ex, s.task, batch_size=batch)
    out = []
    for _ in range(repeats):
        sync(s.device)
        t0 = time.perf_counter()
        predict(s.model, ex, s.task, batch_size=batch)
        sync(s.device)
        out.append(time.perf_counter() - t0)
    return out


def kind_flops(s: Setup, graft_examples: int) -> dict[str, float]:
    """FLOPs (matmuls, counted) of one unit of each kind: a batch-2 SGD step, a graft step, one evaluation of
    ``n_eval`` examples."""
    out = {}
    with restored(s.model), FlopCounterMode(display=False) as c:
        train(s.model, {s.task: s.examples}, _recipe(1), s.model.graftable_names(), progress=False)
    out["train_step"] = float(c.get_total_flops())
    delta, tr, dev, recipe = graft_setup(s, graft_examples)
    with FlopCounterMode(display=False) as c:
        learn_graft(s.model, s.task, delta, tr, dev, movement_mask(delta, 1e-4), recipe, progress=False)
    out["graft_step"] = float(c.get_total_flops())
    with FlopCounterMode(display=False) as c:
        predict(s.model, s.examples[: s.n_eval], s.task)
    out["eval"] = float(c.get_total_flops())
    return out


#: Table 3 methods of the bench: key → (label, linearized, trainable: "names" | "talos"), the paper's ViT-B/32 ratio
TABLE3 = {"ft": ("Non-linear FT", False, "names", 1.0),
          "linearized": ("Linearized FT", True, "names", PAPER_LINEAR_TIME),
          "talos": ("TaLoS", False, "talos", PAPER_TALOS_TIME)}


def table3_rounds(s: Setup, rounds: int, iterations: int) -> dict[str, list[float]]:
    """Median total iteration time of each Table 3 method per round; rounds interleave the methods, rotating the
    order (round r starts at method r mod 3), each round ``iterations`` timed after one warm-up iteration."""
    model, names = s.model, s.model.maskable_names()
    mask = s.cache.setdefault("talos_mask", talos_mask(s))
    recipe = FinetuneRecipe(optimizer="adamw", lr=1e-5, batch_size=s.batch_size, steps=1, weight_decay=0.1)
    keys = list(TABLE3)
    out: dict[str, list[float]] = {k: [] for k in keys}
    for r in range(rounds):
        for k in keys[r % len(keys):] + keys[: r % len(keys)]:
            label, linear, which, _ = TABLE3[k]
            with restored(model):
                cost = measure_iteration(model, s.examples, s.task, label, mask if which == "talos" else names,
                                         recipe, linearized=linear, iterations=iterations, warmup=1)
            out[k].append(statistics.median(cost.total_iter_repeats))
    return out


def _median_ratio(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.median(a) / np.median(b))


def table3_ratios(times: dict[str, list[float]], n_resamples: int = 2000) -> list[dict[str, Any]]:
    """Each method / non-linear FT: the ratio of median iteration times over the rounds, its 95 % percentile CI
    (bootstrap over rounds, paired by round) and verdicts: ``paper_direction`` = the method is faster (ratio < 1)
    or slower (> 1) than FT as in the paper, ``within_10pct_of_paper`` is reported beside."""
    out = []
    ft = times["ft"]
    for k, ts in times.items():
        if k == "ft":
            continue
        label, _, _, paper = TABLE3[k]
        est, lo, hi = paired_bootstrap([ts, ft], _median_ratio, n_resamples=n_resamples)
        op = "<" if paper < 1 else ">"
        out.append({"key": k, "method": label, "ratio": est, "ci_low": lo, "ci_high": hi, "rounds": len(ts),
                    "paper": paper, "claim": f"{label} / FT iteration time {op} 1 (the paper's direction)",
                    "verdict": decide(lo, hi, op, 1.0), "ci_rel_halfwidth": (hi - lo) / 2 / est if est else None})
    if "talos" in times:  # the paper's Table 3 claim: TaLoS fastest, against every other method
        for k, ts in times.items():
            if k in ("talos", "ft"):  # (TaLoS / FT is above)
                continue
            est, lo, hi = paired_bootstrap([times["talos"], ts], _median_ratio, n_resamples=n_resamples)
            out.append({"key": f"talos/{k}", "method": f"TaLoS / {TABLE3[k][0]}", "ratio": est, "ci_low": lo,
                        "ci_high": hi, "rounds": len(ts), "paper": PAPER_TALOS_TIME / TABLE3[k][3],
                        "claim": f"TaLoS / {TABLE3[k][0]} iteration time < 1 (Table 3: TaLoS fastest)",
                        "verdict": decide(lo, hi, "<", 1.0), "ci_rel_halfwidth": (hi - lo) / 2 / est if est else None})
    return out


def steady_report(s: Setup, settings: dict, peak_gflops: float | None = None,
                  log: Callable[[str], None] = print) -> tuple[dict[str, Any], list[dict]]:
    """All steady-state figures of one model: ``({"kinds", "table3", "flops", "per_step"}, rows)``.  ``per_step``
    is in the units :mod:`repro.bench.hours` prices (P1 units for a text model, ViT units for an image model)."""
    t0 = time.perf_counter()
    kinds: dict[str, Any] = {}
    ts = train_steps(s, settings["train_steps"])
    kinds["train_step"] = {"unit": "SGD step, batch 2", "per_call": settings["train_steps"], **spread(ts)}
    log(f"  steady train step (one train() of {settings['train_steps']} steps): {_fmt(kinds['train_step'])}")
    gs, passes = graft_steps(s, settings["graft_steps"], settings["graft_examples"])
    kinds["graft_step"] = {"unit": f"graft step, {settings['graft_examples']} examples + scoring",
                           "example_passes": passes, "per_call": settings["graft_steps"], **spread(gs)}
    log(f"  steady graft step (one learn_graft() of {settings['graft_steps']} steps): {_fmt(kinds['graft_step'])}")
    es = eval_times(s, settings["eval_repeats"])
    kinds["eval"] = {"unit": f"evaluation of {s.n_eval} examples", "examples": s.n_eval, **spread(es)}
    log(f"  evaluation ({s.n_eval} examples, {settings['eval_repeats']} calls): {_fmt(kinds['eval'])}")
    flops = kind_flops(s, settings["graft_examples"])
    for k, f in flops.items():
        med = kinds[k]["median"]
        kinds[k]["gflop"] = f / 1e9
        kinds[k]["gflops_achieved"] = f / med / 1e9 if med else None
        kinds[k]["fraction_of_peak"] = (f / med / 1e9 / peak_gflops) if (med and peak_gflops) else None
    ab = None
    if settings.get("foreach_ab") or torch.device(s.device).type == "cuda":
        ab = foreach_ab(s, settings["train_steps"] // 2, settings.get("foreach_rounds", 3))
        log(f"  foreach / per-tensor SGD step: {ab['ratio']:.3f}x, 95% CI [{ab['ci_low']:.3f}, {ab['ci_high']:.3f}] "
            f"{ab['verdict']}; max |Δθ| {ab['max_abs_diff']:.2e}")
    t3 = table3_rounds(s, settings["rounds"], settings["iterations"])
    ratios = table3_ratios(t3)
    for r in ratios:
        log(f"  Table 3 {r['method']:<32} {r['ratio']:.3f}x  95% CI [{r['ci_low']:.3f}, {r['ci_high']:.3f}] over "
            f"{r['rounds']} interleaved rounds  {r['verdict']}")
    image = s.model.__class__.__name__.startswith("CLIP")
    per_step = _units(kinds, t3, image, s.batch_size)
    rows = _rows(s, kinds, ratios, peak_gflops)
    spent = round(time.perf_counter() - t0, 2)
    for r in rows:
        r["seconds"] = spent
    return {"model": s.label, "device": s.device, "kinds": kinds, "table3_times": t3, "table3": ratios,
            "flops": flops, "peak_gflops": peak_gflops, "per_step": per_step, "foreach_sgd": ab,
            "seconds": spent}, rows


def _fmt(sp: dict) -> str:
    return (f"median {sp['median'] * 1000:.2f} ms, IQR {sp['q1'] * 1000:.2f}-{sp['q3'] * 1000:.2f} ms "
            f"({sp['rel_iqr'] * 100:.0f}%), n {sp['n']}")


def _units(kinds: dict, t3: dict, image: bool, batch: int) -> dict[str, dict]:
    """The steady figures in :mod:`repro.bench.hours`'s units."""
    ev = kinds["eval"]
    if image:
        return {"vit_ft_step": {"seconds": statistics.median(t3["ft"]), "batch": batch, "per": "step"},
                "vit_eval_example": {"seconds": ev["median"] / ev["examples"], "batch": 64, "per": "example"}}
    g = kinds["graft_step"]
    return {"p1_ft_step": {"seconds": kinds["train_step"]["median"], "batch": 2, "per": "step"},
            "p1_graft_example": {"seconds": g["median"] / g["example_passes"], "batch": 8, "per": "example-pass"},
            "p1_eval_example": {"seconds": ev["median"] / ev["examples"], "batch": 64, "per": "example"}}


def _rows(s: Setup, kinds: dict, ratios: list[dict], peak: float | None) -> list[dict]:
    rows = []
    for k, v in kinds.items():
        rows.append(s.row(f"steady {k.replace('_', ' ')} time", v["median"], None, "s", ratio=v["rel_iqr"],
                          ratio_def="IQR / median", note=f"{v['unit']}; IQR {v['q1']:.4g}-{v['q3']:.4g} s, n {v['n']}; "
                          f"{v.get('gflops_achieved') or 0:.3g} GFLOP/s"))
        if v.get("gflops_achieved") is not None and peak:
            rows.append(s.row(f"steady {k.replace('_', ' ')} GFLOP/s vs torch.mm peak", v["gflops_achieved"], peak,
                              "GFLOP/s", ratio_def="fraction of the measured matmul peak",
                              note=f"{v['gflop']:.3g} GFLOP per unit (matmuls, counted) over the median time"))
    for r in ratios:
        rows.append(make_row(f"Table 3 {r['method']} time ratio (CI)", r["ratio"], None, "x", device=s.device,
                             model=s.label, ratio=r["ratio"], passed=HOLDS[r["verdict"]], verdict=r["verdict"],
                             ci=[r["ci_low"], r["ci_high"]], paper=r["paper"], ratio_def="median / median",
                             note=f"{r['claim']}; 95% CI [{r['ci_low']:.3f}, {r['ci_high']:.3f}], bootstrap over "
                                  f"{r['rounds']} interleaved rounds"))
    return rows
