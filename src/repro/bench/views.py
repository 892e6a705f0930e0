"""Tables of the performance page (``notebooks/performance.md``) from the rows ``repro bench`` writes."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import pandas as pd

from repro.bench.rows import status

#: The bench pairs that stand beside a printed P2 Table 3 ratio: (method, metric, bench row name).
PAPER_PAIRS = (("TaLoS", "total_iter_time", "TaLoS iteration time (90% sparse)"),
               ("TaLoS", "peak_memory", "TaLoS iteration peak memory"),
               ("Linearized FT", "total_iter_time", "linearized FT iteration time"),
               ("Linearized FT", "peak_memory", "linearized FT iteration peak memory"))


def measured_pairs(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One line per measured pair: ours, the baseline, the ratio, its target and verdict, the paper's ratio."""
    return pd.DataFrame([{"model": r["model"], "device": r["device"], "pair": r["name"], "ours": r["ours"],
                          "baseline": r["baseline"], "unit": r["unit"], "ratio": r["ratio"],
                          "target": (f"{r['op']} {r['target']:g}" if r["target"] is not None else "report"),
                          "verdict": status(r), "paper ratio": r.get("paper"), "seconds": r.get("seconds")}
                         for r in rows])


def official_notes(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """What the baseline of each pair re-implements, and the pair's note."""
    return pd.DataFrame([{"pair": r["name"], "official approach": r.get("official", ""), "note": r.get("note", "")}
                         for r in rows])


def beside_paper(rows: Sequence[Mapping[str, Any]], printed: Mapping[tuple[str, str, str], float]) -> pd.DataFrame:
    """Our bench ratios beside every printed model's P2 Table 3 ratio to non-linear FT
    (``printed``: :func:`repro.p2.efficiency.paper_ratios`)."""
    ours = {r["name"]: r for r in rows}
    models = sorted({m for m, _, _ in printed})
    return pd.DataFrame([{"method": meth, "metric": metric, "ours": ours.get(name, {}).get("ratio"),
                          **{f"paper {m}": printed.get((m, meth, metric)) for m in models}}
                         for meth, metric, name in PAPER_PAIRS])


def scaling_exponents(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """The fitted exponents b of time ≈ a·n^b (the rows with unit ``exponent``)."""
    return pd.DataFrame([{"model": r["model"], "quantity": r["name"], "exponent": r["ours"], "note": r["note"]}
                         for r in rows if r["unit"] == "exponent"])


__all__ = ["PAPER_PAIRS", "beside_paper", "measured_pairs", "official_notes", "scaling_exponents"]
