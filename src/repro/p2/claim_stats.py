"""The statistics the P2 chapters' claims share: per-task means of per-example correctness, and paired gaps.

- :func:`task_means`, :func:`finite_mean`: the mean over tasks of each task's accuracy (P2's tables' statistic).
- :func:`paired_gap`: a gap between two methods with a paired bootstrap over seeds and test examples
  (:func:`repro.report.verdicts.paired_bootstrap`), on any per-example correctness with ``tasks`` and
  ``stacked(method, kind)`` (:class:`repro.p2.task_arithmetic.runs.Correctness`).
- :func:`band`: a two-sided claim ``low ≤ statistic ≤ high`` as two one-sided parts on the same CI.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol, Sequence

import numpy as np

from repro.report.verdicts import N_RESAMPLES, Evidence, VerdictError, decide, paired_bootstrap, verdict_from_ci


class PerExample(Protocol):
    """Per-example test correctness of several methods on the same examples: ``stacked(method, kind)`` gives the
    ``[seeds, examples]`` 0/1 array of ``kind`` and the task index of each column."""

    tasks: Sequence[str]

    def stacked(self, method: str, kind: str) -> tuple[np.ndarray, np.ndarray]: ...


def task_means(x: np.ndarray, ids: np.ndarray, n_tasks: int) -> np.ndarray:
    """``[seeds, tasks]`` mean of ``x`` over the columns of each task (``ids`` = task index of each column)."""
    n_seeds = x.shape[0]
    key = (np.arange(n_seeds)[:, None] * n_tasks + ids.astype(int)).ravel()
    sums = np.bincount(key, weights=x.ravel(), minlength=n_seeds * n_tasks)
    cnt = np.bincount(key, minlength=n_seeds * n_tasks)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(cnt > 0, sums / np.maximum(cnt, 1), np.nan).reshape(n_seeds, n_tasks)


def finite_mean(x: np.ndarray) -> float:
    """Mean of the finite entries of ``x`` (NaN when there are none): tasks that cannot be normalized drop out."""
    x = x[np.isfinite(x)]
    return float(x.mean()) if x.size else float("nan")


def _normalized(acc: np.ndarray, single: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(single > 0, acc / np.where(single > 0, single, 1.0), np.nan)


def paired_gap(ex: PerExample, a: str, b: str, *, kind: str = "addition", normalized: bool = False, op: str = ">",
               margin: float = 0.0, n_resamples: int = N_RESAMPLES, seed: int = 0) -> tuple[str, Evidence]:
    """Verdict of ``stat(a) − stat(b) op margin`` (points) with a paired bootstrap over seeds and test examples.

    ``stat`` is the mean over tasks of the test accuracy of ``kind`` (``addition``, ``target``, …); with
    ``normalized``, the mean over seeds and tasks of that accuracy divided by the method's own single-task accuracy
    on the same resampled examples (P2's normalized accuracy).  The task of each resampled column travels with it
    (a third paired sample), so per-task means stay per task."""
    xa, ids = ex.stacked(a, kind)
    xb, _ = ex.stacked(b, kind)
    samples = [xa, xb, ids]
    if normalized:
        samples += [ex.stacked(a, "single")[0], ex.stacked(b, "single")[0]]
    n_tasks = len(ex.tasks)

    def stat(*m: np.ndarray) -> float:
        ta, tb = task_means(m[0], m[2], n_tasks), task_means(m[1], m[2], n_tasks)
        if normalized:
            ta = _normalized(ta, task_means(m[3], m[2], n_tasks))
            tb = _normalized(tb, task_means(m[4], m[2], n_tasks))
        return 100.0 * (finite_mean(ta) - finite_mean(tb))

    est, lo, hi = paired_bootstrap(samples, stat, n_resamples=n_resamples, seed=seed)
    what = "normalized accuracy" if normalized else f"{kind} accuracy"
    test = (f"paired bootstrap over {'seeds and ' if xa.shape[0] > 1 else ''}test examples, {n_resamples} "
            f"resamples, 95% CI of the difference in mean-over-tasks {what} (points)")
    return verdict_from_ci(est, lo, hi, n_examples=int(xa.shape[1]), seeds=int(xa.shape[0]), margin=float(margin),
                           test=test, op=op)


class OneTask:
    """The columns of one task of a :class:`PerExample` (its per-task verdicts: :func:`per_task_gaps`)."""

    def __init__(self, ex: PerExample, task: str) -> None:
        self.ex, self.tasks, self._i = ex, [task], list(ex.tasks).index(task)

    def stacked(self, method: str, kind: str) -> tuple[np.ndarray, np.ndarray]:
        x, ids = self.ex.stacked(method, kind)
        keep = ids[0] == self._i
        return x[:, keep], np.zeros_like(ids[:, keep])


def per_task_gaps(ex: PerExample, a: str, b: str, **kw: object) -> dict[str, tuple[str, Evidence]]:
    """:func:`paired_gap` of ``a`` − ``b`` on each task alone (same rule, same arguments): the per-task verdicts a
    reader needs next to the mean-over-tasks verdict.  A task whose statistic is undefined on every resample (a
    normalized gap whose single-task normalizer is 0, as a random-init model can give) has no per-task row."""
    out: dict[str, tuple[str, Evidence]] = {}
    for t in ex.tasks:
        try:
            out[t] = paired_gap(OneTask(ex, t), a, b, **kw)  # type: ignore[arg-type]
        except VerdictError:
            continue
    return out


def band(verdict_low: tuple[str, Evidence], low: float, high: float) -> dict[str, tuple[str, Evidence]]:
    """A two-sided claim ``low ≤ statistic ≤ high`` as two one-sided parts on the same CI: ``≥ low`` (the given
    verdict of :func:`paired_gap`) and ``≤ high``; :func:`repro.report.verdicts.combine_all` of the parts holds when
    the CI lies inside the band and does not hold when it lies entirely outside."""
    v, ev = verdict_low
    if ev.op != ">=" or ev.margin != low:
        raise ValueError(f"band needs the verdict of statistic >= {low}, got {ev.op} {ev.margin}")
    up = replace(ev, op="<=", margin=float(high))
    return {f">= {low:g}": (v, ev), f"<= {high:g}": (decide(up.ci_low, up.ci_high, "<=", up.margin), up)}


__all__ = ["OneTask", "PerExample", "band", "finite_mean", "paired_gap", "per_task_gaps", "task_means"]
