"""P2 Tables 1 and 2 over several seeds: the per-seed protocol of :mod:`repro.p2.arithmetic`, run once per seed,
reported as the mean (and sample std) over seeds, with the per-example test correctness of every reported number
gathered as ``[seeds, examples]`` arrays for the paired bootstrap of :mod:`repro.p2.task_arithmetic.claims`.

Every artifact comes from the chapter's declared jobs (``repro.p2.task_arithmetic.jobs``, obtained through a
:class:`repro.jobs.Artifacts`: the zoo's runs by :mod:`repro.p2.zoo`, the Table 1-2 results by role
``table1-2``, the Table 5 merges by role ``table5``); this module groups and evaluates them.

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

from repro.p2.arithmetic import (ARITHMETIC_METHODS, TABLE5_LABELS, ZERO_SHOT_LABEL, table1_rows, table2_rows,
                                 zero_shot_summary)
from repro.p2.evaluator import Evaluator
from repro.p2.methods import METHODS, P2_METHODS
from repro.p2.task_arithmetic.jobs import TABLE5_ROLE, TABLE12_ROLE
from repro.p2.zoo import method_run

if TYPE_CHECKING:  # pragma: no cover
    from repro.jobs import Artifacts
    from repro.workbench import Workbench

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


def seed_evaluator(jobs: "Artifacts", seed: int) -> Evaluator:
    """The evaluation sets of ``seed``'s declared Table 1-2 jobs on ``jobs.wb``: the sets their driver
    (:func:`repro.p2.arithmetic.run_method`) scores, built from the same kwargs; nothing is trained."""
    specs = jobs.select(kind="arithmetic", role=TABLE12_ROLE, seed=seed)
    if not specs:
        raise ValueError(f"no Table 1-2 job declared for seed {seed}")
    k = specs[0].kwargs
    return Evaluator(jobs.wb, k["tasks"], k["control"], k["n_val"], k["n_test"], seed=seed)


def run_seed(jobs: "Artifacts", seed: int) -> SeedRun:
    """One seed of Tables 1-2 from its declared jobs (``jobs`` on that seed's Workbench): every zoo method ×
    task (trained once, then loaded), then each Table-1 method's cached protocol result."""
    ev = seed_evaluator(jobs, seed)
    log: list[dict[str, Any]] = []
    start = time.perf_counter()
    for m in P2_METHODS:
        for t in ev.tasks:
            t0 = time.perf_counter()
            _, meta = method_run(jobs, t, m, seed)
            info = meta.get("train", {})
            log.append({"method": m, "task": t, "trainable": info.get("trainable_count"), "seed": seed,
                        "train_seconds": info.get("seconds"), "wall": time.perf_counter() - t0})
    train = time.perf_counter() - start
    results = {spec.kwargs["key"]: jobs.artifact(spec)
               for spec in jobs.select(kind="arithmetic", role=TABLE12_ROLE, seed=seed)}
    return SeedRun(seed, jobs.wb, ev, results, zero_shot_summary(ev), log, train)


def evaluation_totals(runs: Sequence[SeedRun]) -> tuple[float, int]:
    """(seconds, examples) evaluated over the seeds: the protocol results' own (when they were computed) and this
    notebook's zero-shot evaluations."""
    secs = sum(r.ev.seconds + sum(float(x.get("eval_seconds", 0.0)) for x in r.results.values()) for r in runs)
    n = sum(r.ev.evaluated + sum(int(x.get("examples_evaluated", 0)) for x in r.results.values()) for r in runs)
    return secs, n


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
# P2 Table 5: the first seed's merges and the per-example correctness of its AdaMerging models
# ---------------------------------------------------------------------------------------------------------------
ADA_SCHEMES: tuple[str, ...] = ("adamerging-task", "adamerging-layer")


def table5_merges(jobs: "Artifacts", seed: int) -> dict[tuple[str, str], dict[str, Any]]:
    """``{(source, scheme): result}`` of the declared Table 5 merges of ``seed``
    (:func:`repro.p2.arithmetic.merging_scheme`, each cached)."""
    return {(s.kwargs["source"], s.kwargs["scheme"]): jobs.artifact(s)
            for s in jobs.select(kind="merge", role=TABLE5_ROLE, seed=seed)}


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


def table5_adamerging_correctness(merges: Mapping[tuple[str, str], Mapping[str, Any]], ex: Correctness,
                                  source: str = "talos") -> Correctness:
    """:func:`table5_correctness` of ``source``'s task- and layer-wise AdaMerging models, from the per-example
    test correctness their merge results keep (:func:`table5_merges`)."""
    ada = {TABLE5_LABELS[(source, s)]: merges[(source, s)]["test_correct"] for s in ADA_SCHEMES}
    return table5_correctness(ex, ada, ARITHMETIC_METHODS[source].label)


__all__ = ["ADA_SCHEMES", "Correctness", "KINDS", "SeedRun", "TABLE12_ROLE", "TABLE5_ROLE", "evaluation_totals",
           "mean_rows", "negation_frame", "run_seed", "seed_evaluator", "single_task_means", "single_task_table",
           "sweep_frame", "table1", "table2", "table5_adamerging_correctness", "table5_correctness", "table5_merges",
           "training_log"]
