"""Our per-seed measurements as rows of the results format (:mod:`repro.report.results`), next to the paper's cells.

:func:`seed_rows` turns measurements (one dict per run, metrics as fractions) into one row per
(keys, metric) with the mean and the sample std over seeds in the paper's units (percent); :func:`attach_printed`
fills each row's ``paper`` / ``paper_std`` from the printed table (:mod:`repro.report.reference`), mapping our cpu
stand-ins (e.g. 512-shot for the paper's 4096-shot) onto the printed cell they stand for.
"""

from __future__ import annotations

import math
import statistics
from typing import Any, Callable, Iterable, Mapping, Sequence

from repro.report.reference import select
from repro.report.results import PERCENT_METRICS


def mean_std(values: Sequence[float]) -> tuple[float | None, float | None]:
    """Mean and sample std (None for one value; (None, None) for none)."""
    vals = [float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not vals:
        return None, None
    return statistics.fmean(vals), (statistics.stdev(vals) if len(vals) > 1 else None)


def seed_rows(runs: Iterable[Mapping[str, Any]], keys: Sequence[str], metrics: Mapping[str, str],
              extra: Mapping[str, Any] | None = None,
              means: Sequence[str] = ("sparsity", "count")) -> list[dict[str, Any]]:
    """Aggregate runs over seeds: one results row per distinct ``keys`` value and metric.

    ``metrics`` maps our field name to the paper's metric name (e.g. ``{"value": "acc", "ece": "ece"}``);
    metrics in :data:`repro.report.results.PERCENT_METRICS` are converted from fractions to percent.  ``keys`` must
    include ``task`` and ``method``; fields in ``means`` that are not keys (by default ``sparsity``, in percent,
    and ``count``: a learned graft's size varies with the seed) are averaged over the group.  ``n_seeds`` is
    added to each row and ``paper`` is None.
    """
    for k in ("task", "method"):
        if k not in keys:
            raise ValueError(f"keys must include {k!r}; got {list(keys)}")
    groups: dict[tuple, list[Mapping[str, Any]]] = {}
    for r in runs:
        groups.setdefault(tuple(r.get(k) for k in keys), []).append(r)
    rows = []
    for key, rs in groups.items():
        averaged = {f: mean_std([r.get(f) for r in rs])[0] for f in means if f not in keys}
        if "sparsity" not in keys:
            averaged.setdefault("sparsity", None)
        for field, metric in metrics.items():
            vals = [r[field] for r in rs if r.get(field) is not None]
            if not vals:
                continue
            scale = 100.0 if metric in PERCENT_METRICS else 1.0
            m, s = mean_std([scale * v for v in vals])
            row = {**dict(zip(keys, key)), **averaged, "metric": metric, "value": m, "std": s, "paper": None,
                   "n_seeds": len(vals), **(extra or {})}
            rows.append(row)
    return rows


def attach_printed(rows: Iterable[Mapping[str, Any]], paper: str, table: int,
                   lookup: Callable[[Mapping[str, Any]], Mapping[str, Any] | None]) -> list[dict[str, Any]]:
    """Fill ``paper`` / ``paper_std`` of each row with the printed cell ``lookup(row)`` selects.

    ``lookup`` returns the column filters of the printed cell (e.g. ``{"task": "SST-2", "method": "Graft",
    "shots": 4096, "metric": "acc"}``) or None when the paper printed no counterpart; a filter that matches
    nothing (a "-" cell, or a task the table does not have) leaves ``paper`` None.
    """
    out = []
    for r in rows:
        row = dict(r)
        filters = lookup(row)
        row.setdefault("paper_std", None)
        if filters:
            try:
                df = select(paper, table, **filters)
            except KeyError:
                df = None
            if df is not None and len(df) == 1:
                v, s = df["value"].iloc[0], df["std"].iloc[0]
                row["paper"] = None if math.isnan(v) else float(v)
                row["paper_std"] = None if math.isnan(s) else float(s)
            elif df is not None and len(df) > 1:
                raise KeyError(f"{paper} table {table}: {len(df)} printed cells match {filters}")
        out.append(row)
    return out
