"""The claims matrix (repro.report.matrix): one row per claim, one column per setting found in ``results/``, the
paper's number; built here from fixture results of three profiles (cpu in two families, paper, smoke)."""

from __future__ import annotations

import re

from claims_fakes import claim, write_run

from repro.report.claims_page import claims_page_markdown
from repro.report.matrix import Setting, discover, families_line, matrix_markdown, paper_gpu_hours
from repro.runner.build import matrix_settings
from repro.runner.execute import check_run

GPU_HOURS = {"vision": {"p1_localization": 112.57, "p2_task_arithmetic": 7.02}}


def _check(path):
    return check_run(path.with_suffix(".ipynb"), path)[1]


def _fixture(root, paper: bool = True):
    write_run(root, "cpu", "p1_localization", [claim("p1-table2-recovery", "holds", ours="96.1 % of FT"),
                                               claim("p1-fig2-learned", "inconclusive", kind="generated")])
    write_run(root, "cpu", "p2_task_arithmetic", [claim("p2-table1-best", "does-not-hold", ours="61 %",
                                                        paper="72.4 (ViT-B/32)")])       # the vision family
    write_run(root, "cpu", "p2_task_arithmetic", [claim("p2-table1-best", "holds", ours="80 %", kind="generated",
                                                        paper="72.4 (ViT-B/32)")],
              folder="text-family", model_family="text")
    if paper:
        write_run(root, "paper", "p1_localization", [claim("p1-table2-recovery", "holds", ours="97.9 % of FT")])
        write_run(root, "paper", "p2_task_arithmetic", [claim("p2-table1-best", "inconclusive", ours="70 %")])
    write_run(root, "smoke", "p1_localization", [claim("p1-table2-recovery", "does-not-hold")])  # a test profile
    write_run(root, "cpu", "p2_sensitivity", [claim("p2-fig1-x", "holds")], recorded=False)  # no runner record


def _rows(md: str, section: str) -> list[list[str]]:
    """The list-table of one section as rows of cells (each cell's lines joined by ' / ')."""
    body = md.split(f"### {section}")[1].split("```{list-table}")[1].split("```")[0]
    rows = []
    for item in re.split(r"\n\* ", "\n" + body.split("\n\n", 1)[1]):
        if not item.strip():
            continue
        cells = [c for c in re.split(r"\n?  - |^- ", item) if c.strip()]
        rows.append([" / ".join(ln.strip().rstrip("\\") for ln in c.strip().splitlines()) for c in cells])
    return rows


def test_settings_are_found_per_profile_and_family(tmp_path):
    assert discover(tmp_path / "absent", _check) == [] and discover(tmp_path, _check) == []
    _fixture(tmp_path)
    found = discover(tmp_path, _check, shown_profile="cpu")
    assert [r.setting for r in found] == [Setting("cpu", "text"), Setting("cpu", "vision"),
                                          Setting("paper", "text"), Setting("paper", "vision")]
    by = {r.setting.key: sorted(r.results) for r in found}
    assert by == {"cpu/text": ["p1_localization", "p2_task_arithmetic"], "cpu/vision": ["p2_task_arithmetic"],
                  "paper/text": ["p1_localization"], "paper/vision": ["p2_task_arithmetic"]}
    assert [r.setting.key for r in found] == ["cpu/text", "cpu/vision", "paper/text", "paper/vision"]
    assert "smoke/text" in {r.setting.key for r in discover(tmp_path, _check, shown_profile="smoke")}
    # without the runner's check the unrecorded run counts too
    assert "p2_sensitivity" in {nb for r in discover(tmp_path) for nb in r.results}


def test_matrix_of_three_profiles(tmp_path):
    _fixture(tmp_path)
    md = matrix_markdown(discover(tmp_path, _check, shown_profile="cpu"), gpu_hours=GPU_HOURS)
    p1 = _rows(md, "P1")
    assert [c.split(" / ")[0] for c in p1[0]] == ["claim", "**cpu** · text family", "**paper** · text family",
                                                  "**paper's number**"]   # P1 runs only text models
    rec = next(r for r in p1 if "p1-table2-recovery" in r[0])
    assert rec[1].startswith("{bdg-success}`holds` · real data / ours 96.1 % of FT / 0.970 \\[0.960, 0.980\\]")
    assert "n 500 · 3 seeds" in rec[1] and "ours 97.9 % of FT" in rec[2] and rec[3] == "\\>95 %"
    learned = next(r for r in p1 if "p1-fig2-learned" in r[0])
    assert learned[1].startswith("{bdg-warning}`inconclusive` · generated data")
    assert learned[2] == "not run: ≈ 113 GPU-hours for p1\\_localization / `repro plan --profile paper --only p1_localization`"

    p2 = _rows(md, "P2")
    assert [c.split(" / ")[0] for c in p2[0]] == ["claim", "**cpu** · text family", "**cpu** · vision family",
                                                  "**paper** · text family", "**paper** · vision family",
                                                  "**paper's number**"]
    assert p2[0][2] == "**cpu** · vision family / `efficientnet-lite0`"
    best = p2[1]
    assert best[1].startswith("{bdg-success}`holds` · generated data / ours 80 %")   # the text-family rerun
    assert best[2].startswith("{bdg-danger}`does not hold` · real data / ours 61 %")
    assert best[3].startswith("not run") and best[4].startswith("{bdg-warning}`inconclusive`")
    assert best[5] == "72.4 (ViT-B/32)"
    assert "smoke" not in md and "p2-fig1-x" not in md
    assert "has not been run" not in md


def test_without_paper_results_the_paper_column_says_what_it_would_cost(tmp_path):
    _fixture(tmp_path, paper=False)
    md = matrix_markdown(discover(tmp_path, _check, shown_profile="cpu"), gpu_hours=GPU_HOURS)
    p1, p2 = _rows(md, "P1"), _rows(md, "P2")
    assert p1[0][-2] == "**paper** / not run" and p2[0][-2] == "**paper** / not run"
    assert p1[1][-2] == "not run: ≈ 113 GPU-hours for p1\\_localization / `repro plan --profile paper --only p1_localization`"
    assert p2[1][-2] == "not run: ≈ 7.0 GPU-hours for p2\\_task\\_arithmetic / `repro plan --profile paper --only p2_task_arithmetic`"
    assert "about **120 GPU-hours** on one H200" in md
    # a cpu text-family cell of a vision-family page is one `repro run` away
    only_vision = [r for r in discover(tmp_path, _check, shown_profile="cpu") if r.setting.family == "vision"]
    md = matrix_markdown(only_vision + [r for r in discover(tmp_path, _check, shown_profile="cpu")
                                        if r.setting.family == "text" and "p1_localization" in r.results
                                        and r.results.pop("p2_task_arithmetic", True)], gpu_hours=GPU_HOURS)
    p2 = _rows(md, "P2")
    assert p2[1][2] == ("not run / `repro run p2_task_arithmetic --profile cpu -p model_family text "
                        "--output-dir results/text-family`")


def test_the_book_shows_its_staged_results_beside_every_other_setting(tmp_path):
    _fixture(tmp_path)
    staged = {"p1_localization": {"claims": [claim("p1-table2-recovery", "holds", ours="staged")]},
              "p2_task_arithmetic": {"claims": [claim("p2-table1-best", "does-not-hold")]}}
    settings = matrix_settings(tmp_path, "cpu", staged)
    assert [r.setting.key for r in settings] == ["cpu/text", "cpu/vision", "paper/text", "paper/vision"]
    assert settings[0].results["p1_localization"]["claims"][0]["ours"] == "staged"
    assert "p2_task_arithmetic" in settings[0].results   # the text-family rerun from results/text-family/cpu/
    names = ["p1_localization", "p2_task_arithmetic"]
    md = claims_page_markdown("cpu", staged, names, matrix=matrix_markdown(settings, gpu_hours=GPU_HOURS),
                              families=families_line("cpu", names))
    assert md.index("## What was run") < md.index("## Across settings") < md.index("## Every claim of this build")
    assert "ours staged" in md and "**paper** · vision family" in md
    profile_line = next(ln for ln in md.splitlines() if ln.startswith("Profile **cpu**"))
    assert "Vision family (efficientnet-lite0; real images from installed packages): p2\\_task\\_arithmetic" \
        in profile_line


def test_gpu_hours_file_and_families_line(tmp_path):
    assert paper_gpu_hours(tmp_path / "absent.json") == {}
    (tmp_path / "g.json").write_text('{"gpu_hours": {"vision": {"p1_localization": {"jobs": 3, "gpu_hours": 1.5}}}}')
    assert paper_gpu_hours(tmp_path / "g.json") == {"vision": {"p1_localization": 1.5}}
    line = families_line("cpu", ["p1_localization", "p2_task_arithmetic", "p2_sensitivity"])
    assert line.startswith("Vision family (efficientnet-lite0; real images from installed packages): "
                           "p2_task_arithmetic, p2_sensitivity; text family (minilm; real ")
    assert families_line("smoke", ["p1_localization"]) == ""
