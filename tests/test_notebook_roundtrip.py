"""JupyterLab as a user meets it: a double click opens a ``notebooks/*.md`` file as a notebook (the repository's
labconfig, which ``make lab`` puts on the Jupyter config path), and opening, running and saving it leaves the file
as committed (``notebooks/jupytext.toml``), so the page's cache key does not change."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jupytext
import nbformat
import pytest
from jupytext.config import find_jupytext_configuration_file, load_jupytext_configuration_file

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.md"))


def _config():
    path = find_jupytext_configuration_file(str(ROOT / "notebooks"))
    assert path == str(ROOT / "notebooks" / "jupytext.toml")
    return load_jupytext_configuration_file(path)


def _as_jupyterlab_saves(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """What a run in JupyterLab adds before a save: the running kernel's spec (ipykernel's python3), the
    language info, execution counts and outputs."""
    from ipykernel.kernelspec import get_kernel_dict

    spec = get_kernel_dict()
    nb.metadata["kernelspec"] = {"display_name": spec["display_name"], "language": spec["language"],
                                 "name": "python3"}
    nb.metadata["language_info"] = {"name": "python", "version": "3.11.2", "mimetype": "text/x-python"}
    for i, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        cell.execution_count = i + 1
        cell.outputs = [nbformat.v4.new_output("stream", text="ran\n")]
    return nb


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_open_run_save_leaves_the_notebook_as_committed(path, monkeypatch):
    from jupytext import header

    monkeypatch.setattr(header, "INSERT_AND_CHECK_VERSION_NUMBER", True)  # as in JupyterLab (off in jupytext's tests)
    text = path.read_text()
    config = _config()
    nb = jupytext.reads(text, fmt="md:myst", config=config)
    saved = jupytext.writes(_as_jupyterlab_saves(nb), fmt="md:myst", config=config)
    assert saved == text
    # without the project's config the same save rewrites the header (what issue 34 saw)
    bare = jupytext.writes(_as_jupyterlab_saves(jupytext.reads(text, fmt="md:myst")), fmt="md:myst")
    assert "jupytext_version:" in bare and bare != text


def test_every_notebook_header_is_what_jupyterlab_writes():
    for path in NOTEBOOKS:
        head = path.read_text().split("---", 2)[1]
        assert "display_name: Python 3 (ipykernel)" in head and "name: python3" in head, path.name
        assert "jupytext_version" not in head, path.name


def test_make_lab_opens_markdown_notebooks_as_notebooks():
    overrides = json.loads((ROOT / ".jupyter" / "labconfig" / "default_setting_overrides.json").read_text())
    viewers = overrides["@jupyterlab/docmanager-extension:plugin"]["defaultViewers"]
    assert viewers["markdown"] == viewers["myst"] == "Jupytext Notebook"
    lab = re.search(r"^lab:.*?(?=^\S)", (ROOT / "Makefile").read_text(), re.M | re.S).group(0)
    assert "JUPYTER_CONFIG_PATH=$(CURDIR)/.jupyter" in lab and "jupyter lab" in lab


def _lab_check():
    import importlib.util

    spec = importlib.util.spec_from_file_location("lab_check", ROOT / ".ci" / "lab_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # stdlib only at import (selenium inside the functions)
    return module


def test_ci_runs_the_jupyterlab_check_on_the_smoke_books_store():
    """The browser check (.ci/lab_check.py) edits one line of p2_sensitivity's parameters cell: that line must be
    there, once; CI runs the check after the smoke book, requiring its store."""
    lab = _lab_check()
    text = (ROOT / "notebooks" / "p2_sensitivity.md").read_text()
    params = re.search(r"```\{code-cell\} ipython3\n:tags: \[parameters\]\n(.*?)```", text, re.S).group(1)
    assert text.count(lab.PARAM_LINE) == 1 and lab.PARAM_LINE in params
    ci = (ROOT / ".ci" / "run").read_text()
    assert ci.index("repro book --profile smoke") < ci.index("python .ci/lab_check.py --require-store")
    assert "lab-check:" in (ROOT / "Makefile").read_text()


def test_lab_check_store_snapshot_lists_artifacts_only(tmp_path):
    lab = _lab_check()
    (tmp_path / "mask").mkdir()
    (tmp_path / "mask" / "k.json").write_text("{}")
    (tmp_path / ".locks").mkdir()
    (tmp_path / ".locks" / "mask.k.lock").write_text("")
    (tmp_path / ".keys-v2").write_text("")
    assert list(lab.store_snapshot(tmp_path)) == ["mask/k.json"]
    assert lab.store_snapshot(tmp_path / "absent") == {}
