"""The papers' printed tables (``book/reference/*.csv``, shipped with the repository) and look-ups into them.

- :func:`load_reference` reads one table as a DataFrame (``value``/``std`` as floats, the printed strings kept in
  ``value_printed``/``std_printed``; P1's ``sparsity_pct`` also as ``sparsity``).
- :func:`printed` returns the printed number of one cell, e.g.
  ``printed("p1", 2, task="SST-2", method="Graft", shots=4096, metric="acc")`` → ``92.4``.
- :func:`reference_rows` turns (a filtered part of) a table into rows of the results format
  (:mod:`repro.report.results`) with ``paper`` filled in and ``value=None``, ready for our numbers.

The folder is found as ``$REPRO_REFERENCE_DIR`` if set, else ``<repo root>/book/reference`` next to the package's
``src/`` folder (editable install / clone).
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd

from repro.paths import reference_dir

PAPERS: dict[str, str] = {"p1": "grafting", "p2": "talos"}
TABLES: dict[str, tuple[int, ...]] = {"p1": tuple(range(1, 10)), "p2": tuple(range(1, 6))}
_NUMERIC = ("value", "std", "delta_vs_best_other", "sparsity_pct")
#: columns of the CSVs that are provenance, not keys of a cell
_META_COLS = ("paper", "table", "value", "std", "notes", "src_line", "value_printed", "std_printed",
              "delta_vs_best_other", "sparsity_pct")





def _paper_key(paper: str) -> str:
    p = paper.lower()
    for key, name in PAPERS.items():
        if p in (key, name):
            return key
    raise ValueError(f"unknown paper {paper!r}; choose one of {sorted(PAPERS) + sorted(PAPERS.values())}")


def _table_num(paper_key: str, table: int | str) -> int:
    t = str(table).lower().removeprefix("table").removeprefix(f"{paper_key}-table")
    try:
        n = int(t)
    except ValueError:
        n = -1
    if n not in TABLES[paper_key]:
        raise ValueError(f"{paper_key} has no printed table {table!r}; choose one of {list(TABLES[paper_key])}")
    return n


def reference_path(paper: str, table: int | str) -> Path:
    key = _paper_key(paper)
    return reference_dir() / f"{PAPERS[key]}_table{_table_num(key, table)}.csv"


@lru_cache(maxsize=None)
def _read(path: str, mtime: float) -> pd.DataFrame:
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    for col in ("value", "std"):
        if col in df:
            df[f"{col}_printed"] = df[col]
    for col in _NUMERIC:
        if col in df:
            df[col] = pd.to_numeric(df[col].replace("", None), errors="coerce").astype(float)
    if "sparsity_pct" in df:
        df["sparsity"] = df["sparsity_pct"]
    return df


def load_reference(paper: str, table: int | str) -> pd.DataFrame:
    """One printed table: ``load_reference("p1", 2)`` (also ``"grafting"``, ``"table2"``, ``"p1-table2"``)."""
    path = reference_path(paper, table)
    return _read(str(path), path.stat().st_mtime).copy()


def _matches(series: pd.Series, want: Any) -> pd.Series:
    if isinstance(want, (list, tuple, set)):
        out = pd.Series(False, index=series.index)
        for w in want:
            out |= _matches(series, w)
        return out
    if series.dtype == float:
        if want is None:
            return series.isna()
        return (series - float(want)).abs() <= 1e-9 * max(1.0, abs(float(want)))
    return series.astype(str) == str(want)


def select(paper: str, table: int | str, **filters: Any) -> pd.DataFrame:
    """Rows of a printed table matching every ``column=value`` filter (a list/tuple value means any of them).

    ``sparsity`` compares numerically (percent, as printed); other columns compare as strings (``shots=4096``
    works).  An unknown column, or a value the column never holds, fails naming the valid choices; a combination
    of valid values that the paper did not print gives an empty frame.
    """
    full = load_reference(paper, table)
    hit = pd.Series(True, index=full.index)
    for col, want in filters.items():
        if col not in full:
            raise KeyError(f"{paper} table {table} has no column {col!r}; columns: "
                           f"{[c for c in full.columns if c not in _META_COLS]}")
        m = _matches(full[col], want)
        if not m.any():
            values = sorted(set(full[col].astype(str)))
            raise KeyError(f"{paper} table {table}: no row with {col}={want!r}; values: {values}")
        hit &= m
    return full[hit]


def printed(paper: str, table: int | str, **keys: Any) -> float | None:
    """The printed value of exactly one cell, or None if the paper printed nothing there (``-`` cells).

    Raises ``KeyError`` for unknown columns/values, and if the keys select several cells (naming the columns that
    still vary).
    """
    df = select(paper, table, **keys)
    if df.empty:
        return None
    if len(df) > 1:
        varying = [c for c in df.columns if c not in _META_COLS and df[c].astype(str).nunique() > 1]
        raise KeyError(f"{paper} table {table}: {len(df)} cells match {keys}; narrow down with {varying}")
    v = df["value"].iloc[0]
    return None if math.isnan(v) else float(v)


def reference_rows(paper: str, table: int | str, **filters: Any) -> list[dict[str, Any]]:
    """The printed cells as rows of the results format: ``value=None`` (ours, to fill in), ``paper`` = printed.

    ``task`` is the table's task (``eval_task`` / ``ood_task`` where the table has those; ``"Average"`` for the
    P2 tables, whose cells are averages over a model's tasks); the other descriptive columns (``model``,
    ``shots``, ``id_task``, ``unit``, …) become extra keys; ``paper_std`` holds the printed std.
    """
    df = select(paper, table, **filters)
    rows = []
    for rec in df.to_dict("records"):
        task_col = next((c for c in ("task", "eval_task", "ood_task") if rec.get(c)), None)
        task = rec[task_col] if task_col else "Average"
        sparsity = rec.get("sparsity")
        row: dict[str, Any] = {
            "task": str(task), "method": str(rec["method"]),
            "sparsity": None if sparsity is None or math.isnan(sparsity) else float(sparsity),
            "metric": str(rec["metric"]), "value": None, "std": None,
            "paper": None if math.isnan(rec["value"]) else float(rec["value"]),
            "paper_std": None if math.isnan(rec["std"]) else float(rec["std"]),
        }
        for col, v in rec.items():
            if col in row or col in _META_COLS or col in (task_col, "citation", "method_family") or v == "":
                continue
            row[col] = int(v) if col == "shots" and str(v).isdigit() else v
        rows.append(row)
    return rows
