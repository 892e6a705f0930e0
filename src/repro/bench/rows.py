"""The rows of ``results/bench.json``: one measured pair (ours beside the official approach) per row.

Every row has the keys {name, ours, baseline, ratio, target, pass, unit, device, model} plus ``op`` (how the
ratio is compared with the target: ``<=`` or ``>=``), ``ratio_def`` (what the ratio divides), ``seconds`` (wall
time spent measuring the row), and optional ``paper`` (the papers' printed ratio), ``official`` (what the
official code does) and ``note``.  ``pass`` is None where there is no target ("report" rows) or nothing was
measured.  A row's verdict speaks the claims' vocabulary (:mod:`repro.report.verdicts`): ``pass`` True / False is
``holds`` / ``does-not-hold`` (an exact comparison, :func:`repro.report.verdicts.decide` on a point value), a
target with nothing measured is ``not-testable``, and a row without a target is only reported (``report``).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import platform
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from repro.report.display import fmt_short
from repro.report.verdicts import HOLDS, decide

ROW_KEYS: tuple[str, ...] = ("name", "ours", "baseline", "ratio", "target", "pass", "unit", "device", "model")
OPS: tuple[str, ...] = ("<=", ">=")


def _num(x: Any) -> float | None:
    """A finite float, or None (missing / NaN / inf)."""
    if x is None or isinstance(x, bool):
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def verdict(ratio: float | None, target: float | None, op: str = "<=") -> bool | None:
    """Whether ``ratio op target`` holds (True) or does not (False), exactly (no CI); None when either is missing."""
    if op not in OPS:
        raise ValueError(f"unknown comparison {op!r}; choose one of {OPS}")
    ratio, target = _num(ratio), _num(target)
    if ratio is None or target is None:
        return None
    return HOLDS[decide(ratio, ratio, op, target)]


def make_row(name: str, ours: float | None, baseline: float | None, unit: str, *, device: str, model: str,
             target: float | None = None, op: str = "<=", speedup: bool = False, ratio: float | None = None,
             passed: bool | None = None, **extra: Any) -> dict[str, Any]:
    """One bench row.  ``ratio`` defaults to ours / baseline, or baseline / ours with ``speedup`` (how many
    times faster ours is); ``passed`` overrides the ratio-vs-target verdict (e.g. an exact count check)."""
    ours, baseline = _num(ours), _num(baseline)
    if ratio is None and ours is not None and baseline is not None:
        num, den = (baseline, ours) if speedup else (ours, baseline)
        ratio = num / den if den else None
    ratio = _num(ratio)
    ok = verdict(ratio, target, op) if passed is None else bool(passed)
    row = {"name": name, "ours": ours, "baseline": baseline, "ratio": ratio, "target": _num(target), "pass": ok,
           "unit": unit, "device": device, "model": model, "op": op,
           "ratio_def": "baseline / ours" if speedup else "ours / baseline"}
    row.update(extra)
    return row


def validate_rows(rows: Iterable[Mapping[str, Any]]) -> None:
    """Raise ValueError naming the first row that lacks a key of :data:`ROW_KEYS` or has a bad value."""
    for i, r in enumerate(rows):
        missing = [k for k in ROW_KEYS if k not in r]
        if missing:
            raise ValueError(f"bench row {i} ({r.get('name')!r}) lacks {missing}; rows need {list(ROW_KEYS)}")
        for k in ("ours", "baseline", "ratio", "target"):
            if r[k] is not None and _num(r[k]) is None:
                raise ValueError(f"bench row {r['name']!r}: {k} must be a finite number or None, got {r[k]!r}")
        if r["pass"] not in (True, False, None):
            raise ValueError(f"bench row {r['name']!r}: pass must be true, false or null, got {r['pass']!r}")


def status(row: Mapping[str, Any]) -> str:
    """The row's verdict in the claims' words: ``holds`` / ``does-not-hold``; ``report`` for a measured row without a
    target; ``not-testable`` where nothing was measured.  A row judged from a CI carries its own ``verdict``
    (``inconclusive`` when the CI straddles the bound)."""
    if row.get("verdict"):
        return str(row["verdict"])
    if row["pass"] is True:
        return "holds"
    if row["pass"] is False:
        return "does-not-hold"
    return "report" if row.get("ours") is not None else "not-testable"


def format_row(row: Mapping[str, Any]) -> str:
    """One printed line: name, ours, baseline, ratio against target, verdict, seconds spent."""
    target = f"{row.get('op', '<=')} {fmt_short(row['target'])}" if row["target"] is not None else "report"
    paper = f" (paper {row['paper']:.3g})" if isinstance(row.get("paper"), (int, float)) else ""
    return (f"{row['name']:<44} ours {fmt_short(row['ours']):>10} {row['unit']:<8} "
            f"base {fmt_short(row['baseline']):>10}  "
            f"ratio {fmt_short(row['ratio']):>8} target {target:<9}{paper}  {status(row):<13} "
            f"[{row.get('seconds', 0.0):.1f} s]")


def summary(rows: Sequence[Mapping[str, Any]]) -> str:
    n_pass = sum(r["pass"] is True for r in rows)
    n_fail = sum(r["pass"] is False for r in rows)
    n_open = sum(status(r) == "inconclusive" for r in rows)
    return (f"{n_pass} holds, {n_fail} does-not-hold, {n_open} inconclusive, "
            f"{len(rows) - n_pass - n_fail - n_open} report / not-testable")


def write_bench(path: str | Path, rows: Sequence[Mapping[str, Any]], scaling: Sequence[Mapping[str, Any]] = (),
                meta: Mapping[str, Any] | None = None, extra: Mapping[str, Any] | None = None) -> Path:
    """Write ``{"meta", "rows", "scaling", **extra}`` as JSON (atomically: a temporary file, then rename);
    ``extra``: e.g. ``steady`` and ``gpu_hours`` (:mod:`repro.bench.steady`)."""
    validate_rows(rows)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    info = {"created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "machine": platform.machine(), "python": platform.python_version(), **(meta or {})}
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"meta": info, "rows": list(rows), "scaling": list(scaling), **(extra or {})},
                              indent=1) + "\n")
    tmp.replace(path)
    return path


def load_bench(path: str | Path) -> dict[str, Any]:
    """Read a bench JSON written by :func:`write_bench` (rows validated)."""
    data = json.loads(Path(path).read_text())
    if "rows" not in data:
        raise ValueError(f"{path} is not a bench file (no 'rows'); produce it with `repro bench`")
    validate_rows(data["rows"])
    return data
