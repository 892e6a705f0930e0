"""What the book says about itself, from records only: the measured cpu build (``benchmarks/cpu_book_build.json``,
a copy of a first build's ``results/<profile>.build.json``, which :func:`repro.runner.build.build_book` writes
after every build), the paper profile's GPU-hours (``benchmarks/gpu_paper_path.json``) and which data each model
family reads (:mod:`repro.profiles`).  :func:`book_facts_markdown` renders the intro's paragraph; the tests hold
the README and the book's pages to the same records, so no figure is typed by hand in two places.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from repro.profiles import PROFILES
from repro.report.matrix import family_data, fmt_hours, paper_gpu_hours

CPU_BUILD_FILE = "benchmarks/cpu_book_build.json"
GPU_HOURS_FILE = "benchmarks/gpu_paper_path.json"


def read_json(path: str | Path) -> dict[str, Any]:
    """A JSON object, or {} when the file is absent or unreadable."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def kernel_seconds(record: Mapping[str, Any]) -> float:
    """The notebooks' execution time added up (one kernel each) of a build record."""
    return float(sum(nb.get("seconds", 0.0) for nb in (record.get("notebooks") or {}).values()))


def build_time_text(record: Mapping[str, Any]) -> str:
    """``58.7 min on 2 cores (3,520 s wall, 6,936 kernel-seconds; 2026-11-26, commit fff2c3c)``; "" without one."""
    if not record.get("wall_seconds"):
        return ""
    wall = float(record["wall_seconds"])
    return (f"{wall / 60:.1f} min on {record.get('cores', '?')} cores ({wall:,.0f} s wall, "
            f"{kernel_seconds(record):,.0f} kernel-seconds; {record.get('date', '?')}, commit "
            f"`{record.get('commit', '?')}`)")


def paper_hours_total(gpu_hours: Mapping[str, Mapping[str, float]], family: str = "vision") -> float:
    """GPU-hours of the paper profile's plan with ``family`` for P2 (P1's notebooks are in every family's plan)."""
    return float(sum(gpu_hours.get(family, {}).values()))


def book_facts_markdown(root: str | Path) -> str:
    """The intro's paragraph on the settings, how long the cpu book takes and what the paper profile would cost,
    from the records under ``root`` (the repository)."""
    root = Path(root)
    cpu = PROFILES["cpu"]
    fams = dict(cpu.p2_notebook_families)
    vision_pages = ", ".join(sorted(fams))
    record = read_json(root / CPU_BUILD_FILE)
    gpu = paper_gpu_hours(root / GPU_HOURS_FILE)
    measured = read_json(root / GPU_HOURS_FILE)
    lines = [f"**The settings.** The `cpu` profile runs two model families on {len(cpu.seeds)} seeds: the text "
             f"family (`{cpu.model}`; {family_data('cpu', 'text')}) for P1 and most of P2, and the vision family "
             f"(`{cpu.family('vision').model}`; {family_data('cpu', 'vision')}) for {vision_pages}. It shows "
             "whether each claim's *direction* holds in a small setting; the printed numbers need the papers' "
             "models and data: `repro book --profile paper --device cuda` on a GPU (see *Running it* below)."]
    timing = build_time_text(record)
    if timing:
        lines.append(f"**How long.** The last measured first build of the `cpu` book, from an empty artifact store "
                     f"with `{record.get('command', 'repro book --profile cpu')}`, took {timing}, as recorded in "
                     f"`{CPU_BUILD_FILE}`. A machine with slower cores takes proportionally longer, and a rebuild "
                     "with nothing changed only runs Sphinx. Every build records its own times in "
                     "`results/<profile>.build.json`.")
    if gpu:
        lines.append(f"**The paper profile** would take about **{fmt_hours(paper_hours_total(gpu))} GPU-hours** on "
                     f"one {measured.get('gpu', 'GPU')} for P1 and P2's vision family (about "
                     f"{fmt_hours(paper_hours_total(gpu, 'nlp'))} more for the T5 family), estimated from step times "
                     f"measured there (`{GPU_HOURS_FILE}`; `python "
                     "benchmarks/gpu_paper_path.py` measures them again on any CUDA machine). "
                     "`repro plan --profile paper` lists its jobs.")
    return "\n\n".join(lines) + "\n"


__all__ = ["CPU_BUILD_FILE", "GPU_HOURS_FILE", "book_facts_markdown", "build_time_text", "kernel_seconds",
           "paper_hours_total", "read_json"]
