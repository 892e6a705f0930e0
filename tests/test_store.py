"""The artifact store cannot lie: corrupt and stale entries are recomputed, killed writes resume cleanly,
non-finite results are never cached, and ``repro cache`` manages the store."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

from repro import artifacts
from repro.artifacts import ArtifactStore
from repro.core.checks import NonFiniteError
from repro.core.masks import Mask
from repro.workbench import JSON, MASK, TENSORS, VECTOR, Workbench

SRC = Path(__file__).resolve().parents[1] / "src"


def bare_workbench(root: Path) -> Workbench:
    """A Workbench without a model: enough for :meth:`Workbench.cached` (θ_pre is empty)."""
    wb = Workbench.__new__(Workbench)
    wb.store, wb.pre, wb.model, wb.device = ArtifactStore(root), {}, torch.nn.Module(), torch.device("cpu")
    return wb


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def vector_compute(calls: list):
    def compute():
        calls.append(1)
        g = torch.Generator().manual_seed(0)
        return {"w": torch.randn(4, 3, generator=g), "b": torch.zeros(3)}, {"train": {"seconds": 1.0}}
    return compute


def test_cached_computes_once_and_returns_what_it_stored(tmp_path):
    wb, calls = bare_workbench(tmp_path), []
    v1, m1 = wb.cached("taskvec", {"a": 1}, vector_compute(calls), VECTOR)
    v2, m2 = wb.cached("taskvec", {"a": 1}, vector_compute(calls), VECTOR)
    assert len(calls) == 1 and torch.equal(v1["w"], v2["w"]) and m1 == m2
    assert m1["config"] == {"a": 1} and m1["train"] == {"seconds": 1.0}
    assert len(m1["_store"]["sha256"]) == 64 and "repro.core" in m1["_store"]["code"]["modules"]
    assert m1["_store"]["code"]["torch"] == torch.__version__.split("+")[0] or m1["_store"]["code"]["torch"]


@pytest.mark.parametrize("damage", ["bitflip", "truncate-tensors", "truncate-json", "edit-value", "drop-json"])
def test_corrupt_artifact_is_recomputed_with_one_line_notice(tmp_path, caplog, damage):
    wb, calls = bare_workbench(tmp_path), []
    wb.cached("taskvec", {"a": 1}, vector_compute(calls), VECTOR)
    path = wb.store.path("taskvec", {"a": 1})
    st, js = path.with_suffix(".safetensors"), path.with_suffix(".json")
    good = st.read_bytes()
    if damage == "bitflip":
        data = bytearray(good)
        data[-3] ^= 0x01
        st.write_bytes(bytes(data))
    elif damage == "truncate-tensors":
        st.write_bytes(good[: len(good) // 2])
    elif damage == "truncate-json":
        js.write_text(js.read_text()[:40])
    elif damage == "edit-value":  # a value edited in place, keeping the file valid safetensors
        from safetensors.torch import load_file, save_file
        t = load_file(str(st))
        name = next(n for n, x in t.items() if x.is_floating_point() and x.numel())
        t[name] += 1.0
        save_file(t, str(st))
    else:
        js.unlink()
    with caplog.at_level(logging.WARNING, logger="repro.artifacts"):
        v, _ = wb.cached("taskvec", {"a": 1}, vector_compute(calls), VECTOR)
    assert len(calls) == 2 and st.read_bytes() == good
    notices = [r.getMessage() for r in caplog.records if r.name == "repro.artifacts"]
    assert len(notices) == 1 and "\n" not in notices[0] and "recomputing" in notices[0]
    want = {"bitflip": "sha256 differs", "truncate-tensors": "sha256 differs", "truncate-json": "JSON does not parse",
            "edit-value": "sha256 differs", "drop-json": "incomplete"}[damage]
    assert want in notices[0]
    quarantined = list((tmp_path / ".quarantine").rglob("*.safetensors")) if damage != "drop-json" else []
    assert (len(quarantined) == 1) == (damage != "drop-json")


def test_stale_code_invalidates_the_artifact_it_made(tmp_path, monkeypatch, caplog):
    """Editing a training function's code (not its docstring) makes its artifacts stale, keys unchanged."""
    pkg = tmp_path / "pkg" / "repro"
    shutil.copytree(SRC / "repro" / "core", pkg / "core")
    monkeypatch.setattr(artifacts, "PACKAGE_DIR", pkg)
    artifacts.code_fingerprint.cache_clear()
    wb, calls = bare_workbench(tmp_path / "store"), []
    code = ("repro.core.finetune",)
    key = wb.store.path("taskvec", {"a": 1}).name
    wb.cached("taskvec", {"a": 1}, vector_compute(calls), VECTOR, code=code)
    source = pkg / "core" / "finetune.py"
    text = source.read_text()
    # a docstring-only edit keeps the artifact
    source.write_text(text.replace('"""The one training loop', '"""The one (and only) training loop', 1))
    artifacts.code_fingerprint.cache_clear()
    wb.cached("taskvec", {"a": 1}, vector_compute(calls), VECTOR, code=code)
    assert len(calls) == 1
    # a code edit of the training function (e.g. the learning rate patched to 0) invalidates it
    assert "lr = lr_at(step, recipe)" in text
    source.write_text(text.replace("lr = lr_at(step, recipe)", "lr = 0.0 * lr_at(step, recipe)", 1))
    artifacts.code_fingerprint.cache_clear()
    with caplog.at_level(logging.WARNING, logger="repro.artifacts"):
        _, meta = wb.cached("taskvec", {"a": 1}, vector_compute(calls), VECTOR, code=code)
    artifacts.code_fingerprint.cache_clear()
    assert len(calls) == 2 and wb.store.path("taskvec", {"a": 1}).name == key
    assert any("stale: the code of repro.core.finetune changed" in r.getMessage() for r in caplog.records)
    assert artifacts.stale_reason(meta) is None


def test_entries_without_fingerprint_are_stale(tmp_path, caplog):
    wb, calls = bare_workbench(tmp_path), []
    path = wb.store.path("taskvec", {"a": 1})
    from repro.core.taskvec import TaskVector
    TaskVector({"w": torch.ones(2)}).save(path, {"config": {"a": 1}})  # no code fingerprint: an old entry
    with caplog.at_level(logging.WARNING, logger="repro.artifacts"):
        v, _ = wb.cached("taskvec", {"a": 1}, vector_compute(calls), VECTOR)
    assert len(calls) == 1 and "w" in v and v["w"].shape == (4, 3)
    assert any("written before checksums" in r.getMessage() for r in caplog.records)


def test_nan_training_stops_with_the_step_and_caches_nothing(tmp_path, tiny_model, sent_examples, monkeypatch):
    """A NaN injected into training (the learning rate of step 3) stops the run at the next loss: step 4."""
    from repro.core import finetune
    from repro.profiles import FinetuneRecipe

    real = finetune.lr_at
    monkeypatch.setattr(finetune, "lr_at", lambda step, recipe: float("nan") if step == 2 else real(step, recipe))
    wb = bare_workbench(tmp_path)
    recipe = FinetuneRecipe(optimizer="sgd", lr=1e-2, batch_size=4, steps=8, eval_every=0)

    def compute():
        finetune.train(tiny_model, {"sent": sent_examples}, recipe, tiny_model.graftable_names(), progress=False)
        return {n: p.detach().clone() for n, p in tiny_model.named_parameters()}, {}

    with pytest.raises(NonFiniteError, match=r"fine-tuning on sent: the loss at step 4: NaN values"):
        wb.cached("taskvec", {"a": 1}, compute, VECTOR)
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and ".locks" not in p.parts]
    assert not any(p.requires_grad for p in tiny_model.parameters())


def test_nonfinite_result_is_never_cached(tmp_path):
    wb = bare_workbench(tmp_path)
    with pytest.raises(NonFiniteError, match=r"taskvec artifact \(not cached\): infinite values in 'w'"):
        wb.cached("taskvec", {"a": 1}, lambda: ({"w": torch.tensor([1.0, float("inf")])}, {}), VECTOR)
    assert not list(tmp_path.glob("taskvec/*"))


def test_codecs_round_trip(tmp_path):
    wb = bare_workbench(tmp_path)
    mask = Mask({"w": torch.tensor([True, False, True])})
    m, meta = wb.cached("mask", {"m": 1}, lambda: (mask, {"seconds": 2}), MASK)
    assert m == mask and meta["seconds"] == 2 and meta["kind"] == "mask"
    t, _ = wb.cached("adapter", {"t": 1}, lambda: ({"x": torch.arange(3.0)}, {}), TENSORS)
    assert torch.equal(t["x"], torch.arange(3.0))
    j, jm = wb.cached("p2-arith", {"j": 1}, lambda: ({"rows": [1, 2.5]}, {"n": 3}), JSON)
    j2, _ = wb.cached("p2-arith", {"j": 1}, lambda: pytest.fail("recomputed"), JSON)
    assert j == j2 == {"rows": [1, 2.5]} and jm["n"] == 3


def test_digests_hash_the_whole_content():
    """Key scheme 2: two vectors that differ anywhere (here: 1,024 signs flipped past the first 4096 bytes, so the
    old sampled digest, first 4096 bytes + sum |t|, collided) get different keys; dtype and shape count too."""
    import hashlib

    g = torch.Generator().manual_seed(1)
    a = torch.randn(4096, generator=g)
    b = a.clone()
    b[2048:3072] *= -1  # bytes 8192..12288: past any 4096-byte prefix, same sum |t|

    def old(vec):
        h = hashlib.sha256()
        for n in sorted(vec):
            h.update(n.encode())
            h.update(vec[n].float().numpy().tobytes()[:4096])
            h.update(str(float(vec[n].abs().sum())).encode())
        return h.hexdigest()[:16]

    assert old({"w": a}) == old({"w": b})  # the collision the old key had
    assert artifacts.tensor_digest({"w": a}) != artifacts.tensor_digest({"w": b})
    assert artifacts.tensor_digest({"w": a}) == artifacts.tensor_digest({"w": a.clone()})  # deterministic
    assert artifacts.tensor_digest({"w": a}) != artifacts.tensor_digest({"w": a.reshape(64, 64)})
    assert artifacts.tensor_digest({"w": a}) != artifacts.tensor_digest({"w": a.double()})
    assert artifacts.tensor_digest({"w": a.bfloat16()}) != artifacts.tensor_digest({"w": b.bfloat16()})
    m1 = Mask({"x": torch.tensor([True, False, False, False])})
    m2 = Mask({"x": torch.tensor([[True, False], [False, False]])})  # same index list, another shape
    assert m1.digest() != m2.digest() and m1.digest() == Mask({"x": torch.tensor([1, 0, 0, 0])}).digest()


def test_old_keyed_entries_are_retired_once_with_one_line_each(tmp_path, caplog):
    """Entries written under the old key scheme are moved to the quarantine once, one line each; none is reused."""
    wb = bare_workbench(tmp_path)
    v, _ = wb.cached("taskvec", {"a": 1}, vector_compute([]), VECTOR)
    js = wb.store.path("taskvec", {"a": 1}).with_suffix(".json")
    meta = __import__("json").loads(js.read_text())
    del meta["_store"]["keys"]  # what a sidecar of the old scheme looks like
    js.write_text(__import__("json").dumps(meta))
    assert artifacts.check_entry(js.with_suffix("")).startswith("stale: keyed the old way")
    calls = []
    wb.cached("taskvec", {"a": 1}, vector_compute(calls), VECTOR)  # never reused, even under the same key
    assert calls == [1]
    meta = __import__("json").loads(js.read_text())
    del meta["_store"]["keys"]
    js.write_text(__import__("json").dumps(meta))
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="repro.artifacts"):
        assert len(wb.store.retire_old_keys()) == 1
        assert wb.store.retire_old_keys() == []  # once: the marker is there
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "stale: keyed the old way" in lines[0] and "\n" not in lines[0]
    assert (tmp_path / artifacts.REKEYED_MARKER).exists() and not js.exists()


@pytest.mark.slow
def test_lock_serialises_two_processes(tmp_path):
    """A second process waits for the lock, then loads what the first computed (computed once in all)."""
    script = textwrap.dedent(f"""
        import sys, time, torch
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_store import bare_workbench
        from repro.workbench import VECTOR
        wb = bare_workbench(__import__("pathlib").Path(sys.argv[1]))
        def compute():
            print("computing", flush=True)
            time.sleep(1.5)
            return {{"w": torch.ones(2)}}, {{}}
        wb.cached("taskvec", {{"a": 1}}, compute, VECTOR)
    """)
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    procs = [subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], env=env, stdout=subprocess.PIPE,
                              text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert sum(o.count("computing") for o in outs) == 1


KILL_WORKER = textwrap.dedent("""
    import sys, torch
    sys.path.insert(0, {tests!r})
    from test_store import bare_workbench
    from repro.core.masks import Mask
    from repro.workbench import JSON, MASK, TENSORS, VECTOR
    wb = bare_workbench(__import__("pathlib").Path(sys.argv[1]))
    g = torch.Generator().manual_seed(0)
    values = [torch.randn(64, 8, generator=g) for _ in range(3)]
    jobs = [("taskvec", VECTOR, lambda: ({{"w": values[0], "z": torch.zeros(3)}}, {{"n": 0}})),
            ("mask", MASK, lambda: (Mask({{"w": values[1] > 0}}), {{"n": 1}})),
            ("adapter", TENSORS, lambda: ({{"a": values[2]}}, {{"n": 2}})),
            ("p2-arith", JSON, lambda: ({{"rows": values[2].sum(0).tolist()}}, {{"n": 3}}))]
    for i, (kind, codec, fn) in enumerate(jobs):
        def compute(fn=fn, i=i):
            print("compute", i, flush=True)
            return fn()
        wb.cached(kind, {{"job": i}}, compute, codec)
    print("done", flush=True)
""")


def _run_worker(root: Path, kill_at: tuple[int, float] | None = None, slow: float = 0.0) -> bool:
    """Run the worker; with ``kill_at=(job, seconds)`` SIGKILL it that long after job's compute starts."""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    if slow:
        env[artifacts.SLOW_WRITE_ENV] = str(slow)
    script = KILL_WORKER.format(tests=str(Path(__file__).parent))
    p = subprocess.Popen([sys.executable, "-c", script, str(root)], env=env, stdout=subprocess.PIPE, text=True)
    if kill_at is None:
        out = p.communicate(timeout=300)[0]
        return "done" in out
    for line in p.stdout:
        if line.strip() == f"compute {kill_at[0]}":
            time.sleep(kill_at[1])
            p.send_signal(signal.SIGKILL)
            break
    p.wait(timeout=60)
    return p.returncode == -signal.SIGKILL


@pytest.mark.slow
def test_sigkill_at_several_points_resumes_to_identical_artifacts(tmp_path):
    ref, run = tmp_path / "ref", tmp_path / "run"
    assert _run_worker(ref)
    # each atomic write sleeps 1 s before its rename: +0.4 s is inside the tensor file's write, +1.5 s inside
    # the sidecar's (tensor file renamed, JSON not yet), JSON artifacts have a single write
    saw_temp = 0
    for job, at in [(0, 0.4), (1, 1.5), (2, 1.5), (3, 0.4)]:
        assert _run_worker(run, kill_at=(job, at), slow=1.0)
        saw_temp += bool(list(run.rglob(".*.tmp")))
    assert saw_temp >= 3  # the kills did land mid-write
    assert _run_worker(run)
    got = {k: v for k, v in files(run).items() if not k.startswith(".locks")}
    want = {k: v for k, v in files(ref).items() if not k.startswith(".locks")}
    assert got == want  # identical artifacts, no temp files, nothing quarantined


def test_cache_cli_ls_verify_clear(tmp_path, capsys):
    from repro.runner.cli import main

    root = tmp_path / "smoke"
    wb = bare_workbench(root)
    wb.cached("taskvec", {"a": 1}, vector_compute([]), VECTOR)
    wb.cached("mask", {"m": 1}, lambda: (Mask({"w": torch.tensor([True])}), {}), MASK)
    (root / "taskvec" / ".deadbeef.safetensors.abc.tmp").write_bytes(b"x")  # a killed write's temp file
    args = ["--profile", "smoke", "--artifacts", str(tmp_path)]
    assert main(["cache", "verify", *args]) == 0
    out = capsys.readouterr().out
    assert "2 entries" in out and out.count(" ok") == 2 and "1 temp files of killed writes" in out
    st = wb.store.path("taskvec", {"a": 1}).with_suffix(".safetensors")
    st.write_bytes(st.read_bytes()[:-1])
    assert main(["cache", "verify", *args]) == 1
    assert "sha256 differs" in capsys.readouterr().out
    assert main(["cache", "ls", *args, "--kind", "nope"]) == 2
    assert main(["cache", "clear", *args, "--stale"]) == 0
    assert "removed 1 entry" in capsys.readouterr().out
    assert main(["cache", "ls", *args]) == 0
    out = capsys.readouterr().out
    assert "mask" in out and "taskvec" not in out.split("\n", 1)[1] and "temp files" not in out
    assert main(["cache", "clear", *args]) == 0
    assert not [p for p in root.rglob("*") if p.is_file() and ".locks" not in p.parts]
