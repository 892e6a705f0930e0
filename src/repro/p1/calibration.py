"""P1 §4.1: calibration of fine-tuned vs grafted models (Table 2's ECE columns, Fig. 6).

ECE and the confidence histogram are :mod:`repro.core.metrics` (equal-width bins, M = 10, Guo et al. 2017 as in
P1 App. A.3).  Here: scoring several models of one task against the fine-tuned reference, the relative ECE
reduction of the abstract's "40-90%" claim, and the claim's condition ("sparsity levels that cause < 5%
reduction in accuracy").

:func:`ece_table` runs Table 2's ECE columns for several seeds on the chapter's declared FT and graft jobs (the
localization chapter's artifacts), keeping per-example confidence and correctness of both models on the same test
examples, so the claims (:mod:`repro.p1.calibration_ood.claims`) can bootstrap the ECE reduction over examples and
seeds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np
import torch

from repro.core.evaluation import Predictions, score
from repro.core.metrics import agreement, confidence_histogram
from repro.report.verdicts import N_RESAMPLES, Evidence, paired_bootstrap, verdict_from_ci

if TYPE_CHECKING:  # pragma: no cover
    from repro.jobs import Artifacts, JobSpec
    from repro.workbench import Workbench


def compare_models(wb: "Workbench", task: str, models: Mapping[str, Mapping[str, torch.Tensor] | None],
                   reference: str = "FT", split: str = "test", n_bins: int = 10, seed: int | None = None,
                   k: int | None = None) -> tuple[list[dict], list[dict], dict[str, Predictions]]:
    """Score each model (name → overrides) on ``task``: rows ``task, method, value, acc, f1, ece, agreement``
    (fractions; agreement with the ``reference`` model's predictions), Fig. 6 histogram rows
    ``task, method, bin_lo, bin_hi, fraction``, and the predictions (``seed``: the data seed, None = ``wb.seed``;
    ``k``: the k-shot split, None = the profile's)."""
    kw = {**({} if seed is None else {"seed": seed}), **({"k": k} if k else {})}
    preds = {m: wb.predict(task, split, ov, **kw) for m, ov in models.items()}
    if reference not in preds:
        raise KeyError(f"reference model {reference!r} not among {sorted(preds)}")
    metric = wb.model.specs[task].metric
    rows, hist = [], []
    for m, p in preds.items():
        s = score(p, metric, n_bins=n_bins)
        rows.append({"task": task, "method": m, **s, "agreement": agreement(p.preds, preds[reference].preds)})
        hist += [{"task": task, "method": m, **h} for h in confidence_histogram(p.probs, n_bins)]
    return rows, hist, preds


def ece_reduction(ece_ft: float, ece_graft: float) -> float:
    """Relative ECE reduction (ECE_FT − ECE_graft) / ECE_FT (the abstract's "40-90% error reduction")."""
    return float("nan") if ece_ft <= 0 else (ece_ft - ece_graft) / ece_ft


def reduction_rows(rows: Sequence[Mapping], graft: str = "Graft", reference: str = "FT",
                   max_drop: float = 0.05) -> list[dict]:
    """Per task: the graft's relative ECE reduction and whether it costs < ``max_drop`` (relative) of the FT
    metric, the condition under which P1 §4.1 states the 40-90% range."""
    by = {(r["task"], r["method"]): r for r in rows}
    out = []
    for task in dict.fromkeys(r["task"] for r in rows):
        ft, gr = by.get((task, reference)), by.get((task, graft))
        if ft is None or gr is None:
            continue
        rel_drop = (ft["value"] - gr["value"]) / ft["value"] if ft["value"] else float("nan")
        out.append({"task": task, "ece_ft": ft["ece"], "ece_graft": gr["ece"],
                    "reduction": ece_reduction(ft["ece"], gr["ece"]), "metric_ft": ft["value"],
                    "metric_graft": gr["value"], "relative_drop": rel_drop, "within_5pct": rel_drop < max_drop})
    return out


# --------------------------------------------------------------------------------------------------------
# per-example calibration data over seeds (Table 2 ECE columns with a CI)
# --------------------------------------------------------------------------------------------------------
def _bin_index(conf: np.ndarray, n_bins: int) -> np.ndarray:
    """The bins of :func:`repro.core.metrics.expected_calibration_error`: ceil(conf·M) − 1, clamped (float32)."""
    c = np.asarray(conf, dtype=np.float32)
    return np.clip(np.ceil(c * np.float32(n_bins)) - 1, 0, n_bins - 1).astype(np.int64)


def ece_from_confidence(conf: Any, correct: Any, n_bins: int = 10) -> float:
    """ECE (P1 App. A.3: Σ_b |B_b|/N · |acc(B_b) − conf(B_b)|) from per-example top probability and 0/1
    correctness (any shape; flattened, so several seeds are pooled); the bins of the core metric."""
    c = np.asarray(conf, dtype=float).ravel()
    k = np.asarray(correct, dtype=float).ravel()
    if c.shape != k.shape or c.size == 0:
        raise ValueError(f"confidence and correctness must be non-empty and of one shape, got {c.shape} and {k.shape}")
    idx = _bin_index(c, n_bins)
    diff = np.bincount(idx, weights=k, minlength=n_bins) - np.bincount(idx, weights=c, minlength=n_bins)
    return float(np.abs(diff).sum() / c.size)


def confidence_fractions(conf: Any, n_bins: int = 10) -> list[dict[str, float]]:
    """Fig. 6 rows {bin_lo, bin_hi, fraction} of per-example confidences (pooled over seeds)."""
    c = np.asarray(conf, dtype=float).ravel()
    counts = np.bincount(_bin_index(c, n_bins), minlength=n_bins) / max(c.size, 1)
    return [{"bin_lo": b / n_bins, "bin_hi": (b + 1) / n_bins, "fraction": float(counts[b])} for b in range(n_bins)]


def in_top_bin(conf: Any, n_bins: int = 10) -> np.ndarray:
    """0/1 per example (shape kept): the confidence lies in the top bin, > 1 − 1/M (Fig. 6's "highly confident")."""
    return (_bin_index(conf, n_bins) == n_bins - 1).astype(np.uint8)


def per_example(pred: Predictions) -> dict[str, np.ndarray]:
    """Per-example ``conf`` (top probability) and ``correct`` (0/1) of one model's predictions."""
    conf = pred.probs.max(dim=-1).values
    return {"conf": conf.float().cpu().numpy(), "correct": pred.correct()}


@dataclass
class EceTable:
    """P1 Table 2's ECE columns over seeds: ``runs`` (one score row per task, seed and model, fractions),
    ``per_example[(task, seed)]`` = ``conf_ft, correct_ft, conf_graft, correct_graft, agree`` on the same test
    examples, and :meth:`summary` / :meth:`hist` / :meth:`reduction` derived from them."""

    runs: list[dict] = field(default_factory=list)
    per_example: dict[tuple[str, int], dict[str, np.ndarray]] = field(default_factory=dict)
    n_bins: int = 10

    def summary(self) -> list[dict]:
        """Per task and model: the mean over seeds of value / ECE / agreement / sparsity and their std (ddof 1)."""
        out = []
        for key in dict.fromkeys((r["task"], r["method"]) for r in self.runs):
            rs = [r for r in self.runs if (r["task"], r["method"]) == key]
            row: dict[str, Any] = {"task": key[0], "method": key[1], "metric": rs[0]["metric"], "n_seeds": len(rs)}
            for f in ("value", "ece", "agreement", "sparsity"):
                v = np.array([r[f] for r in rs], dtype=float)
                row[f] = float(v.mean())
                row[f"{f}_std"] = float(v.std(ddof=1)) if len(v) > 1 else None
            out.append(row)
        return out

    def hist(self) -> list[dict]:
        """Fig. 6 rows ``task, method, bin_lo, bin_hi, fraction``, the test examples of every seed pooled."""
        rows = []
        for task in dict.fromkeys(t for t, _ in self.per_example):
            for m, f in (("FT", "conf_ft"), ("Graft", "conf_graft")):
                conf = np.concatenate([d[f] for (t, _), d in self.per_example.items() if t == task])
                rows += [{"task": task, "method": m, **h} for h in confidence_fractions(conf, self.n_bins)]
        return rows

    def reduction(self) -> list[dict]:
        """:func:`reduction_rows` on the seed means (the within-5 % condition of the claim)."""
        return reduction_rows(self.summary())

    def table_rows(self, k_shot: int) -> list[dict]:
        """``p1-table2-ece`` rows (percent): metric, ECE and agreement per task and model, mean ± std over seeds."""
        rows = []
        for r in self.summary():
            for m, f in ((r["metric"], "value"), ("ece", "ece"), ("agreement", "agreement")):
                if f == "agreement" and r["method"] != "Graft":
                    continue
                std = r[f"{f}_std"]
                rows.append({"task": r["task"], "method": r["method"], "sparsity": r["sparsity"], "metric": m,
                             "value": 100 * r[f], "std": None if std is None else 100 * std, "paper": None,
                             "k_shot": k_shot, "n_seeds": r["n_seeds"]})
        return rows


def ece_table(jobs: "Artifacts", grafts: Sequence[JobSpec], n_bins: int = 10) -> EceTable:
    """P1 Table 2 (ECE columns) for every declared graft job in ``grafts`` (one per task and seed): its FT model (the
    graft's upstream job) and the learned graft, the same artifacts as the localization chapter's ``ft_and_graft``,
    scored on the test split (data seed = the job's seed) with per-example confidence and correctness kept."""
    wb, out = jobs.wb, EceTable(n_bins=n_bins)
    for graft in grafts:
        task, s = graft.kwargs["task"], int(graft.kwargs["seed"])
        tau = jobs.value(jobs.deps(graft, "finetune")[0])
        mask = jobs.value(graft)
        rows, _, preds = compare_models(wb, task, {"FT": wb.overrides(tau), "Graft": wb.overrides(tau, 1.0, mask)},
                                        n_bins=n_bins, seed=s, k=int(graft.kwargs["k"]))
        metric = wb.model.specs[task].metric
        out.runs += [{**r, "seed": s, "metric": metric,
                      "sparsity": 100.0 if r["method"] == "FT" else 100.0 * mask.density()} for r in rows]
        ft, gr = per_example(preds["FT"]), per_example(preds["Graft"])
        agree = (preds["Graft"].preds == preds["FT"].preds).to(torch.uint8).cpu().numpy()
        out.per_example[(task, s)] = {"conf_ft": ft["conf"], "correct_ft": ft["correct"],
                                      "conf_graft": gr["conf"], "correct_graft": gr["correct"], "agree": agree}
    return out


def ece_difference(a: Mapping[str, np.ndarray], b: Mapping[str, np.ndarray], op: str,
                    n_resamples: int = N_RESAMPLES) -> tuple[str, Evidence]:
    """``ECE(a) − ECE(b)`` in points ``op`` 0 from per-example ``conf`` / ``correct`` of two models on the same test
    examples (``[examples]`` or ``[seeds, examples]``), its CI from a paired bootstrap (ECE recomputed on each
    resample, seeds pooled)."""
    def stat(ca: np.ndarray, ka: np.ndarray, cb: np.ndarray, kb: np.ndarray) -> float:
        return 100.0 * (ece_from_confidence(ca, ka) - ece_from_confidence(cb, kb))
    arrays = [a["conf"], a["correct"], b["conf"], b["correct"]]
    est, lo, hi = paired_bootstrap(arrays, stat, n_resamples=n_resamples)
    n_seeds, n = np.atleast_2d(np.asarray(a["conf"])).shape
    over = "seeds and test examples" if n_seeds > 1 else "test examples"
    return verdict_from_ci(est, lo, hi, n_examples=int(n), seeds=int(n_seeds), margin=0.0, op=op,
                           test=f"paired bootstrap over {over}, {n_resamples} resamples, 95% CI of "
                                f"the ECE difference (points{', seeds pooled' if n_seeds > 1 else ''})")
