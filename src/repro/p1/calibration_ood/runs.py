"""The models and runs of the P1 §4 chapter (``notebooks/p1_calibration_ood.md``): Table 3 / Fig. 7 OOD accuracy,
Tables 6-7 (grafting vs LoRA and adapters) and the App. D train-test gaps.

:class:`ChapterModels` gives the chapter's declared models of one source task — FT, the learned graft on
γ_base = top-``plan.base`` (and the sweep's other sizes), the graft region re-trained from θ_pre, BitFit, LoRA and
adapters — on the chapter's seed, obtained through its jobs (:class:`repro.jobcall.ChapterJobs`); the functions
below score them, keep the per-example results the claims bootstrap (:class:`OodRuns`, :class:`WiseRuns`,
:class:`PeftRuns`, :class:`GapRuns`) and build the chapter's table rows.
Table 2's ECE columns over several seeds are :func:`repro.p1.calibration.ece_table`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np
import torch

from repro.core.evaluation import score
from repro.core.masks import Mask
from repro.jobs import SKIPPED, ref
from repro.p1.calibration import per_example
from repro.p1.calibration_ood.plan import CalibrationPlan, CalibrationRecipes
from repro.p1.generalization import bound_terms, gap_from_splits, split_metrics
from repro.p1.ood import PRINTED_NAME, ood_correct, wise_correct, wise_rows
from repro.p1.peft_baselines import adapter_applied, adapter_params, budget_pct, lora_params
from repro.report.comparison import attach_printed
from repro.report.results import pct

if TYPE_CHECKING:  # pragma: no cover
    from repro.jobs import Artifacts, JobSpec
    from repro.workbench import Workbench

Overrides = Mapping[str, torch.Tensor] | None


class ChapterModels:
    """FT, graft (and the sweep's other sizes), re-trained graft and BitFit of one source task at ``seed``: the
    chapter's declared jobs (:mod:`repro.p1.calibration_ood.jobs`), found by kind and kwargs and obtained through
    ``jobs``."""

    def __init__(self, jobs: "Artifacts", plan: CalibrationPlan, recipes: CalibrationRecipes, seed: int) -> None:
        self.jobs, self.wb, self.plan, self.recipes, self.seed = jobs, jobs.wb, plan, recipes, seed
        self.k = plan.shots(jobs.wb.profile)  #: the k-shot every model of the chapter trained at

    def graft_spec(self, task: str, base: float | None = None, seed: int | None = None) -> "JobSpec":
        """The declared graft of ``task`` on γ_base = top-``base`` (None: the plan's base, the profile's graft recipe;
        the sweep's other sizes: ``plan.sweep_graft``) at ``seed`` (None: the chapter's)."""
        return self.jobs.one(kind="graft", task=task, seed=self.seed if seed is None else seed, k=self.k,
                             base=float(self.plan.base if base is None else base), scope="graftable")

    def ft(self, task: str) -> dict[str, torch.Tensor]:
        """τ of the profile's FT recipe (the graft's upstream job)."""
        return self.jobs.value(self.jobs.deps(self.graft_spec(task), "finetune")[0])

    def graft(self, task: str, base: float | None = None) -> Mask:
        """The learned graft on γ_base = top-``base`` (:meth:`graft_spec`)."""
        return self.jobs.value(self.graft_spec(task, base))

    def retrained(self, task: str) -> Overrides:
        """Overrides of the model re-trained on the graft region from θ_pre (None: an empty region, the pre-trained
        model)."""
        out = self.jobs.artifact(self.jobs.one(kind="finetune", trainable=ref(self.graft_spec(task))))
        return None if out is SKIPPED else self.wb.overrides(out[0])

    def bitfit(self, task: str) -> Overrides:
        """Overrides of BitFit: all biases of the transformer blocks, the chapter's BitFit recipe."""
        spec = self.jobs.one(kind="finetune", tasks=[task], seed=self.seed, k=self.k, trainable="bias")
        return self.wb.overrides(self.jobs.value(spec))

    def peft(self, task: str, spec: str) -> "JobSpec":
        """The declared LoRA / adapter run of ``task`` for the plan's PEFT ``spec`` (its role, e.g. "lora:1")."""
        return self.jobs.one(kind="adapter", role=spec, task=task, k=self.k)

    def n_params(self, scope: str) -> int:
        """Number of parameters in a workbench scope ("graftable", "bias")."""
        return sum(self.wb.pre[n].numel() for n in self.wb.names(scope))

    def ood_models(self, source: str) -> dict[str, tuple[Overrides, float]]:
        """Table 3 / Fig. 7 models of ``source``: label → (overrides, size in % of the block parameters)."""
        wb, g = self.wb, self.graft(source)
        models = {"FT": (wb.overrides(self.ft(source)), 100.0),
                  "Grafting": (wb.overrides(self.ft(source), 1.0, g), 100.0 * g.density()),
                  "Graft re-training": (self.retrained(source), 100.0 * g.density()),
                  "BitFit": (self.bitfit(source), budget_pct(wb, self.n_params("bias")))}
        for b in (self.plan.sweep_bases if source in self.plan.sweep_sources else ()):
            gb = self.graft(source, b)
            models[f"Grafting@{b:g}"] = (wb.overrides(self.ft(source), 1.0, gb), 100.0 * gb.density())
        return models


@dataclass
class OodRuns:
    """P1 Table 3 / Fig. 7 runs: ``rows`` (one per source, target and model: accuracy, and the ID ECE) and the
    per-example arrays behind them, for the claims' paired bootstraps: ``correct[(source, target, label)]`` (0/1 on
    the same ``plan.n_eval`` examples for every model of a source) and ``id_scores[(source, label)]`` = per-example
    ``conf`` / ``correct`` on the full ID test set (the ECE)."""

    rows: list[dict] = field(default_factory=list)
    correct: dict[tuple[str, str, str], np.ndarray] = field(default_factory=dict)
    id_scores: dict[tuple[str, str], dict[str, np.ndarray]] = field(default_factory=dict)


def ood_runs(models: ChapterModels) -> OodRuns:
    """P1 Table 3 / Fig. 7: ID and OOD accuracy of every model of every source (``plan.n_eval`` examples per
    set), and the ID ECE on the full test set (Table 1's calibration columns; not for the sweep's extra sizes)."""
    wb, plan, out = models.wb, models.plan, OodRuns()
    for s in plan.ood_sources:
        for m, (ov, sp) in models.ood_models(s).items():
            correct = ood_correct(wb, s, plan.targets(s), ov, limit=plan.n_eval)
            id_ece = None
            if "@" not in m:
                pred = wb.predict(s, "test", ov)
                out.id_scores[(s, m)] = per_example(pred)
                id_ece = score(pred, wb.model.specs[s].metric)["ece"]  # (the spec is loaded with the task)
            for t, c in correct.items():
                out.correct[(s, t, m)] = c
                out.rows.append({"source": s, "target": t, "split": "ID" if t == s else "OOD",
                                 "shown": plan.target_label(s, t), "paper_target": plan.paper_target(s, t),
                                 "method": m.split("@")[0], "label": m, "sparsity": sp, "acc": float(c.mean()),
                                 "ece": id_ece if t == s else None})
    return out


def table3_rows(runs: list[dict]) -> list[dict]:
    """``p1-table3`` rows (percent): OOD accuracy of grafting, re-training and BitFit (and FT), printed cells
    attached."""
    def shown(r: Mapping[str, Any]) -> str:  # rows of ood_runs carry it; the paper's name otherwise
        return r.get("shown") or PRINTED_NAME.get(r["target"], r["target"])

    printed = {shown(r): PRINTED_NAME.get(r.get("paper_target", r["target"]), r.get("paper_target", r["target"]))
               for r in runs}
    rows = [{"task": shown(r), "method": r["method"], "sparsity": r["sparsity"],
             "metric": "acc", "value": pct(r["acc"]), "std": None, "paper": None, "id_task": r["source"]}
            for r in runs if r["split"] == "OOD" and r["label"] in ("FT", "Grafting", "Graft re-training", "BitFit")]
    return attach_printed(rows, "p1", 3, lambda r: None if r["method"] == "FT" else
                          {"id_task": r["id_task"], "ood_task": printed[r["task"]], "method": r["method"],
                           "metric": "acc"})


@dataclass
class WiseRuns:
    """P1 Fig. 7e-f: ``rows`` (:func:`repro.p1.ood.wise_rows`) and ``correct[(source, method, alpha)]`` = {source
    (ID) / target: 0/1 per example}, the same ``plan.n_eval`` examples for every α and both curves of a source."""

    rows: list[dict] = field(default_factory=list)
    correct: dict[tuple[str, str, float], dict[str, np.ndarray]] = field(default_factory=dict)


def wise_runs(models: ChapterModels) -> WiseRuns:
    """WiSE-FT and WiSE-Graft curves of every sweep source on ``plan.wise_alphas`` (P1 Fig. 7e-f)."""
    wb, plan, out = models.wb, models.plan, WiseRuns()
    for s in plan.sweep_sources:
        targets = plan.targets(s)
        for label, mask in (("WiSE-FT", None), ("WiSE-Graft", models.graft(s))):
            correct = wise_correct(wb, s, targets, models.ft(s), list(plan.wise_alphas), mask=mask, limit=plan.n_eval)
            out.rows += wise_rows(correct, s, targets, label)
            out.correct.update({(s, label, a): c for a, c in correct.items()})
    return out


@dataclass
class PeftRuns:
    """P1 Tables 6-7: ``rows`` (one per model: ``source, method, label, rank, params, sparsity, id_acc, id_ece``,
    ``ood:<target>``) and ``scores[(source, label)]`` = per-example ``conf`` / ``correct`` on the full ID test set
    and ``ood:<target>`` 0/1 on the ``plan.n_eval`` OOD examples, the same examples for every model of a source."""

    rows: list[dict] = field(default_factory=list)
    scores: dict[tuple[str, str], dict[str, np.ndarray]] = field(default_factory=dict)


def _record(models: ChapterModels, s: str, method: str, label: str, rank: int | None, params: int,
            ov: Overrides = None, sparsity: float | None = None) -> tuple[dict, dict[str, np.ndarray]]:
    """One Table 6-7 row (ID accuracy and ECE on the full test set, OOD accuracy per target, the parameter count)
    and its per-example scores."""
    wb = models.wb
    pred = wb.predict(s, "test", ov)
    ece = score(pred, wb.model.specs[s].metric)
    ood = {t: c for t, c in ood_correct(wb, s, models.plan.targets(s), ov, limit=models.plan.n_eval).items()
           if t != s}
    row = {"source": s, "method": method, "label": label, "rank": rank, "params": int(params),
           "sparsity": budget_pct(wb, params) if sparsity is None else sparsity,
           "id_acc": ece["value"], "id_ece": ece["ece"], **{f"ood:{t}": float(c.mean()) for t, c in ood.items()}}
    return row, {**per_example(pred), **{f"ood:{t}": c for t, c in ood.items()}}


def _peft_record(models: ChapterModels, s: str, spec: str) -> tuple[dict, dict[str, np.ndarray]]:
    wb = models.wb
    kind, size = spec.split(":")[0], int(spec.split(":")[1])
    weights = models.jobs.value(models.peft(s, spec))
    if kind == "lora":
        return _record(models, s, "LoRA", spec, size, lora_params(wb, size), wb.overrides(weights))
    with adapter_applied(wb, kind, size, weights):
        return _record(models, s, f"Adapter ({kind.capitalize()})", spec, size, adapter_params(wb, kind, size))


def peft_runs(models: ChapterModels) -> PeftRuns:
    """P1 Tables 6-7: per sweep source, the grafts of every size (label ``Grafting@<γ_base>``), the 100 % graft
    (= FT, ``Grafting@100%``) and every PEFT run (label = its plan spec, e.g. ``lora:1``)."""
    wb, plan, out = models.wb, models.plan, PeftRuns()
    for s in plan.sweep_sources:
        records = []
        for b in (plan.base, *plan.sweep_bases):
            g = models.graft(s, b)
            records.append(_record(models, s, "Grafting", f"Grafting@{b:g}", None, g.count(),
                                   wb.overrides(models.ft(s), 1.0, g), 100.0 * g.density()))
        records.append(_record(models, s, "Grafting", "Grafting@100%", None, models.n_params("graftable"),
                               wb.overrides(models.ft(s)), 100.0))
        records += [_peft_record(models, s, spec) for spec in plan.peft]
        for row, sc in records:
            out.rows.append(row)
            out.scores[(s, row["label"])] = sc
    return out


def _printed_key(r: Mapping[str, Any], **extra: Any) -> dict | None:
    """Our run's counterpart in the printed tables: same method and rank (PEFT) / nearest graft size (None for an
    empty graft region, which no printed size stands for)."""
    if not r["rank"] and not r["sparsity"] > 0:
        return None
    near = min((0.01, 0.05, 0.1, 1, 100), key=lambda p: abs(math.log10(p / r["sparsity"])))
    return {"method": r["method"], **extra, **({"rank": r["rank"]} if r["rank"] else {"sparsity": near})}


def peft_tables(wb: "Workbench", runs: list[dict]) -> tuple[list[dict], list[dict]]:
    """``p1-table6`` (ID metric and ECE) and ``p1-table7`` (ID and OOD accuracy) rows in percent, printed cells
    attached."""
    def key(r: Mapping[str, Any]) -> dict:
        return {"method": r["method"], "sparsity": r["sparsity"], "std": None, "paper": None, "rank": r["rank"]}

    t6 = [{"task": r["source"], **key(r), "metric": m, "value": pct(r[f])} for r in runs
          for m, f in ((wb.model.specs[r["source"]].metric, "id_acc"), ("ece", "id_ece"))]
    t7 = [{"task": name, **key(r), "metric": "acc", "value": pct(v), "id_task": r["source"], "split": split}
          for r in runs for name, v, split in ((r["source"], r["id_acc"], "ID"), *(
              (PRINTED_NAME.get(k[4:], k[4:]), v, "OOD") for k, v in r.items() if k.startswith("ood:")))]
    t6 = attach_printed(t6, "p1", 6, lambda r: _printed_key(r, task=r["task"], metric=r["metric"]))
    t7 = attach_printed(t7, "p1", 7, lambda r: _printed_key(r, id_task=r["id_task"], eval_task=r["task"]))
    return t6, t7


@dataclass
class GapRuns:
    """P1 §4.3 / App. D: ``rows`` (train-test gaps per task and model), ``bounds`` (Theorem D.2 terms) and
    ``correct[(task, method, split)]`` = 0/1 per example of the train and test splits behind each gap."""

    rows: list[dict] = field(default_factory=list)
    bounds: list[dict] = field(default_factory=list)
    correct: dict[tuple[str, str, str], np.ndarray] = field(default_factory=dict)


def gap_runs(models: ChapterModels) -> GapRuns:
    """P1 §4.3 / App. D: train-test gaps of FT, graft, re-trained graft and BitFit per task (with the per-example
    correctness on both splits), and the terms of Theorem D.2 for the re-trained graft and BitFit."""
    wb, out = models.wb, GapRuns()
    d_total, n_bias = models.n_params("graftable"), models.n_params("bias")
    for t in models.plan.gap_tasks:
        g = models.graft(t)
        ovs = {"FT": wb.overrides(models.ft(t)), "Grafting": wb.overrides(models.ft(t), 1.0, g),
               "Graft re-training": models.retrained(t), "BitFit": models.bitfit(t)}
        gaps = {}
        for m, ov in ovs.items():
            splits = {sp: split_metrics(wb, t, ov, sp, k=models.k) for sp in ("train", "test")}
            gaps[m] = gap_from_splits(splits["train"], splits["test"])
            out.correct.update({(t, m, sp): v["correct"] for sp, v in splits.items()})
        out.rows += [{"task": t, "method": m, **v} for m, v in gaps.items()]
        out.bounds += [{"task": t, "method": m, **bound_terms(n, d_total, gaps[m]["n_train"], gaps[m]["test_loss"],
                                                             gaps["FT"]["test_loss"])}
                       for m, n in (("Graft re-training", g.count()), ("BitFit", n_bias))]
    return out


def gap_table_rows(gap_rows: list[dict]) -> list[dict]:
    """``p1-table1-gap`` rows: the train-test accuracy gap in points per task and model."""
    return [{"task": r["task"], "method": r["method"], "sparsity": None, "metric": "train_test_gap",
             "value": pct(r["gap_acc"]), "std": None, "paper": None, "unit": "pp", "n_train": r["n_train"]}
            for r in gap_rows]


__all__ = ["ChapterModels", "GapRuns", "OodRuns", "PeftRuns", "WiseRuns", "gap_runs", "gap_table_rows", "ood_runs",
           "peft_runs", "peft_tables", "table3_rows", "wise_runs"]
