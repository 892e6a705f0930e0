"""P2 Tables 1 and 2 over several seeds: the per-seed protocol of :mod:`repro.p2.arithmetic`, run once per seed,
reported as the mean (and sample std) over seeds, with the per-example test correctness of every reported number
gathered as ``[seeds, examples]`` arrays for the paired bootstrap of :mod:`repro.p2.task_arithmetic.claims`.

A seed is the fine-tuning seed and the data seed of the k-shot train / dev split (``Workbench(seed=…)``,
``Evaluator(seed=…)``); the test subsets are drawn with seed 0, so every method and every seed is scored on the
same test examples (what makes the bootstrap *paired*).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np
import pandas as pd

from repro.p2.arithmetic import (ARITHMETIC_METHODS, TABLE1_METHODS, TABLE5_LABELS, ZERO_SHOT_LABEL, merging_scheme,
                                 run_method, table1_rows, table2_rows, zero_shot_summary)
from repro.p2.evaluator import Evaluator
from repro.p2.methods import METHODS, P2_METHODS, finetune_all
from repro.workbench import Workbench

if TYPE_CHECKING:  # pragma: no cover
    from repro.profiles import Profile

#: which reported test number a correctness vector belongs to
KINDS: tuple[str, ...] = ("single", "addition", "target", "control")


@dataclass
class SeedRun:
    """Everything one seed of Tables 1-2 produced: its workbench and evaluator, the ``run_method`` results of
    every Table-1 method (keyed as :data:`repro.p2.arithmetic.TABLE1_METHODS`), zero-shot scores and the
    fine-tuning log."""

    seed: int
    wb: "Workbench"
    ev: Evaluator
    results: dict[str, dict[str, Any]]
    zero: dict[str, Any]
    log: list[dict[str, Any]] = field(default_factory=list)
    train_seconds: float = 0.0


def seed_protocol(profile: "Profile", tasks: Sequence[str], control: str | None, settings: Mapping[str, Any],
                  seed: int, data_dir: str | None = None) -> tuple["Workbench", Evaluator]:
    """The workbench (model, data, artifact store) and the evaluation sets of one seed; nothing is trained."""
    wb = Workbench(profile, data_dir=data_dir, seed=seed)
    return wb, Evaluator(wb, tasks, control, settings["n_val"], settings["n_test"], seed=seed)


def run_seed(profile: "Profile", tasks: Sequence[str], control: str | None, settings: Mapping[str, Any],
             seed: int, data_dir: str | None = None) -> SeedRun:
    """Fine-tune every P2 method on ``tasks`` (cached) and run the Table 1/2 protocol for one seed."""
    wb, ev = seed_protocol(profile, tasks, control, settings, seed, data_dir)
    start = time.perf_counter()
    _, log = finetune_all(wb, list(tasks), P2_METHODS, seed=seed)  # the vectors themselves are reloaded per method
    train = time.perf_counter() - start
    results = {key: run_method(wb, ev, key, settings["alphas"], negation=control is not None)
               for key in TABLE1_METHODS}
    return SeedRun(seed, wb, ev, results, zero_shot_summary(ev), [dict(r, seed=seed) for r in log], train)


def run_seeds(profile: "Profile", tasks: Sequence[str], control: str | None, settings: Mapping[str, Any],
              seeds: Sequence[int], data_dir: str | None = None) -> list[SeedRun]:
    """:func:`run_seed` for each seed, in order (the first is the one Table 5 uses)."""
    if not seeds:
        raise ValueError("run_seeds needs at least one seed")
    return [run_seed(profile, tasks, control, settings, s, data_dir) for s in seeds]


# ---------------------------------------------------------------------------------------------------------------
# tables: the mean over seeds
# ---------------------------------------------------------------------------------------------------------------
def mean_rows(per_seed: Sequence[Sequence[Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """Result rows of several seeds (same methods and metrics, in the same order) → one row per (method, metric):
    ``value`` = mean over seeds, ``std`` = sample std over seeds (None for one seed), ``seeds`` = their count."""
    if not per_seed:
        raise ValueError("mean_rows needs the rows of at least one seed")
    out = []
    for i, row in enumerate(per_seed[0]):
        vals = [rows[i]["value"] for rows in per_seed]
        if any(rows[i]["method"] != row["method"] or rows[i]["metric"] != row["metric"] for rows in per_seed):
            raise ValueError(f"seed rows differ at row {i} ({row['method']}, {row['metric']})")
        known = [float(v) for v in vals if v is not None]
        merged = dict(row, value=float(np.mean(known)) if known else None, seeds=len(per_seed),
                      std=float(np.std(known, ddof=1)) if len(known) > 1 else None)
        if "alpha" in row:
            merged["alpha"] = float(np.mean([rows[i]["alpha"] for rows in per_seed]))
        out.append(merged)
    return out


def table1(runs: Sequence[SeedRun], paper_model: str) -> list[dict[str, Any]]:
    """P2 Table 1 rows, mean (std) over seeds."""
    return mean_rows([table1_rows(r.results, r.zero, paper_model) for r in runs])


def table2(runs: Sequence[SeedRun], paper_model: str) -> list[dict[str, Any]]:
    """P2 Table 2 rows, mean (std) over seeds."""
    return mean_rows([table2_rows(r.results, r.zero, paper_model) for r in runs])


def single_task_table(runs: Sequence[SeedRun]) -> pd.DataFrame:
    """Single-task test accuracy (%, α = 1) per method × task and its mean, averaged over seeds."""
    frames = []
    for r in runs:
        df = pd.DataFrame({ARITHMETIC_METHODS[k].label: {t: 100 * v["test"] for t, v in res["addition"]["single"].items()}
                           for k, res in r.results.items()}).T
        df.loc[ZERO_SHOT_LABEL] = {t: 100 * v for t, v in r.zero["test"].items()}
        frames.append(df)
    out = sum(frames) / len(frames)
    out["mean"] = out.mean(axis=1)
    return out


def single_task_means(runs: Sequence[SeedRun], key: str = "talos") -> dict[str, float]:
    """``{task: mean over seeds of the method's single-task test accuracy}`` (fractions), for the gates."""
    return {t: float(np.mean([r.results[key]["addition"]["single"][t]["test"] for r in runs])) for t in runs[0].ev.tasks}


def sweep_frame(runs: Sequence[SeedRun]) -> pd.DataFrame:
    """One row per seed × method × α: mean normalized validation accuracy of the addition sweep, and α*."""
    return pd.DataFrame([{"seed": run.seed, "method": r["label"], "alpha": s["alpha"], "alpha*": r["addition"]["alpha"],
                          "normalized validation accuracy": 100 * s["avg_normalized"]}
                         for run in runs for r in run.results.values() for s in r["addition"]["sweep"]])


def negation_frame(runs: Sequence[SeedRun]) -> pd.DataFrame:
    """Mean target and control test accuracy (%) over seeds per method, and the zero-shot model."""
    rows = [{"method": r["label"], "target accuracy": 100 * r["negation"]["target"],
             "control accuracy": 100 * r["negation"]["control"]} for run in runs for r in run.results.values()]
    rows += [{"method": ZERO_SHOT_LABEL, "target accuracy": 100 * run.zero["abs"],
              "control accuracy": 100 * run.zero["control"]} for run in runs]
    return pd.DataFrame(rows).groupby("method", sort=False, as_index=False).mean()


def training_log(runs: Sequence[SeedRun]) -> pd.DataFrame:
    """Trainable entries (mean over tasks) and training seconds (sum over tasks and seeds) per fine-tuning method."""
    log = pd.DataFrame([row for r in runs for row in r.log]).assign(method=lambda d: d.method.map(
        lambda m: METHODS[m].label))
    return log.groupby("method", sort=False).agg(trainable=("trainable", "mean"), train_seconds=("train_seconds", "sum"))


# ---------------------------------------------------------------------------------------------------------------
# per-example correctness over seeds
# ---------------------------------------------------------------------------------------------------------------
class Correctness:
    """Per-example 0/1 test correctness of every reported number: ``data[(method label, kind)][task]`` is a
    ``[seeds, examples]`` array (kind: ``single`` = single-task at α = 1, ``addition`` = the merged model at α*,
    ``target`` / ``control`` = negation of the task at its α*).  Every method shares the test examples (the control
    arrays: the control task's, whose size may differ from the task's)."""

    def __init__(self, data: Mapping[tuple[str, str], Mapping[str, Any]], tasks: Sequence[str]) -> None:
        self.tasks = list(tasks)
        self.data = {k: {t: np.atleast_2d(np.asarray(v[t], dtype=float)) for t in self.tasks} for k, v in data.items()}
        for (label, kind), by_task in self.data.items():
            if kind not in KINDS:
                raise ValueError(f"unknown correctness kind {kind!r} for {label}; use one of {KINDS}")
        # the control arrays score the control task's test examples (their own size), the others the task's
        shapes: dict[str, set] = {}
        for (_, kind), by_task in self.data.items():
            for t in self.tasks:
                shapes.setdefault(f"{t} (control)" if kind == "control" else t, set()).add(by_task[t].shape)
        bad = {t: s for t, s in shapes.items() if len(s) > 1}
        if bad:
            raise ValueError(f"correctness arrays differ in shape (seeds × examples) across methods: {bad}")

    @classmethod
    def from_runs(cls, runs: Sequence[SeedRun]) -> "Correctness":
        """Gather the vectors that :func:`repro.p2.arithmetic.run_method` stored, seed by seed."""
        tasks = runs[0].ev.tasks
        data: dict[tuple[str, str], dict[str, list]] = {}
        for key in runs[0].results:
            label = ARITHMETIC_METHODS[key].label
            for kind in KINDS:
                if kind in ("target", "control") and "negation" not in runs[0].results[key]:
                    continue
                data[(label, kind)] = {t: [_vector(run.results[key], kind, t) for run in runs] for t in tasks}
        return cls(data, tasks)

    def has(self, label: str, kind: str) -> bool:
        return (label, kind) in self.data

    def stacked(self, label: str, kind: str) -> tuple[np.ndarray, np.ndarray]:
        """``(correctness [seeds, examples of all tasks], task index of each column, same shape)``."""
        if (label, kind) not in self.data:
            raise KeyError(f"no {kind} correctness for {label!r}; have {sorted(self.data)}")
        by_task = self.data[(label, kind)]
        x = np.concatenate([by_task[t] for t in self.tasks], axis=1)
        ids = np.concatenate([np.full(by_task[t].shape, i, dtype=float) for i, t in enumerate(self.tasks)], axis=1)
        return x, ids

    @property
    def n_seeds(self) -> int:
        return next(iter(self.data.values()))[self.tasks[0]].shape[0]


def _vector(result: Mapping[str, Any], kind: str, task: str) -> list[int]:
    if kind == "single":
        v = result["addition"]["single"][task].get("test_correct")
    elif kind == "addition":
        v = result["addition"].get("test_correct", {}).get(task)
    else:
        v = result["negation"]["per_task"][task].get(f"{kind}_correct")
    if v is None:
        raise KeyError(f"result of {result.get('method')!r} has no per-example {kind} correctness for {task}: it was "
                       "computed before run_method kept them; re-run it (its cache key changed)")
    return v


# ---------------------------------------------------------------------------------------------------------------
# P2 Table 5: per-example correctness of the AdaMerging models (first seed)
# ---------------------------------------------------------------------------------------------------------------
ADA_SCHEMES: tuple[str, ...] = ("adamerging-task", "adamerging-layer")


def adamerging_correct(wb: "Workbench", ev: Evaluator, source: str, scheme: str, alphas: Sequence[float],
                       adamerging_steps: int = 10, adamerging_lr: float = 0.05, adamerging_batch: int = 8,
                       ) -> dict[str, Any]:
    """The P2 Table 5 AdaMerging model of :func:`repro.p2.arithmetic.merging_scheme` (the same cached result, not
    re-learned): ``{"test": {t: acc}, "test_correct": {t: per-example 0/1}}``."""
    if scheme not in ADA_SCHEMES:
        raise ValueError(f"adamerging_correct needs one of {ADA_SCHEMES}, got {scheme!r}")
    res = merging_scheme(wb, ev, source, scheme, alphas, adamerging_steps=adamerging_steps,
                         adamerging_lr=adamerging_lr, adamerging_batch=adamerging_batch)
    return {"test": res["test"], "test_correct": res["test_correct"]}


def table5_correctness(ex: Correctness, ada: Mapping[str, Mapping[str, Any]], source: str = "TaLoS") -> Correctness:
    """First-seed correctness for the Table 5 AdaMerging claim: ``source``'s task addition and single-task vectors
    (seed 0 of ``ex``) and each ``ada[label]`` ({task: per-example 0/1}) as ``addition`` with ``source``'s
    single-task correctness as its normalizer (Table 5 normalizes by the source method's single-task accuracy)."""
    first = {k: {t: v[t][:1] for t in ex.tasks} for k, v in ex.data.items() if k[0] == source}
    single = first[(source, "single")]
    for label, by_task in ada.items():
        first[(label, "addition")] = {t: np.atleast_2d(np.asarray(by_task[t], dtype=float)) for t in ex.tasks}
        first[(label, "single")] = single
    return Correctness(first, ex.tasks)


def table5_adamerging_correctness(wb: "Workbench", ev: Evaluator, ex: Correctness, alphas: Sequence[float],
                                  adamerging_steps: int, source: str = "talos") -> Correctness:
    """:func:`table5_correctness` of ``source``'s task- and layer-wise AdaMerging models
    (:func:`adamerging_correct`)."""
    ada = {TABLE5_LABELS[(source, s)]: adamerging_correct(wb, ev, source, s, alphas,
                                                          adamerging_steps=adamerging_steps)["test_correct"]
           for s in ADA_SCHEMES}
    return table5_correctness(ex, ada, ARITHMETIC_METHODS[source].label)


__all__ = ["ADA_SCHEMES", "Correctness", "KINDS", "SeedRun", "adamerging_correct", "mean_rows", "negation_frame",
           "run_seed", "run_seeds", "single_task_means", "single_task_table", "sweep_frame", "table1", "table2",
           "table5_adamerging_correctness", "table5_correctness", "training_log"]
