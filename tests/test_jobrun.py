"""`repro job run` (repro.jobrun, issue 23): one job of the plan, upstream artifacts read-only, done-markers, the
store on mounts without locks, a job killed mid-write, and one job of each kind on the paper-smoke profile's tiny
models of the paper's classes over fixture folders in the fetched layout."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from repro.artifacts import SLOW_WRITE_ENV, ArtifactStore, read_json
from repro.jobrun import JobRunner, UpstreamMissing, done_path, main, plan_jobs
from repro.jobs import KINDS
from repro.workbench import StoreMiss, Workbench

SRC = Path(__file__).resolve().parents[1] / "src"


@pytest.fixture(scope="module")
def smoke_jobs():
    return plan_jobs("smoke")


def first_graft(jobs):
    """A smoke graft job and the fine-tune it grafts."""
    graft = next(j for j in jobs.values() if j.kind == "graft" and len(j.deps) == 1)
    return graft, jobs[graft.deps[0]]


def test_an_absent_upstream_is_an_error_naming_it_and_is_never_computed(smoke_jobs, tmp_path):
    graft, ft = first_graft(smoke_jobs)
    runner = JobRunner(smoke_jobs, artifacts=tmp_path)
    with pytest.raises(UpstreamMissing, match=rf"upstream missing: finetune {ft.id}; run `repro job run {ft.id}"):
        runner.run(graft.id)
    assert not list(tmp_path.rglob("*.safetensors")) and not done_path(graft.id, tmp_path).exists()


def test_a_job_computes_its_artifact_once_and_marks_it_done(smoke_jobs, tmp_path):
    graft, ft = first_graft(smoke_jobs)
    runner = JobRunner(smoke_jobs, artifacts=tmp_path)
    m_ft = runner.run(ft.id)
    m = runner.run(graft.id)
    assert [e["computed"] for e in m["entries"]] == [True] and m["entry"].startswith("smoke/graft/")
    sidecar = read_json(tmp_path / (m["entry"] + ".json"))
    assert m["sha256"] == sidecar["_store"]["sha256"] and m["device"] == "cpu" and m["host"] and m["seconds"] >= 0
    assert read_json(done_path(graft.id, tmp_path)) == m and m_ft["entry"].startswith("smoke/taskvec/")
    again = JobRunner(smoke_jobs, artifacts=tmp_path).run(graft.id)  # a second run finds it
    assert [e["computed"] for e in again["entries"]] == [False] and again["sha256"] == m["sha256"]


def test_read_only_and_job_scoped_workbenches_compute_nothing_else(tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_STORE_READ_ONLY", "1")
    wb = Workbench("smoke", artifacts_dir=tmp_path)
    assert wb.read_only
    with pytest.raises(StoreMiss, match="read-only store: would compute taskvec .* [(]absent[)]"):
        wb.finetune("SST-2")
    assert not list(tmp_path.rglob("*")), "a read-only store is not written (no lock files either)"
    monkeypatch.delenv("REPRO_STORE_READ_ONLY")
    wb = Workbench("smoke", artifacts_dir=tmp_path)
    wb.compute_kinds = frozenset({"graft"})
    with pytest.raises(StoreMiss, match="not this job's artifact"):
        wb.finetune("SST-2")
    wb.compute_kinds = None
    tau = wb.finetune("SST-2")
    wb.compute_kinds = frozenset({"graft"})
    assert wb.graft("SST-2", tau, 0.01)[1]["count"] >= 0  # its own kind computes
    assert [(e["kind"], e["computed"]) for e in wb.ledger] == [("taskvec", True), ("graft", True)]


def test_the_store_goes_on_without_flock_and_warns_once(tmp_path, monkeypatch, caplog):
    import repro.artifacts as A

    def no_locks(f, op):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(A.fcntl, "flock", no_locks)
    store = ArtifactStore(tmp_path)
    with caplog.at_level("WARNING", logger="repro.artifacts"):
        for _ in range(2):
            with store.lock(store.path("graft", {"a": 1})):
                pass
    assert sum("file locks are unavailable" in r.message for r in caplog.records) == 1
    monkeypatch.setattr(A.fcntl, "flock", lambda f, op: (_ for _ in ()).throw(OSError(errno.EACCES, "denied")))
    with pytest.raises(PermissionError):
        with store.lock(store.path("graft", {"a": 2})):
            pass


def _job_cmd(job_id: str, art: Path) -> list[str]:
    return [sys.executable, "-m", "repro.runner.cli", "job", "run", job_id, "--profile", "smoke", "--artifacts",
            str(art)]


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(SRC), "OMP_NUM_THREADS": "1", "TQDM_DISABLE": "1", **extra}


def test_a_job_killed_mid_write_reruns_to_the_same_sha256(smoke_jobs, tmp_path):
    _, ft = first_graft(smoke_jobs)
    clean, killed = tmp_path / "clean", tmp_path / "killed"
    assert subprocess.run(_job_cmd(ft.id, clean), env=_env(), capture_output=True).returncode == 0
    want = read_json(done_path(ft.id, clean))["sha256"]
    proc = subprocess.Popen(_job_cmd(ft.id, killed), env=_env(**{SLOW_WRITE_ENV: "60"}),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 120
        while not list(killed.glob("smoke/taskvec/.*.tmp")) and time.time() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert list(killed.glob("smoke/taskvec/.*.tmp")), "the write never started"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert not [f for f in killed.rglob("*") if f.is_file() and not f.name.endswith((".tmp", ".lock"))], \
        "a killed write leaves no artifact and no done-marker"
    rerun = subprocess.run(_job_cmd(ft.id, killed), env=_env(), capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr
    assert read_json(done_path(ft.id, killed))["sha256"] == want
    assert not list(killed.rglob("*.tmp"))


def test_one_job_of_each_kind_runs_on_paper_smoke_over_fixture_folders(tmp_path, capsys):
    """Issue 22 §4: every job kind of the paper plans runs (paper-smoke's tiny random-init models of the paper's
    classes: RoBERTa, GPT-2, CLIP ViT, T5) through `repro job run`, reading a fixture tree in the fetched layout."""
    from repro.data.fixtures import make_fixture_tree

    data = make_fixture_tree(tmp_path / "data", "all")
    jobs = plan_jobs("paper-smoke")
    runner = JobRunner(jobs)
    pick = [min((j for j in jobs.values() if j.kind == kind), key=lambda j: (len(runner.closure(j.id)), j.cost))
            for kind in KINDS]
    order: list[str] = []

    def visit(i: str) -> None:
        for d in jobs[i].deps:
            visit(d)
        if i not in order:
            order.append(i)

    for j in pick:
        visit(j.id)
    art = tmp_path / "art"
    assert main([*order, "--profile", "paper-smoke", "--data", str(data), "--artifacts", str(art)]) == 0
    out = capsys.readouterr().out
    for j in pick:
        marker = json.loads(done_path(j.id, art).read_text())
        assert marker["entries"] and all(e["sha256"] for e in marker["entries"]), (j.kind, marker)
        assert f"{j.id}: computed paper-smoke/" in out
    assert {jobs[i].kind for i in order} == set(KINDS)


# ==============================================================================================================
# issue 35: faults on the cluster path, one table per concern, the store checked after each
# ==============================================================================================================
NO_FLOCK = ("import errno, fcntl, sys\n"
            "def no_locks(f, op):\n    raise OSError(errno.ENOLCK, 'No locks available')\n"
            "fcntl.flock = no_locks\n"
            "from repro.jobrun import main\n"
            "sys.exit(main(sys.argv[1:]))\n")


def _visible_is_whole(folder: Path) -> None:
    """What a reader can see of a store folder: every visible file parses, every complete pair verifies."""
    from safetensors.torch import load_file

    from repro.artifacts import check_entry

    for f in list(folder.glob("[!.]*.safetensors")):
        try:
            load_file(str(f))
        except FileNotFoundError:
            continue
        if f.with_suffix(".json").exists():
            assert check_entry(f.with_suffix("")) in ("ok", "missing"), f


@pytest.mark.slow  # two job processes, as tests/test_store.py's two-process lock test
def test_two_processes_run_one_job_at_once_without_flock(smoke_jobs, tmp_path):
    """A retried SLURM job starts while the first attempt still runs, on a mount without flock (before: both went on
    without any lock, cleaning each other's temp files and deleting each other's half-published pair)."""
    _, ft = first_graft(smoke_jobs)
    single = JobRunner(smoke_jobs, artifacts=tmp_path / "single").run(ft.id)
    art = tmp_path / "art"
    cmd = [sys.executable, "-c", NO_FLOCK, ft.id, "--profile", "smoke", "--artifacts", str(art)]
    procs = [subprocess.Popen(cmd, env=_env(**{SLOW_WRITE_ENV: "0.5"}), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    deadline = time.time() + 300
    while any(p.poll() is None for p in procs) and time.time() < deadline:
        _visible_is_whole(art / "smoke" / "taskvec")  # a reader never sees a half-written file
        time.sleep(0.05)
    outs = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1][-2000:] for o in outs]
    said = sorted(o[0].split(": ", 1)[1].split(" smoke/")[0] for o in outs)
    assert said == ["computed", "found"], outs  # one computes, the other waits on the claim and finds it
    files = sorted(f.name for f in (art / "smoke" / "taskvec").iterdir())
    assert len(files) == 2 and all(not f.startswith(".") for f in files), files
    assert read_json(done_path(ft.id, art))["sha256"] == single["sha256"]  # identical to a single run
    assert not list(art.rglob("*.tmp")) and not list(art.rglob("*.claim"))


def test_a_claim_serialises_writers_and_a_dead_holders_claim_is_broken(tmp_path, monkeypatch):
    import threading

    import repro.artifacts as A

    monkeypatch.setattr(A.fcntl, "flock", lambda f, op: (_ for _ in ()).throw(OSError(errno.ENOLCK, "no locks")))
    store, spans = ArtifactStore(tmp_path), []
    path = store.path("graft", {"a": 1})

    def hold() -> None:
        with store.lock(path):
            start = time.monotonic()
            time.sleep(0.3)
            spans.append((start, time.monotonic()))
    threads = [threading.Thread(target=hold) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    spans.sort()
    assert len(spans) == 3 and all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))  # never two holders at once
    claim_file = tmp_path / ".locks" / f"graft.{path.name}.claim"
    assert not claim_file.exists()
    claim_file.write_text(f"{__import__('socket').gethostname()} 999999999 dead\n")  # killed on this host
    with store.lock(path):
        assert "dead" not in claim_file.read_text()
    claim_file.write_text("other-node 12 silent\n")  # another node's holder that stopped refreshing it
    os.utime(claim_file, (time.time() - 3 * A.CLAIM_STALE_S,) * 2)
    with store.lock(path):
        assert "silent" not in claim_file.read_text()
    claim_file.write_text("other-node 12 alive\n")  # a live claim is waited for
    monkeypatch.setattr(A, "CLAIM_STALE_S", 0.5)
    t0 = time.monotonic()
    with store.lock(path):
        assert time.monotonic() - t0 >= 0.4


def _as_plan(job) -> dict:
    return {"id": job.id, "kind": job.kind, "notebooks": list(job.notebooks), "deps": list(job.deps)}


@pytest.fixture(scope="module")
def done_store(smoke_jobs, tmp_path_factory):
    """A store where a smoke fine-tune and the graft of it ran, with their done-markers."""
    graft, ft = first_graft(smoke_jobs)
    art = tmp_path_factory.mktemp("done") / "art"
    runner = JobRunner(smoke_jobs, artifacts=art)
    runner.run(ft.id)
    runner.run(graft.id)
    return art


def _entry_path(art: Path, job_id: str) -> Path:
    return art / read_json(done_path(job_id, art))["entries"][0]["path"]


def _flip_keep_mtime(f: Path) -> None:
    st = f.stat()
    data = bytearray(f.read_bytes())
    data[-3] ^= 0x01
    f.write_bytes(bytes(data))
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))


def _other_code(js: Path) -> None:
    meta = json.loads(js.read_text())
    meta["_store"]["code"]["digest"] = "0" * 16
    js.write_text(json.dumps(meta))


def _other_sha(marker: Path) -> None:
    m = json.loads(marker.read_text())
    m["entries"][0]["sha256"] = "f" * 64
    marker.write_text(json.dumps(m))
    os.utime(marker, (time.time() + 5,) * 2)


# (damage(entry path, marker), full check needed, problem named, recomputed on the re-run)
LIES = {
    "artifact-deleted": (lambda p, m: [f.unlink() for f in (p.with_suffix(".safetensors"), p.with_suffix(".json"))],
                         False, "missing", True),
    "tensor-file-deleted": (lambda p, m: p.with_suffix(".safetensors").unlink(), False,
                            "incomplete: ", True),
    "tensor-edited-mtime-kept": (lambda p, m: _flip_keep_mtime(p.with_suffix(".safetensors")), True,
                                 "corrupt: the tensor file's sha256 differs", True),
    "tensor-edited": (lambda p, m: (time.sleep(1.1), _flip_keep_mtime(p.with_suffix(".safetensors")),
                                    os.utime(p.with_suffix(".safetensors"))), False,
                      "was modified after the job finished", True),
    "other-code-fingerprint": (lambda p, m: _other_code(p.with_suffix(".json")), False, "stale: the code of", True),
    "marker-names-another-sha": (lambda p, m: _other_sha(m), False, "is not the artifact its done-marker names",
                                 False),
}


@pytest.mark.parametrize("name", sorted(LIES))
def test_a_lying_done_marker_is_found_and_its_job_reruns(name, smoke_jobs, done_store, tmp_path):
    """Before: a done-marker was trusted whatever happened to its artifact (the workflow skipped the job, the render
    failed on the first missing artifact only). Now the marker is checked, removed, and the job re-runs."""
    from repro.runner.workflow import marker_problems, prune_lying_markers

    damage, full, problem, recomputed = LIES[name]
    _, ft = first_graft(smoke_jobs)
    art = tmp_path / "art"
    shutil.copytree(done_store, art)
    path, marker = _entry_path(art, ft.id), done_path(ft.id, art)
    assert marker_problems(_as_plan(ft), art, full=full) == []
    damage(path, marker)
    problems = marker_problems(_as_plan(ft), art, full=full)
    assert len(problems) == 1 and problem in problems[0] and ft.id in problems[0], problems
    lines: list[str] = []
    assert prune_lying_markers([_as_plan(ft)], art, full=full, log=lines.append) == [ft.id]
    assert not marker.exists() and len(lines) == 1 and ft.id in lines[0]
    again = JobRunner(smoke_jobs, artifacts=art).run(ft.id)
    assert [e["computed"] for e in again["entries"]] == [recomputed]
    assert marker_problems(_as_plan(ft), art, full=True) == []  # the store holds what the marker says
    assert len(list(path.parent.glob("[!.]*.safetensors"))) == 1 and not list(art.rglob("*.tmp"))


def test_a_read_only_render_names_every_missing_or_stale_artifact(smoke_jobs, done_store, tmp_path):
    from repro.runner.workflow import StoreIncomplete, check_render

    graft, ft = first_graft(smoke_jobs)
    art = tmp_path / "art"
    shutil.copytree(done_store, art)
    nb = graft.notebooks[0]
    jobs = [_as_plan(ft), _as_plan(graft)]
    check_render(nb, "smoke", root=art, jobs=jobs)  # a complete store: the render may start
    _entry_path(art, ft.id).with_suffix(".safetensors").unlink()
    _other_code(_entry_path(art, graft.id).with_suffix(".json"))
    before = sorted(p for p in art.rglob("*"))
    with pytest.raises(StoreIncomplete) as e:
        check_render(nb, "smoke", root=art, jobs=jobs)
    msg = str(e.value)
    assert "\n" not in msg and "2 artifact(s)" in msg and ft.id in msg and graft.id in msg and "stale" in msg
    assert sorted(p for p in art.rglob("*")) == before  # the check writes nothing


def test_a_node_dies_between_jobs_and_the_workflow_resumes(smoke_jobs, done_store, tmp_path):
    """The fine-tune ran and was marked done; the node died before the graft's write finished (a temp file left, no
    marker). A fresh node runs only what is pending, nothing twice, and no render starts before the store is whole."""
    from repro.runner.workflow import StoreIncomplete, check_render, pending

    graft, ft = first_graft(smoke_jobs)
    art = tmp_path / "art"
    JobRunner(smoke_jobs, artifacts=art).run(ft.id)
    tau = _entry_path(art, ft.id).with_suffix(".safetensors")
    tau_stat = tau.stat()
    (art / "smoke" / "graft").mkdir(parents=True)
    key = _entry_path(done_store, graft.id).name  # the graft's store key (the same inputs as in done_store)
    (art / "smoke" / "graft" / f".{key}.safetensors.x1.tmp").write_bytes(b"half")
    jobs = [_as_plan(ft), _as_plan(graft)]
    assert pending(jobs, art) == [graft.id]
    with pytest.raises(StoreIncomplete, match=rf"1 artifact\(s\) .*{graft.id}: not run"):
        check_render(graft.notebooks[0], "smoke", root=art, jobs=jobs)
    runner = JobRunner(smoke_jobs, artifacts=art)  # the next node
    marks = [runner.run(i) for i in pending(jobs, art)]
    assert [[e["computed"] for e in m["entries"]] for m in marks] == [[True]]
    assert (tau.stat().st_ino, tau.stat().st_mtime_ns) == (tau_stat.st_ino, tau_stat.st_mtime_ns)  # not recomputed
    assert pending(jobs, art) == [] and not list(art.rglob("*.tmp"))
    check_render(graft.notebooks[0], "smoke", root=art, jobs=jobs)
    assert len(list(art.glob("smoke/*/[!.]*.safetensors"))) == 2


OOM = ("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.20 GiB is "
       "free. Of the allocated memory 75.3 GiB is allocated by PyTorch")


@pytest.mark.parametrize("error", [torch.OutOfMemoryError, torch.cuda.OutOfMemoryError], ids=["torch", "torch.cuda"])
def test_gpu_out_of_memory_is_one_line_and_nothing_is_stored(error, smoke_jobs, tmp_path, capsys, monkeypatch):
    """The allocator's error at the training loop's forward pass (simulated on the CPU). Before: a traceback of the
    allocator's message, with neither the job nor its batch size."""
    import repro.core.finetune as finetune

    _, ft = first_graft(smoke_jobs)

    def allocate(*a, **k):
        raise error(OOM)
    monkeypatch.setattr(finetune, "forward", allocate)
    art = tmp_path / "art"
    assert main([ft.id, "--profile", "smoke", "--artifacts", str(art)]) == 4
    err = capsys.readouterr().err
    lines = [line for line in err.replace("\r", "\n").splitlines() if line.startswith("repro job run")]
    assert len(lines) == 1 and "Traceback" not in err, err  # (beside the progress bar) one line
    batch = ft.kwargs["recipe"]["batch_size"]
    assert f"finetune {ft.id}: out of GPU memory (batch size {batch}; asked for 2.00 GiB; the GPU holds 79.10 GiB, " \
           "1.20 GiB free)" in err, err
    assert not [f for f in art.rglob("*") if f.is_file() and not f.name.endswith(".lock")]  # nothing half-written


def test_the_slurm_retry_asks_for_more():
    from repro.runner.workflow import GPU_MODELS, gpu_model, memory_mb

    job = {"kind": "finetune", "cost": 1e6}
    assert [gpu_model(a) for a in (1, 2, 3, 9)] == [*GPU_MODELS, GPU_MODELS[-1]]
    assert gpu_model(2, ["v100", "a100"]) == "a100" and memory_mb(job, 2) > memory_mb(job, 1)
    snakefile = (Path(__file__).resolve().parents[1] / "workflow" / "Snakefile").read_text()
    assert snakefile.count("gpu_model=lambda wc, attempt: gpu_model(attempt, GPUS)") == 2
    with pytest.raises(ValueError, match="gpu_models is empty"):
        gpu_model(1, [])
