"""The claims of the performance page (``notebooks/performance.md``): our cost beside P2 Tables 3-4, from the
rows ``repro bench`` writes (:func:`repro.bench.rows.load_bench`), one function each.

A bench row carries ``name``, ``ratio`` (ours / baseline), ``pass`` (the ratio against its target) and the
``model`` / ``device`` it was measured on.  The timings are single measurements, so both rules are point rules
(no CI); a pair that was not measured makes its claim not testable.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from repro.report.results import Results

TALOS_TIME, TALOS_MEMORY = "TaLoS iteration time (90% sparse)", "TaLoS iteration peak memory"
FISHER_TIME, FISHER_SCORES = "Fisher round time", "Fisher scores max relative difference"


def bench_row(rows: Sequence[Mapping[str, Any]], name: str) -> Mapping[str, Any] | None:
    """The bench row called ``name``, or None when the bench file has none."""
    return next((r for r in rows if r["name"] == name), None)


def bench_result_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict]:
    """The bench rows as the page's result table (``p2-table3-bench``); one placeholder row without results."""
    return [{"task": r["model"], "method": r["name"], "sparsity": None, "metric": "ratio", "value": r["ratio"],
             "std": None, "paper": r.get("paper"), "unit": r["unit"], "ours": r["ours"], "baseline": r["baseline"],
             "target": r["target"], "pass": r["pass"], "device": r["device"]} for r in rows] or [
        {"task": "-", "method": "no bench results", "sparsity": None, "metric": "ratio", "value": None, "std": None,
         "paper": None}]


def bench_talos(res: Results, rows: Sequence[Mapping[str, Any]]) -> dict:
    """"a TaLoS iteration at 90 % sparsity costs 0.44× the time and 0.72× the peak memory of non-linear FT"
    (P2 Table 3, ViT-B/32).  Point rule: both bench ratios meet their targets."""
    t, mem = bench_row(rows, TALOS_TIME), bench_row(rows, TALOS_MEMORY)
    measured = bool(t and mem and t["ratio"] is not None and mem["ratio"] is not None)
    return res.add_claim(
        "p2-table3-bench-talos",
        "A TaLoS iteration at 90 % sparsity costs ≤ 0.44× the time and ≤ 0.72× the peak memory of a dense "
        "non-linear FT iteration (the paper's ViT-B/32 ratios).",
        paper="0.44× time, 0.72× memory (ViT-B/32)",
        ours=(f"{t['ratio']:.2f}× time, {mem['ratio']:.2f}× memory ({t['model']}, {t['device']})"
              if measured else "not measured"),
        holds=(bool(t["pass"] and mem["pass"]) if t and mem and None not in (t["pass"], mem["pass"]) else None),
        tasks=(), note="from results/bench.json (`repro bench`); same model and batch, one process")


def bench_calibration(res: Results, rows: Sequence[Mapping[str, Any]]) -> dict:
    """Our vectorised TaLoS calibration round against the official per-example backward loop (P2 Table 4's
    calibration cost).  Point rule: ≥ 5× faster and scores equal within 1e-5."""
    f = bench_row(rows, FISHER_TIME)
    return res.add_claim(
        "p2-table4-bench-calibration",
        "Our vectorised per-example squared gradients make a TaLoS calibration round at least 5× faster than the "
        "official per-example backward loop, with scores equal within 1e-5.",
        paper="Table 4 (calibration cost; the official code loops over examples)",
        ours=(f"{f['ratio']:.1f}× faster ({f['model']}, {f['device']})" if f and f["ratio"] is not None
              else "not measured"),
        holds=(bool(f["pass"] and (bench_row(rows, FISHER_SCORES) or {}).get("pass"))
               if f and f["pass"] is not None else None),
        tasks=(), note="holds = ≥ 5× and max relative score difference ≤ 1e-5")


__all__ = ["bench_calibration", "bench_result_rows", "bench_row", "bench_talos"]
