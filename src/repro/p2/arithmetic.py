"""The P2 §5.1 task-arithmetic benchmark (Tables 1, 2, 5): every method of P2 Table 1 as one
:class:`ArithmeticMethod`, and the addition / negation protocol with α chosen on held-out data (spec D7).

Methods.  The five fine-tuning methods of :mod:`repro.p2.methods` (``ft``, ``linearized``, ``l-lora``, ``lota``,
``talos``) use their own task vectors as they are; the post-hoc methods re-process the non-linear FT vectors
with the configured mergers of :data:`repro.core.merging.MERGERS` at the defaults of the official code (spec D9):
TIES keep 10 % (global trim), TALL mask / Consensus λ per family (``P2Family.tall_lambda``: 0.2 vision, 0.6 NLP
and the "text" family; :func:`for_profile`), k = 2, DARE p = 0.9 (per tensor, exact count), Breadcrumbs β = 0.1,
γ = 0.2 per row.  Each method has a *single-task* version of a task's vector (TIES: τ trimmed; TALL: τ_t ⊙ m_t; DARE /
Breadcrumbs: the sparsified τ_t; the others: τ_t itself), which is what its single-task accuracy (the
normalizer) and task negation use, and a *merged* vector for task addition.

Protocol (spec D7, P2 App. A.1).

- Addition: θ_0 + α·τ_merged for α on the grid; α* maximizes the mean over tasks of the validation accuracy
  normalized by the method's own single-task validation accuracy (ties: the smaller α); report the test
  accuracy at α* (``abs``) and its normalized version (``norm``: test / single-task test).
- Negation, per target task t: θ_0 − α·τ_t; α* minimizes the target validation accuracy subject to the control
  task keeping ≥ 95 % of its zero-shot validation accuracy; report target and control test accuracy at α*.
- The grid is ``alphas`` (default ``profile.alphas``), × 1/(1 − k) for LoTA and TaLoS (k = their sparsity);
  α = 0 is the pre-trained model (evaluated once).  Linearized FT is evaluated as the linearized network (L-LoRA
  linearizes its LoRA branches only, so it is evaluated as the network itself).

Evaluation sets.  "Validation" = a label-balanced subset of ``n_val`` examples of each task's *dev* split, or all of
it for ``n_val`` = 0 (the official protocol per family: vision the whole ``<Task>Val``, ≤ 5000, and ImageNetVal,
5000; T5 its 32 held-out examples; ``P2Family.n_val``); "test" = the first-``n_test`` label-balanced subset of
the task's test split.  The cpu profile uses small values of both to fit its time budget (the notebook says so).
Results are cached as JSON in the workbench store (keyed by everything that determines them).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np

from repro.artifacts import tensor_digest
from repro.core.adamerging import adamerging
from repro.core.merging import MERGERS, Merger, Tall, task_arithmetic
from repro.core.taskvec import TaskVector
from repro.p2.evaluator import Evaluator
from repro.p2.methods import METHODS as FT_METHODS
from repro.p2.methods import family_setting, finetune_method, method_sparsity
from repro.report.reference import select
from repro.workbench import JSON
from repro.jobcall import register_driver

if TYPE_CHECKING:  # pragma: no cover
    from repro.profiles import Profile
    from repro.workbench import Workbench

NEGATION_THRESHOLD = 0.95


@dataclass(frozen=True)
class ArithmeticMethod:
    """One row of P2 Table 1/2: which fine-tuned vectors it starts from and how it processes them."""

    key: str
    label: str  # as printed in P2 Tables 1-2
    family: str  # P2 Table 1 group: Full fine-tuning | Post-hoc | Parameter-efficient
    source: str  # key of repro.p2.methods.METHODS whose task vectors it uses
    linear: bool = False  # evaluated as the linearized network around θ_0
    merger: Merger | None = None  # a post-hoc method of repro.core.merging.MERGERS; None: τ_t as they are, summed

    def single(self, vectors: Mapping[str, TaskVector], task: str, seed: int = 0) -> TaskVector:
        """The method's single-task vector of ``task`` (normalizer of addition; the vector negation subtracts)."""
        if self.merger is None:
            return vectors[task]
        return self.merger.single(list(vectors.values()), list(vectors).index(task), seed)

    def merged(self, vectors: Mapping[str, TaskVector], seed: int = 0) -> TaskVector:
        """The vector task addition scales by α (Σ_t τ_t, or the post-hoc method's merge)."""
        vs = list(vectors.values())
        return task_arithmetic(vs) if self.merger is None else self.merger.merged(vs, seed)


def _ft(key: str) -> ArithmeticMethod:
    spec = FT_METHODS[key]
    return ArithmeticMethod(key, spec.label, spec.family, key, linear=spec.linear)


ARITHMETIC_METHODS: dict[str, ArithmeticMethod] = {
    "ft": _ft("ft"),
    "linearized": _ft("linearized"),
    **{k: ArithmeticMethod(k, m.label, "Post-hoc", "ft", merger=m) for k, m in MERGERS.items()},
    "l-lora": _ft("l-lora"),
    "lota": _ft("lota"),
    "talos": _ft("talos"),
}
TABLE1_METHODS: tuple[str, ...] = tuple(ARITHMETIC_METHODS)
ZERO_SHOT_LABEL = "Pre-trained (Zero-shot)"


def arithmetic_method(key: str) -> ArithmeticMethod:
    if key not in ARITHMETIC_METHODS:
        raise ValueError(f"unknown task-arithmetic method {key!r}; choose one of {list(ARITHMETIC_METHODS)}")
    return ARITHMETIC_METHODS[key]


def for_profile(method: ArithmeticMethod, profile: "Profile") -> ArithmeticMethod:
    """``method`` with its merger set to the profile's P2 family: TALL / Consensus λ = ``P2Family.tall_lambda``
    (the official code: 0.2 for vision, 0.6 for NLP)."""
    if isinstance(method.merger, Tall):
        lam = float(family_setting(profile, "tall_lambda"))
        if lam != method.merger.lam:
            return replace(method, merger=replace(method.merger, lam=lam))
    return method


# ==============================================================================================================
# task vectors of a method
# ==============================================================================================================
def method_vectors(wb: "Workbench", method: ArithmeticMethod | str, tasks: Sequence[str],
                   seed: int | None = None) -> dict[str, TaskVector]:
    """``{task: τ}`` of the fine-tuning method a Table-1 method starts from (trained once, cached)."""
    m = arithmetic_method(method) if isinstance(method, str) else method
    return {t: TaskVector(finetune_method(wb, t, m.source, seed=seed)) for t in tasks}


def method_alphas(wb: "Workbench", method: ArithmeticMethod, alphas: Sequence[float]) -> list[float]:
    """The α grid of a method: ``alphas`` × 1/(1 − k) for the sparse fine-tuning methods (P2 App. A.1)."""
    k = method_sparsity(wb, method.key) if method.key in FT_METHODS and method.merger is None else 0.0
    return [round(float(a) / (1.0 - k), 6) for a in alphas]


def cached_json(wb: "Workbench", kind: str, config: dict, compute: Callable[[], dict]) -> dict:
    """A JSON result of the protocol, cached in the artifact store under ``kind`` / ``config``."""
    return wb.cached(kind, config, lambda: (compute(), {}), JSON)[0]


def vectors_key(vectors: Mapping[str, TaskVector]) -> dict[str, str]:
    """``{task: fingerprint}`` of the vectors a cached result depends on (was a sum-only hash: re-keyed once)."""
    return {t: tensor_digest(v.tensors) for t, v in vectors.items()}


# ==============================================================================================================
# α selection (spec D7; P2 App. A.1)
# ==============================================================================================================
def select_addition_alpha(val_acc_by_alpha: Mapping[float, Mapping[str, float]],
                          single_task_acc: Mapping[str, float]) -> tuple[float, list[dict[str, Any]]]:
    """P2 Eq. 11 / spec D7: α* = argmax_α mean_t acc_t(θ0 + α Στ) / acc_t(single-task FT, same method).

    The normalizer is the fine-tuned checkpoint's own accuracy on the same split ("the single-task accuracy that
    the fine-tuned checkpoint obtained … before being fused"; the NLP code's val/test mix-up is not reproduced).
    Ties keep the smallest α (the official loop over the ascending grid with a strict >).  Returns α* and one
    row per α: ``{"alpha", "avg_normalized", "avg_acc", "normalized": {t: …}, "acc": {t: …}}``.
    """
    if not val_acc_by_alpha:
        raise ValueError("val_acc_by_alpha is empty")
    table: list[dict[str, Any]] = []
    best_alpha, best = None, -math.inf
    for alpha in sorted(val_acc_by_alpha):
        accs = val_acc_by_alpha[alpha]
        if not accs:
            raise ValueError(f"no task accuracies at alpha={alpha}")
        missing = [t for t in accs if t not in single_task_acc]
        if missing:
            raise KeyError(f"no single-task accuracy for {missing}; given for {sorted(single_task_acc)}")
        zero = [t for t in accs if single_task_acc[t] <= 0]
        if zero:
            raise ValueError(f"single-task accuracy must be > 0 to normalize; got 0 for {zero}")
        norm = {t: a / single_task_acc[t] for t, a in accs.items()}
        row = {"alpha": float(alpha), "avg_normalized": float(np.mean(list(norm.values()))),
               "avg_acc": float(np.mean(list(accs.values()))), "normalized": norm, "acc": dict(accs)}
        table.append(row)
        if row["avg_normalized"] > best:
            best_alpha, best = float(alpha), row["avg_normalized"]
    return best_alpha, table


def select_negation_alpha(target_val_by_alpha: Mapping[float, float], control_val_by_alpha: Mapping[float, float],
                          control_zeroshot: float, threshold: float = 0.95) -> float | None:
    """P2 App. A.1 / spec D7: α* = argmin_α target acc(θ0 − ατ) s.t. control ≥ threshold × zero-shot control.

    Ties keep the smallest α; None when no α keeps the control above the threshold.
    """
    missing = [a for a in target_val_by_alpha if a not in control_val_by_alpha]
    if missing:
        raise KeyError(f"no control accuracy at alphas {missing}")
    best_alpha, best = None, math.inf
    for alpha in sorted(target_val_by_alpha):
        if control_val_by_alpha[alpha] >= threshold * control_zeroshot and target_val_by_alpha[alpha] < best:
            best_alpha, best = float(alpha), target_val_by_alpha[alpha]
    return best_alpha


# ==============================================================================================================
# the protocol
# ==============================================================================================================
def single_task(ev: Evaluator, method: ArithmeticMethod, vectors: Mapping[str, TaskVector]) -> dict[str, dict]:
    """Single-task scores (α = 1) of a method's per-task vectors: ``{task: {"val": acc, "test": acc,
    "test_correct": per-example 0/1}}``."""
    out = {}
    for t in ev.tasks:
        tau = method.single(vectors, t, ev.seed)
        test, correct = ev.scored(t, "test", tau, 1.0, method.linear)
        out[t] = {"val": ev.acc(t, "val", tau, 1.0, method.linear), "test": test, "test_correct": correct}
    return out


def task_addition(ev: Evaluator, method: ArithmeticMethod, vectors: Mapping[str, TaskVector],
                  alphas: Sequence[float], single: Mapping[str, Mapping[str, float]] | None = None,
                  merged: TaskVector | None = None) -> dict[str, Any]:
    """P2 task addition of one method (spec D7): α* on validation, then test accuracy and normalized accuracy.

    Returns ``{"alpha", "abs", "norm", "test": {t: acc}, "test_correct": {t: per-example 0/1}, "single": {t:
    {"val", "test", "test_correct"}}, "sweep": [...]}`` with accuracies as fractions; ``sweep`` has one row per α (mean validation accuracy and normalized accuracy).
    """
    single = single_task(ev, method, vectors) if single is None else single
    merged = method.merged(vectors, ev.seed) if merged is None else merged
    val = {float(a): {t: ev.acc(t, "val", merged, a, method.linear) for t in ev.tasks} for a in alphas}
    # a single-task model scoring 0 (e.g. F1 = 0: it never predicts the positive class) cannot normalize; such
    # tasks are left out of the normalized mean (α selection and report) and listed in "unnormalized"
    usable = [t for t in ev.tasks if single[t]["val"] > 0] or list(ev.tasks)
    norms = {t: single[t]["val"] if single[t]["val"] > 0 else 1.0 for t in usable}
    alpha, sweep = select_addition_alpha({a: {t: v[t] for t in usable} for a, v in val.items()}, norms)
    scored = {t: ev.scored(t, "test", merged, alpha, method.linear) for t in ev.tasks}
    test = {t: v[0] for t, v in scored.items()}
    norm = {t: test[t] / single[t]["test"] if single[t]["test"] > 0 else math.nan for t in ev.tasks}
    normed = [v for v in norm.values() if not math.isnan(v)]
    return {"alpha": alpha, "abs": float(np.mean(list(test.values()))),
            "norm": float(np.mean(normed)) if normed else math.nan, "test": test, "normalized": norm,
            "test_correct": {t: v[1] for t, v in scored.items()},
            "unnormalized": sorted({t for t in ev.tasks if single[t]["val"] <= 0 or single[t]["test"] <= 0}),
            "single": {t: dict(v) for t, v in single.items()},
            "sweep": [{"alpha": r["alpha"], "avg_acc": float(np.mean(list(val[r["alpha"]].values()))),
                       "avg_normalized": r["avg_normalized"]} for r in sweep]}


def task_negation(ev: Evaluator, method: ArithmeticMethod, vectors: Mapping[str, TaskVector],
                  alphas: Sequence[float], threshold: float = NEGATION_THRESHOLD) -> dict[str, Any]:
    """P2 task negation of one method (spec D7): per target task, θ_0 − α·τ_t with α* = the lowest target
    validation accuracy keeping the control ≥ ``threshold`` × its zero-shot validation accuracy.

    Returns ``{"target": mean target test acc, "control": mean control test acc, "per_task": {t: {...}}}``.
    """
    if ev.control is None:
        raise ValueError("task negation needs a control task (Evaluator(control=...))")
    c = ev.control
    c_zero = ev.zero_shot(c, "val")
    per_task = {}
    for t in ev.tasks:
        tau = method.single(vectors, t, ev.seed)  # θ_0 − α·τ is evaluated as θ_0 + (−α)·τ
        targ = {float(a): ev.acc(t, "val", tau, -a, method.linear) for a in alphas}
        # the control is only needed until the first α (in order of target accuracy, then α) that keeps it:
        # the same α* as select_negation_alpha over the full grid, with fewer control evaluations
        cont: dict[float, float] = {}
        for a in sorted(targ, key=lambda a: (targ[a], a)):
            cont[a] = ev.acc(c, "val", tau, -a, method.linear)
            if cont[a] >= threshold * c_zero:
                break
        alpha = select_negation_alpha({a: targ[a] for a in cont}, cont, c_zero, threshold)
        alpha = 0.0 if alpha is None else alpha  # α = 0 (the pre-trained model) always keeps the control
        target, target_correct = ev.scored(t, "test", tau, -alpha, method.linear)
        control, control_correct = ev.scored(c, "test", tau, -alpha, method.linear)
        per_task[t] = {"alpha": alpha, "target": target, "control": control, "target_correct": target_correct,
                       "control_correct": control_correct, "val_target": targ, "val_control": cont}
    return {"target": float(np.mean([r["target"] for r in per_task.values()])),
            "control": float(np.mean([r["control"] for r in per_task.values()])),
            "control_zero_shot_val": c_zero, "per_task": per_task}


def zero_shot_summary(ev: Evaluator) -> dict[str, Any]:
    """The pre-trained model's test accuracy on every task and on the control (Table 1/2 first row)."""
    test = {t: ev.zero_shot(t, "test") for t in ev.tasks}
    out = {"abs": float(np.mean(list(test.values()))), "test": test}
    if ev.control:
        out["control"] = ev.zero_shot(ev.control, "test")
        out["control_val"] = ev.zero_shot(ev.control, "val")
    return out


def run_method(wb: "Workbench", ev: Evaluator, key: str, alphas: Sequence[float] | None = None,
               negation: bool = True) -> dict[str, Any]:
    """Addition (and negation) results of one Table-1 method, trained and evaluated once (cached JSON)."""
    method = for_profile(arithmetic_method(key), wb.profile)
    vectors = method_vectors(wb, method, ev.tasks, seed=ev.seed)
    grid = method_alphas(wb, method, wb.profile.alphas if alphas is None else alphas)
    config = {"method": key, "grid": grid, "negation": negation, "eval": ev.config(), "vectors": vectors_key(vectors),
              "per_example": True,  # results carry the per-example test correctness (re-keyed once)
              "merger": None if method.merger is None else method.merger.config(),
              "negation_threshold": NEGATION_THRESHOLD, **wb.data_key(max_length=False)}

    def compute() -> dict:
        start, n0 = time.perf_counter(), ev.evaluated
        out: dict[str, Any] = {"method": key, "label": method.label, "family": method.family, "grid": grid}
        out["addition"] = task_addition(ev, method, vectors, grid)
        if negation:
            out["negation"] = task_negation(ev, method, vectors, grid)
        out["density"] = {t: v.count_nonzero() / sum(wb.pre[n].numel() for n in wb.names("maskable"))
                          for t, v in vectors.items()}
        out["eval_seconds"], out["examples_evaluated"] = time.perf_counter() - start, ev.evaluated - n0
        return out

    return cached_json(wb, "p2-arith", config, compute)


# ==============================================================================================================
# P2 Table 5: other merging schemes on top of a method's vectors
# ==============================================================================================================
MERGE_SCHEMES = ("sum", "ties", "adamerging-task", "adamerging-layer")


def merging_scheme(wb: "Workbench", ev: Evaluator, source: str, scheme: str, alphas: Sequence[float] | None = None,
                   adamerging_steps: int = 10, adamerging_lr: float = 0.05, adamerging_batch: int = 8,
                   ) -> dict[str, Any]:
    """P2 Table 5: task addition of ``source``'s vectors (``ft`` or ``talos``) merged by ``scheme`` (cached JSON).

    - ``sum``: task arithmetic (Table 1 protocol).
    - ``ties``: TIES-Merging; for ``ft`` exactly the Table 1 TIES row (top-10 % trim); for a sparse source the
      trim step is skipped ("TaLoS + TIES", P2 App. A.8) and the single-task vectors are the source's own.
    - ``adamerging-task`` / ``-layer``: AdaMerging (Yang et al. 2024) coefficients learned by entropy
      minimization on the *unlabeled validation inputs* of all tasks (no test inputs), initialized at the
      task-arithmetic α* of the source and trained with Adam (``adamerging_lr`` × the α-grid stretch of
      sparse sources) for ``adamerging_steps`` steps; no α search afterwards.

    Normalized accuracy divides by the source method's single-task test accuracy.
    """
    if scheme not in MERGE_SCHEMES:
        raise ValueError(f"unknown merging scheme {scheme!r}; choose one of {MERGE_SCHEMES}")
    method = arithmetic_method(source)
    if method.merger is not None:
        raise ValueError(f"source must be a fine-tuning method, got post-hoc {source!r}")
    vectors = method_vectors(wb, method, ev.tasks, seed=ev.seed)
    grid = method_alphas(wb, method, wb.profile.alphas if alphas is None else alphas)
    ties = MERGERS["ties"] if not FT_METHODS[source].sparse else replace(MERGERS["ties"], keep=None)
    config = {"source": source, "scheme": scheme, "grid": grid, "eval": ev.config(), "vectors": vectors_key(vectors),
              "ada": [adamerging_steps, adamerging_lr, adamerging_batch], "ties": ties.config(),
              "per_example": True,  # every scheme's result carries its per-example test correctness
              **wb.data_key(max_length=False)}

    def compute() -> dict:
        base = run_method(wb, ev, source, alphas, negation=ev.control is not None)["addition"]
        single = base["single"]
        if scheme == "sum":
            res = base
        elif scheme == "ties" and source == "ft":  # = the TIES-Merging row of Table 1 (own single-task normalizer)
            res = run_method(wb, ev, "ties", alphas, negation=ev.control is not None)["addition"]
        elif scheme == "ties":
            merged = ties.merged(list(vectors.values()), ev.seed)
            res = task_addition(ev, method, vectors, grid, single=single, merged=merged)
        else:
            stretch = grid[-1] / max(float((wb.profile.alphas if alphas is None else alphas)[-1]), 1e-12)
            unlabeled = {t: ev.sets[t]["val"] for t in ev.tasks}
            start = time.perf_counter()
            ada = adamerging(wb.model, wb.pre, vectors, unlabeled, scheme.split("-")[1],
                             steps=adamerging_steps, lr=adamerging_lr * stretch, init=base["alpha"],
                             batch_size=adamerging_batch, seed=ev.seed, progress=False)
            scored = {t: ev.scored(t, "test", ada.merged, 1.0, method.linear) for t in ev.tasks}
            test = {t: v[0] for t, v in scored.items()}
            norm = {t: test[t] / single[t]["test"] if single[t]["test"] > 0 else math.nan for t in ev.tasks}
            lam = ada.lambdas.reshape(len(ev.tasks), -1)
            res = {"alpha": None, "abs": float(np.mean(list(test.values()))),
                   "norm": float(np.nanmean(list(norm.values()))), "test": test, "normalized": norm,
                   "test_correct": {t: v[1] for t, v in scored.items()},
                   "lambda_mean": {t: float(lam[i].mean()) for i, t in enumerate(ev.tasks)},
                   "entropy": ada.history, "seconds": time.perf_counter() - start}
        return {"source": source, "scheme": scheme, **{k: v for k, v in res.items() if k != "single"}}

    return cached_json(wb, "p2-merge", config, compute)


# ==============================================================================================================
# settings and result rows (the notebooks' tables)
# ==============================================================================================================
def protocol_settings(profile, *, n_val: int | None = None, n_test: int | None = None,
                      alpha_stride: int | None = None, adamerging_steps: int | None = None) -> dict[str, Any]:
    """Evaluation sizes of the task-arithmetic protocol: the arguments, else ``profile.p2_protocol``
    (:class:`repro.profiles.ArithmeticProtocol`, which validates them).

    ``n_val``: validation examples per task for α selection (0 = the whole dev split); ``n_test``: test examples
    per task (None in the
    protocol: ``profile.n_test``; 0 = all); ``alpha_stride``: use every k-th α of ``profile.alphas``, always ending
    at its last value; ``adamerging_steps``: AdaMerging optimizer steps.
    """
    given = {"n_val": n_val, "n_test": n_test, "alpha_stride": alpha_stride, "adamerging_steps": adamerging_steps}
    proto = replace(profile.p2_protocol, **{k: int(v) for k, v in given.items() if v is not None})
    alphas = list(profile.alphas)[::proto.alpha_stride]
    if alphas[-1] != profile.alphas[-1]:
        alphas.append(profile.alphas[-1])
    return {"n_val": proto.n_val, "n_test": profile.n_test if proto.n_test is None else proto.n_test,
            "alphas": [float(a) for a in alphas], "adamerging_steps": proto.adamerging_steps}


def _pct(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else 100.0 * float(x)


def _paper(table: int, model: str, method: str, metric: str) -> float | None:
    try:
        df = select("p2", table, model=model, method=method, metric=metric)
    except KeyError:
        return None
    return None if df.empty else float(df["value"].iloc[0])


def table1_rows(results: Mapping[str, Mapping[str, Any]], zero: Mapping[str, Any],
                paper_model: str = "T5-Small") -> list[dict[str, Any]]:
    """P2 Table 1 rows (abs_acc, norm_acc in %) of our runs beside the printed ``paper_model`` column."""
    rows = [{"task": "Average", "method": ZERO_SHOT_LABEL, "sparsity": None, "metric": "abs_acc",
             "value": _pct(zero["abs"]), "std": None, "paper": _paper(1, paper_model, ZERO_SHOT_LABEL, "abs_acc"),
             "paper_model": paper_model, "family": "Zero-shot"}]
    for key, r in results.items():
        m = arithmetic_method(key)
        add = r["addition"]
        for metric, v in (("abs_acc", add["abs"]), ("norm_acc", add["norm"])):
            row = {"task": "Average", "method": m.label, "sparsity": None, "metric": metric,
                   "value": _pct(v), "std": None, "paper": _paper(1, paper_model, m.label, metric),
                   "paper_model": paper_model, "family": m.family, "alpha": add["alpha"]}
            if metric == "norm_acc" and add.get("unnormalized"):
                row["notes"] = f"single-task score 0 on {', '.join(add['unnormalized'])}: left out of the mean"
            rows.append(row)
    return rows


def table2_rows(results: Mapping[str, Mapping[str, Any]], zero: Mapping[str, Any],
                paper_model: str = "T5-Small") -> list[dict[str, Any]]:
    """P2 Table 2 rows (targ_acc, cont_acc in %) of our runs beside the printed ``paper_model`` column."""
    rows = [{"task": "Average", "method": ZERO_SHOT_LABEL, "sparsity": None, "metric": metric, "value": _pct(v),
             "std": None, "paper": _paper(2, paper_model, ZERO_SHOT_LABEL, metric), "paper_model": paper_model,
             "family": "Zero-shot"}
            for metric, v in (("targ_acc", zero["abs"]), ("cont_acc", zero["control"]))]
    for key, r in results.items():
        m = arithmetic_method(key)
        neg = r["negation"]
        for metric, v in (("targ_acc", neg["target"]), ("cont_acc", neg["control"])):
            rows.append({"task": "Average", "method": m.label, "sparsity": None, "metric": metric,
                         "value": _pct(v), "std": None, "paper": _paper(2, paper_model, m.label, metric),
                         "paper_model": paper_model, "family": m.family})
    return rows


#: P2 Table 5 method names by (source, scheme)
TABLE5_LABELS: dict[tuple[str, str], str] = {
    ("ft", "sum"): "Non-linear FT", ("ft", "ties"): "TIES-Merging",
    ("ft", "adamerging-task"): "Task-wise AdaMerging", ("ft", "adamerging-layer"): "Layer-wise AdaMerging",
    ("talos", "sum"): "TaLoS", ("talos", "ties"): "TaLoS + TIES-Merging",
    ("talos", "adamerging-task"): "TaLoS + Task-wise AdaMerging",
    ("talos", "adamerging-layer"): "TaLoS + Layer-wise AdaMerging",
}


def table5_rows(merges: Mapping[tuple[str, str], Mapping[str, Any]], zero: Mapping[str, Any],
                paper_model: str = "T5-Small") -> list[dict[str, Any]]:
    """P2 Table 5 rows (abs_acc, norm_acc in %): ``merges[(source, scheme)]`` from :func:`merging_scheme`."""
    rows = [{"task": "Average", "method": ZERO_SHOT_LABEL, "sparsity": None, "metric": "abs_acc",
             "value": _pct(zero["abs"]), "std": None, "paper": _paper(5, paper_model, ZERO_SHOT_LABEL, "abs_acc"),
             "paper_model": paper_model, "vectors": "none", "scheme": "none"}]
    for (source, scheme), r in merges.items():
        label = TABLE5_LABELS[(source, scheme)]
        for metric, v in (("abs_acc", r["abs"]), ("norm_acc", r["norm"])):
            rows.append({"task": "Average", "method": label, "sparsity": None, "metric": metric, "value": _pct(v),
                         "std": None, "paper": _paper(5, paper_model, label, metric), "paper_model": paper_model,
                         "vectors": arithmetic_method(source).label, "scheme": scheme})
    return rows


def best_other(rows: Sequence[Mapping[str, Any]], metric: str, method: str = "TaLoS",
               lower_is_better: bool = False) -> tuple[float, str, float]:
    """(``method``'s value, the best other non-zero-shot method, its value) for one metric of our rows."""
    mine = [r for r in rows if r["metric"] == metric and r["method"] == method]
    others = [r for r in rows if r["metric"] == metric and r["method"] not in (method, ZERO_SHOT_LABEL)
              and r["value"] is not None]
    if not mine or not others:
        raise ValueError(f"no rows for {method!r} or for other methods with metric {metric!r}")
    pick = min if lower_is_better else max
    best = pick(others, key=lambda r: r["value"])
    return float(mine[0]["value"]), str(best["method"]), float(best["value"])


def _evaluator_of(wb: "Workbench", k: dict) -> Evaluator:
    return Evaluator(wb, k["tasks"], k["control"], k["n_val"], k["n_test"], seed=k["seed"])


register_driver("repro.p2.arithmetic.run_method",
                lambda wb, k, value: run_method(wb, _evaluator_of(wb, k), k["key"], k["alphas"],
                                                negation=k["negation"]), pair=False)
register_driver("repro.p2.arithmetic.merging_scheme",
                lambda wb, k, value: merging_scheme(wb, _evaluator_of(wb, k), k["source"], k["scheme"], k["alphas"],
                                                    adamerging_steps=k["adamerging_steps"]), pair=False)
