"""Notebook runner, parameter validation, cache keys, claims page and CLI (repro.runner.*)."""

from __future__ import annotations

import re

import pytest

from repro.chapters import chapter_names
from repro.runner import execute, notebooks
from repro.runner.execute import NotebookError, cache_key, run_notebook
from repro.runner.notebooks import ParameterError, notebook_parameters, validate_params
from repro.runner.cli import COMMANDS, main
from repro.profiles import PROFILES
from repro.report.results import load_results

#: the book's notebooks: the chapter registry's (repro.chapters), which the runner reads
STUBS = list(chapter_names())


def test_the_book_lists_every_notebook_in_toc_order():
    assert STUBS[:4] == ["p1_localization", "p1_calibration_ood", "p1_multitask_continual", "p1_appendix"]
    assert STUBS[-1] == "performance" and len(STUBS) == 10
    assert notebooks.book_notebooks() == STUBS
    assert set(STUBS) <= set(notebooks.list_notebooks())


@pytest.mark.parametrize("name", STUBS)
def test_every_notebook_declares_the_common_parameters(name):
    params = notebook_parameters(name)
    assert {"profile", "seed", "data_dir", "output_dir"} <= set(params)
    assert params["profile"].type == "str" and params["output_dir"].type == "str"


def test_unknown_parameter_is_rejected_listing_the_valid_ones():
    with pytest.raises(ParameterError) as e:
        validate_params("p1_localization", "smoke", {"sed": 1})
    msg = str(e.value)
    assert "'sed'" in msg and "seed: int = 13" in msg and "output_dir" in msg and "data_dir" in msg


@pytest.mark.parametrize("params,word", [({"seed": "13"}, "int"), ({"seed": 1.5}, "int"), ({"seed": True}, "int"),
                                         ({"data_dir": 3}, "Optional[str]"), ({"output_dir": None}, "str")])
def test_wrong_types_are_rejected(params, word):
    with pytest.raises(ParameterError, match=re.escape(f"must be {word}")) as e:
        validate_params("p1_localization", "smoke", params)
    assert "valid parameters" in str(e.value)


def test_good_parameters_are_accepted_and_coerced():
    out = validate_params("p1_localization", "smoke", {"seed": 21, "data_dir": None})
    assert out == {"seed": 21, "data_dir": None, "profile": "smoke"}
    float_param = notebooks.NotebookParam("lr", "float", "0.1")
    assert notebooks._coerce(float_param, 1) == 1.0 and isinstance(notebooks._coerce(float_param, 1), float)
    untyped = notebooks.NotebookParam("x", None, "[1, 2]")
    assert notebooks._coerce(untyped, [3]) == [3]
    with pytest.raises(ParameterError):
        notebooks._coerce(untyped, "3")


def test_unknown_profile_is_rejected_listing_the_choices():
    with pytest.raises(ParameterError) as e:
        validate_params("p1_localization", "gpu", {})
    for name in PROFILES:
        assert repr(name) in str(e.value)
    with pytest.raises(ParameterError, match="contradicts"):
        validate_params("p1_localization", "smoke", {"profile": "cpu"})


def test_unknown_notebook_is_rejected_listing_the_notebooks():
    with pytest.raises(ParameterError, match="p2_appendix"):
        notebook_parameters("p9_nothing")


def test_cache_key_follows_params_profile_and_sources():
    fp = "fingerprint"
    base = cache_key("p1_localization", "smoke", {"seed": 13}, fp)
    assert base == cache_key("p1_localization", "smoke", {"seed": 13}, fp)
    assert base != cache_key("p1_localization", "smoke", {"seed": 21}, fp)
    assert base != cache_key("p1_localization", "cpu", {"seed": 13}, fp)
    assert base != cache_key("p1_localization", "smoke", {"seed": 13}, "other sources")
    assert base != cache_key("p2_appendix", "smoke", {"seed": 13}, fp)
    assert len(execute.source_fingerprint()) == 64



def test_cli_help_lists_the_commands(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for name in ("book", "run", "bench", "list"):
        assert name in out and name in COMMANDS


def test_cli_run_rejects_bad_parameters_before_running(capsys, tmp_path):
    assert main(["run", "p1_localization", "--profile", "smoke", "-p", "nope", "1",
                 "--output-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "unknown parameter(s) ['nope']" in err and "seed: int = 13" in err
    assert main(["run", "p1_localization", "--profile", "smoke", "-p", "seed", "abc",
                 "--output-dir", str(tmp_path)]) == 2
    assert "must be int" in capsys.readouterr().err
    assert not list(tmp_path.rglob("*.ipynb"))
    with pytest.raises(SystemExit):
        main(["book", "--profile", "gpu"])
    assert "invalid choice: 'gpu'" in capsys.readouterr().err


def test_cli_list_shows_parameters(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "p2_structure_cost: P2 §5.3" in out and "data_dir: Optional[str] = None" in out


HEADER = ("---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\n"
          "kernelspec:\n  display_name: Python 3\n  language: python\n  name: python3\n---\n\n")

# The structure every notebook follows (parameters cell, Results, reference rows, claims, save), as in the
# original stubs of notebooks/: self-contained so that the test stays fast whatever the real notebooks compute.
STUB = HEADER + """# Stub

```{code-cell} ipython3
:tags: [parameters]

from typing import Optional

profile: str = "cpu"  # smoke | cpu | paper
seed: int = 13  # first seed
data_dir: Optional[str] = None  # local data folder
output_dir: str = "results"  # writes <output_dir>/<profile>/stub.json
```

```{code-cell} ipython3
from repro.profiles import get_profile
from repro.report.reference import reference_rows
from repro.report.results import NOT_REPRODUCED, Results, paper_vs_ours

PROFILE = get_profile(profile)
res = Results("stub", profile, params={"seed": seed, "data_dir": data_dir})
rows = reference_rows("p2", 5)
res.add_table("p2-table5", rows)
paper_vs_ours(rows)
```

```{code-cell} ipython3
res.add_claim("p2-table5-ties", "TIES on top of TaLoS hurts", paper="79.67 -> 78.15", note=NOT_REPRODUCED)
res.save(output_dir)
```
"""


@pytest.mark.slow
def test_stub_notebook_runs_with_papermill_in_the_smoke_profile(tmp_path):
    """A stub notebook end to end (jupytext -> papermill, fresh python3 kernel): a valid results JSON, then a
    cache hit.  About 10 s on an idle 2-core machine (three kernel starts).  The kernel talks over Unix sockets
    in the run's private folder (:func:`execute.kernel_transport`), never over TCP ports that two kernels starting
    at once could both pick."""
    nb = tmp_path / "stub.md"
    nb.write_text(STUB.replace("res.save(output_dir)", "from ipykernel.kernelapp import IPKernelApp\n"
                               "assert IPKernelApp.instance().transport == 'ipc', IPKernelApp.instance().transport\n"
                               "res.save(output_dir)"))
    params = notebook_parameters(str(nb))
    assert list(params) == ["profile", "seed", "data_dir", "output_dir"]
    r = run_notebook(str(nb), "smoke", {"seed": 21}, output_dir=tmp_path / "out", use_cache=True)
    assert r.status == "ran"
    obj = load_results(tmp_path / "out" / "smoke" / "stub.json", require_nonempty=True)
    assert obj["meta"]["profile"] == "smoke" and obj["meta"]["params"]["seed"] == 21
    assert all(row["value"] is None and row["paper"] is not None for row in obj["tables"]["p2-table5"])
    assert obj["claims"][0]["holds"] is None and obj["claims"][0]["note"] == "not yet reproduced"
    executed = tmp_path / "out" / "smoke" / "stub.ipynb"
    assert executed.exists() and "injected-parameters" in executed.read_text()
    again = run_notebook(str(nb), "smoke", {"seed": 21}, output_dir=tmp_path / "out", use_cache=True)
    assert again.status == "cached"
    assert run_notebook(str(nb), "smoke", {"seed": 22}, output_dir=tmp_path / "out", use_cache=True).status == "ran"


@pytest.mark.slow
def test_failing_notebook_names_the_cell_and_error_and_keeps_the_copy(tmp_path):
    nb = tmp_path / "broken.md"
    nb.write_text(
        HEADER + "# Broken\n\n"
        "```{code-cell} ipython3\n:tags: [parameters]\n\nprofile = \"cpu\"\noutput_dir = \"results\"\n```\n\n"
        "```{code-cell} ipython3\nx = 1\n```\n\n```{code-cell} ipython3\nraise ValueError(\"boom\")\n```\n")
    with pytest.raises(NotebookError) as e:
        run_notebook(str(nb), "smoke", output_dir=tmp_path / "out")
    err = e.value
    assert err.notebook == "broken" and err.ename == "ValueError" and "boom" in err.evalue
    assert "raise ValueError" in str(err) and "failing cell" in str(err)
    assert err.executed and (tmp_path / "out" / "smoke" / "broken.ipynb").exists()


def test_tqdm_disable_switches_every_bar_off(monkeypatch):
    from repro.progress import progress_bar

    monkeypatch.setenv("TQDM_DISABLE", "1")
    assert progress_bar(range(3), enabled=True).disable  # batch kernels: no bars even when asked for
    monkeypatch.setenv("TQDM_DISABLE", "0")
    assert not progress_bar(range(3), enabled=True).disable and progress_bar(range(3), enabled=False).disable
    monkeypatch.delenv("TQDM_DISABLE")
    assert list(progress_bar(range(3))) == [0, 1, 2]


def test_batch_environment_splits_cores_and_restores(monkeypatch):
    import os

    from repro.runner.execute import _batch_environment

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setenv("TQDM_DISABLE", "0")
    with _batch_environment(threads=1):
        assert os.environ["OMP_NUM_THREADS"] == "1" and os.environ["MKL_NUM_THREADS"] == "1"
        assert os.environ["TQDM_DISABLE"] == "1"
    assert "OMP_NUM_THREADS" not in os.environ and os.environ["TQDM_DISABLE"] == "0"
    with _batch_environment():  # sequential builds leave the thread count to torch
        assert "OMP_NUM_THREADS" not in os.environ


#: A minimal clone: modules that import each other, both papers' reference tables, two notebooks that import code.
_CLONE = {
    "pyproject.toml": "",
    "src/repro/__init__.py": "",
    "src/repro/core/__init__.py": "",
    "src/repro/core/masks.py": "X = 1\n",
    "src/repro/workbench.py": "from repro.core import masks\n",
    "src/repro/plans.py": "SEEDS = (13,)\n",
    "src/repro/device.py": "def pick():\n    import repro.core.masks\n",
    "src/repro/bench/__init__.py": "",
    "src/repro/bench/rows.py": "ROWS = ()\n",
    "src/repro/p1/__init__.py": "",
    "src/repro/p1/regions.py": "from repro.plans import SEEDS\nfrom ..workbench import masks\n",
    "src/repro/p2/__init__.py": "",
    "src/repro/p2/arithmetic.py": "from repro.workbench import masks\n",
    "src/repro/runner/__init__.py": "",
    "src/repro/runner/cli.py": "",
    "book/reference/grafting_table1.csv": "a\n",
    "book/reference/talos_table1.csv": "a\n",
    "notebooks/p1_a.md": "# P1\n\n```{code-cell} ipython3\n%matplotlib inline\nfrom repro.p1 import regions\n"
                         "from repro.device import pick\n```\n",
    "notebooks/p2_b.md": "# P2\n\n```{code-cell} ipython3\nimport repro.p2.arithmetic\n"
                         "rows = __import__('repro.bench.rows')\n```\n",
}


def _fake_clone(root):
    for rel, text in _CLONE.items():
        f = root / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)


def test_notebook_fingerprint_is_its_import_closure(tmp_path, monkeypatch):
    """The fingerprint covers exactly the modules a notebook's code cells reach (computed, never hand-kept): an
    edit to ``plans.py`` re-runs the notebooks that import it, and only those; the runner is never in it."""
    _fake_clone(tmp_path)
    monkeypatch.setenv("REPRO_ROOT", str(tmp_path))
    fp = execute.source_fingerprint
    p1, p2 = fp("p1_a"), fp("p2_b")
    key1 = cache_key("p1_a", "smoke", {})

    def edit(rel: str) -> tuple[bool, bool]:
        nonlocal p1, p2
        (tmp_path / rel).write_text((tmp_path / rel).read_text() + "# edited\n")
        changed = (fp("p1_a") != p1, fp("p2_b") != p2)
        p1, p2 = fp("p1_a"), fp("p2_b")
        return changed

    assert edit("src/repro/p2/arithmetic.py") == (False, True)
    assert cache_key("p1_a", "smoke", {}) == key1  # P1 notebooks stay cached
    assert edit("book/reference/talos_table1.csv") == (False, True)
    assert edit("src/repro/plans.py") == (True, False)  # imported by p1/regions.py
    assert edit("src/repro/device.py") == (True, False)  # imported by the P1 notebook directly
    assert edit("src/repro/bench/rows.py") == (False, True)  # a dynamic __import__ in the P2 notebook
    assert edit("src/repro/core/masks.py") == (True, True)  # reached from both, one through a function body
    assert edit("src/repro/p1/regions.py") == (True, False)
    assert edit("src/repro/runner/cli.py") == (False, False)  # the runner does not run inside a kernel
    assert cache_key("p1_a", "smoke", {}) != key1
    assert execute.paper_of("p1_localization") == "p1" and execute.paper_of("stub") is None


def test_real_notebooks_fingerprint_the_modules_they_import():
    """Every book notebook's closure holds ``plans.py`` or ``device.py`` where it imports them (the modules the
    old hand-kept list missed), and never the other paper's package."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    src = root / "src" / "repro"
    for nb in sorted((root / "notebooks").glob("*.md")):
        code = execute._notebook_code(nb)
        files = {f.relative_to(src).as_posix() for f in execute.import_closure(src, execute._imported_modules(code, "repro"))}
        assert "__init__.py" in files and "profiles.py" in files, nb.name
        if "repro.device" in code:
            assert "device.py" in files, nb.name
        other = {"p1": "p2/", "p2": "p1/"}.get(execute.paper_of(nb.stem) or "")
        assert not other or not any(f.startswith(other) for f in files), nb.name


def test_runner_imports_no_layer_it_only_runs():
    import ast
    from pathlib import Path

    forbidden = {"core", "p1", "p2", "workbench", "models", "data"}
    for path in sorted((Path(execute.__file__).parent).glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            mods = [node.module] if isinstance(node, ast.ImportFrom) and node.module else \
                [a.name for a in node.names] if isinstance(node, ast.Import) else []
            for m in mods:
                parts = m.split(".")
                assert not (parts[0] == "repro" and len(parts) > 1 and parts[1] in forbidden), (path.name, m)


@pytest.mark.parametrize("text,value", [("1e7", 1e7), ("1e-3", 1e-3), ("-2.5E+3", -2500.0), ("[1e-3, 1e-2]", [1e-3, 1e-2]),
                                        ("13", 13), ("0.5", 0.5), ("SST-2", "SST-2"), ("[SST-2, QNLI]", ["SST-2", "QNLI"]),
                                        ("null", None), ("true", True)])
def test_cli_values_read_exponent_floats_as_papermill_does(text, value):
    out = notebooks.parse_cli_value(text)
    assert out == value and type(out) is type(value)


def test_graft_lr_1e7_and_float_lists_are_accepted():
    out = validate_params("p1_localization", "smoke", {"graft_lr": notebooks.parse_cli_value("1e7"),
                                                       "sparsities": notebooks.parse_cli_value("[1e-3, 1e-2]")})
    assert out["graft_lr"] == 1e7 and out["sparsities"] == [1e-3, 1e-2]
    assert validate_params("p2_appendix", "smoke", {"sparsities": [0, 0.5]})["sparsities"] == [0.0, 0.5]


@pytest.mark.parametrize("notebook,params,message", [
    ("p1_localization", {"sparsities": [1e-3, "x"]}, "'sparsities': element 1 must be float, got 'x'"),
    ("p1_localization", {"sparsities": [0, 0.5]}, "'sparsities': element 0 is 0.0, outside (0, 1]"),
    ("p1_appendix", {"fish_densities": [1.5]}, "'fish_densities': element 0 is 1.5, outside (0, 1]"),
    ("p2_appendix", {"sparsities": [1.0]}, "element 0 is 1.0, outside [0, 1) (TaLoS sparsity k"),
    ("p2_appendix", {"graft_sparsity": 0.0}, "'graft_sparsity' is 0.0, outside (0, 1]"),
    ("p1_localization", {"graft_lr": float("nan")}, "'graft_lr' is nan: it must be a finite number"),
    ("p1_localization", {"graft_lr": -1.0}, "'graft_lr' is -1.0, outside (0, 1e+30]"),
    ("p1_localization", {"tasks": ["SST-2", 3]}, "'tasks': element 1 must be str"),
    ("p1_multitask_continual", {"continual_sequence": ["QNLI", None]}, "'continual_sequence': element 1 must be str"),
    ("p2_disentanglement", {"drift_steps": [10, 2.5]}, "'drift_steps': element 1 must be int"),
    ("p1_localization", {"graft_steps": -5}, "'graft_steps' is -5, outside [0, inf)"),
])
def test_list_elements_and_ranges_are_checked(notebook, params, message):
    with pytest.raises(ParameterError) as e:
        validate_params(notebook, "smoke", params)
    assert message in str(e.value)


def test_annotated_element_types_are_checked():
    p = notebooks.NotebookParam("xs", "Optional[list[float]]", "None")
    assert notebooks._coerce(p, [1, 2.5]) == [1.0, 2.5] and notebooks._coerce(p, None) is None
    with pytest.raises(ParameterError, match="element 0 must be float"):
        notebooks._coerce(p, ["a"])
    nested = notebooks.NotebookParam("pairs", "list[tuple[str, str]]", "[]")
    with pytest.raises(ParameterError, match="element 1 must be str"):
        notebooks._coerce(nested, [["a", 1]])


def test_bench_json_is_in_the_performance_key_only(tmp_path, monkeypatch):
    """A new results/bench.json re-runs the Performance page (its key changes) and leaves P1 / P2 cached."""
    from pathlib import Path

    real = Path(__file__).resolve().parents[2] / "notebooks" / "performance.md"
    _fake_clone(tmp_path)
    (tmp_path / "notebooks" / "performance.md").write_text(real.read_text())
    monkeypatch.setenv("REPRO_ROOT", str(tmp_path))
    assert set(notebooks.input_files("performance", {})) == {"bench_file"}
    assert notebooks.input_files("p1_a", {}) == {}

    def keys():
        return {n: cache_key(n, "smoke", {}) for n in ("p1_a", "p2_b", "performance")}

    never = keys()  # no bench file yet: recorded as missing
    bench = tmp_path / "results" / "bench.json"
    bench.parent.mkdir()
    bench.write_text('{"rows": [1]}')
    first = keys()
    bench.write_text('{"rows": [2]}')
    second = keys()
    assert never["performance"] != first["performance"] != second["performance"] != never["performance"]
    for name in ("p1_a", "p2_b"):
        assert never[name] == first[name] == second[name]
    # an explicit bench_file is the file that counts
    other = tmp_path / "elsewhere.json"
    other.write_text('{"rows": [3]}')
    key = cache_key("performance", "smoke", {"bench_file": str(other)})
    bench.write_text('{"rows": [4]}')
    assert cache_key("performance", "smoke", {"bench_file": str(other)}) == key
    other.write_text('{"rows": [5]}')
    assert cache_key("performance", "smoke", {"bench_file": str(other)}) != key


def test_keys_of_notebooks_without_inputs_are_unchanged():
    """Adding data inputs to the key did not re-key the notebooks that read none (no needless re-runs)."""
    import hashlib
    import json

    from repro.runner.notebooks import notebook_path

    params = {"seed": 13}
    old = hashlib.sha256(json.dumps({"notebook": notebook_path("p1_localization").read_text(), "params": params,
                                     "profile": "smoke", "src": "fp"}, sort_keys=True).encode()).hexdigest()[:20]
    assert cache_key("p1_localization", "smoke", params, "fp") == old


def test_build_info_says_what_ran_from_the_results_and_records():
    from repro.runner.build import build_info_markdown
    from repro.runner.execute import RunResult

    results = {"p1_a": {"meta": {"device": "cpu"}, "claims": []}, "p2_b": {"meta": {"device": "cpu"}, "claims": []}}
    runs = {"p1_a": RunResult("p1_a", "smoke", "ran", 100.0, "", ""),
            "p2_b": RunResult("p2_b", "smoke", "cached", 50.0, "", "")}
    text = build_info_markdown("smoke", results, runs, ["p1_a", "p2_b", "p2_c"], ["p2_c"], built="2026-11-23 22:56 UTC")
    assert text.startswith("**This build** ran profile **smoke** (`" + PROFILES["smoke"].model + "`) on cpu: ")
    assert "2 of 3 notebooks, 2 min of notebook execution" in text and "built 2026-11-23 22:56 UTC" in text
    assert "not executed for this profile: p2_c" in text and text.endswith(".\n")
