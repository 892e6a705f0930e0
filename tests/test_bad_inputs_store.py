"""Bad tensors, masks and artifacts: each gets one clear error naming the problem, and nothing is written.

Table-driven: every row builds its bad input in a fresh folder (``setup(tmp, model) -> call``), the folder is
snapshotted, the call must raise ``error`` with a message matching ``match``, and the folder must be unchanged
(no artifact, no temp file, no quarantine).  The data/parameter/results rows live with the runner's tests.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Callable, NamedTuple

import pytest
import torch

from repro.artifacts import ArtifactError, ArtifactStore, code_fingerprint, load_json_artifact, load_tensors, \
    save_json_artifact, save_tensors
from repro.core.checks import NonFiniteError, check_finite, check_fraction, check_pair
from repro.core.fisher import fish_masks, lota_mask
from repro.core.grafting import grafted_params, learn_graft
from repro.profiles import GraftRecipe
from repro.core.masks import Mask
from repro.core.merging import ties_merge
from repro.core.taskvec import TaskVector
from repro.workbench import VECTOR, Workbench
from repro.artifacts import KEY_SCHEME
from repro.core.finetune import train
from repro.core.merging import Ties
from repro.data import DataError, Example, load_task
from repro.p2.sensitivity.plan import sensitivity_plan
from repro.profiles import FinetuneRecipe, get_profile


class Case(NamedTuple):
    setup: Callable[[Path, object], Callable[[], object]]
    error: type[BaseException]
    match: str


def _bare(root: Path) -> Workbench:
    wb = Workbench.__new__(Workbench)
    wb.store, wb.pre, wb.model, wb.device = ArtifactStore(root), {}, torch.nn.Module(), torch.device("cpu")
    return wb


def _name_shape(model) -> tuple[str, torch.Size]:
    n = model.graftable_names()[0]
    return n, dict(model.named_parameters())[n].shape


def _stored(tmp: Path) -> Path:
    path = tmp / "taskvec" / "abc"
    TaskVector({"w": torch.arange(6.0).reshape(2, 3)}).save(path, {"config": {}})
    return path


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-2] ^= 0x10
    path.write_bytes(bytes(data))


def _json_artifact(tmp: Path) -> Path:
    path = tmp / "p2-arith" / "abc"
    save_json_artifact(path, {"acc": 0.5}, {"config": {}})
    return path


def _edit_json_value(path: Path) -> Path:
    js = path.with_suffix(".json")
    js.write_text(js.read_text().replace("0.5", "0.9"))
    return path


def _legacy_truncated(tmp: Path) -> Path:
    st = tmp / "adapter" / "abc.safetensors"
    st.parent.mkdir(parents=True)
    from safetensors.torch import save_file
    save_file({"a": torch.ones(100)}, str(st))
    st.write_bytes(st.read_bytes()[:60])
    st.with_suffix(".json").write_text('{"config": {}}')  # an entry from before checksums
    return st


def _bad_mask_indices(tmp: Path) -> Path:
    path = tmp / "mask" / "abc"
    save_tensors(path, {"w": torch.tensor([0, 7])}, {"kind": "mask", "shapes": {"w": [2, 3]}})
    return path


NAN = float("nan")
CASES: dict[str, Case] = {
    # --- tensors ---------------------------------------------------------------------------------------
    "nan-tensor": Case(lambda t, m: lambda: check_finite({"w": torch.tensor([1.0, NAN])}, "merging", 3),
                       NonFiniteError, r"merging at step 3: NaN values in 'w' \(1 of 2 entries\); lower"),
    "inf-tensor": Case(lambda t, m: lambda: check_finite({"b": torch.tensor([float("inf")])}, "Fisher"),
                       NonFiniteError, r"Fisher: infinite values in 'b'"),
    "nan-result-not-cached": Case(
        lambda t, m: lambda: _bare(t).cached("taskvec", {"a": 1}, lambda: ({"w": torch.full((2,), NAN)}, {}), VECTOR),
        NonFiniteError, r"taskvec artifact \(not cached\): NaN values in 'w'"),
    "cosine-shape-mismatch": Case(
        lambda t, m: lambda: TaskVector({"w": torch.ones(3, 1)}).cosine(TaskVector({"w": torch.ones(1, 3)})),
        ValueError, r"'w' has shape \(1, 3\) but the other vector has \(3, 1\); .*never broadcast"),
    "apply-shape-mismatch": Case(
        lambda t, m: lambda: TaskVector({"w": torch.ones(3)}).apply({"w": torch.zeros(1)}),
        ValueError, r"task vector: 'w' has shape \(3,\) but θ_pre has \(1,\)"),
    "pair-dtype-mismatch": Case(
        lambda t, m: lambda: check_pair({"w": torch.zeros(2)}, {"w": torch.zeros(2, dtype=torch.float64)}, "ckpt"),
        TypeError, r"ckpt: 'w' is torch.float64 but the pre-trained tensor is torch.float32"),
    "pair-unknown-name": Case(
        lambda t, m: lambda: check_pair({"w": torch.zeros(2)}, {"v": torch.zeros(2)}, "task vector"),
        KeyError, r"task vector: 1 tensor\(s\) not among the parameters, e.g. \['v'\]"),
    "graft-delta-shape": Case(
        lambda t, m: (lambda n, s: lambda: grafted_params(m, {n: torch.zeros(s.numel())},
                                                          {n: torch.ones(s.numel())}))(*_name_shape(m)),
        ValueError, r"Δ \(grafting\): '.*' has shape \(\d+,\) but its parameter has"),
    "graft-delta-missing-tensor": Case(
        lambda t, m: (lambda n, s: lambda: grafted_params(m, {}, Mask({n: torch.ones(s, dtype=torch.bool)})))(
            *_name_shape(m)),
        KeyError, r"Δ \(grafting: the region selects entries of tensors Δ\) lacks 1 tensor\(s\)"),
    "graft-nan-delta": Case(
        lambda t, m: (lambda n, s: lambda: learn_graft(m, "sent", {n: torch.full(s, NAN)}, [], [], 0.1,
                                                       GraftRecipe(steps=1), progress=False))(*_name_shape(m)),
        NonFiniteError, r"grafting: Δ = θ_ft − θ_pre: NaN values"),
    "merge-nan-vector": Case(
        lambda t, m: lambda: ties_merge([TaskVector({"w": torch.tensor([NAN, 1.0])})]),
        NonFiniteError, r"merging: task vector 0: NaN values in 'w'.*re-create the vector"),
    "topk-all-nan": Case(
        lambda t, m: lambda: Mask.top_k({"w": torch.tensor([NAN, NAN, 1.0])}, 2),
        ValueError, r"k=2 but only 1 of 3 scores are not NaN"),
    # --- issue 35: non-finite values in bf16 training stop the job with the step and the tensor, as in fp32
    "bf16-train-inf-parameter": Case(lambda t, m: lambda: _bf16_train(m, "inf-parameter"),
                                     NonFiniteError, r"fine-tuning on sent: the loss at step 1: NaN values in 'value'"),
    "bf16-train-nan-gradient": Case(
        lambda t, m: lambda: _bf16_train(m, "nan-gradient"),
        NonFiniteError, r"fine-tuning on sent: gradient at step 1: NaN values in 'backbone\.encoder\.layer\.0\."),
    "bf16-train-lr-blowup": Case(lambda t, m: lambda: _bf16_train(m, "lr-blowup"),
                                 NonFiniteError, r"fine-tuning on sent: the loss at step 2: NaN values"),
    # --- masks -----------------------------------------------------------------------------------------
    "mask-shape-vs-eligible": Case(
        lambda t, m: lambda: Mask({"w": torch.ones(6, dtype=torch.bool)}, {"w": (2, 3)}),
        ValueError, r"mask tensor 'w' has shape \(6,\), eligible shape \(2, 3\)"),
    "mask-apply-shape": Case(
        lambda t, m: lambda: Mask.full({"w": (2, 3)}).apply({"w": torch.ones(6)}),
        ValueError, r"mask tensor 'w' has shape \(2, 3\) but the values have \(6,\)"),
    "mask-apply-missing": Case(
        lambda t, m: lambda: Mask.full({"w": (2,), "b": (1,)}).apply({"w": torch.ones(2)}),
        KeyError, r"lacking 1 of its tensors, e.g. \['b'\]"),
    "mask-other-eligible-set": Case(
        lambda t, m: lambda: Mask.full({"w": (2,)}) | Mask.full({"w": (3,)}),
        ValueError, r"masks are over different eligible sets"),
    "mask-shape-vs-parameter": Case(
        lambda t, m: (lambda n, s: lambda: grafted_params(m, {n: torch.zeros(s)},
                                                          Mask({n: torch.ones(s.numel(), dtype=torch.bool)})))(
            *_name_shape(m)),
        ValueError, r"Δ \(grafting\): '.*' has shape \(\d+, \d+\) but the mask has \(\d+,\)"),
    "mask-indices-out-of-range": Case(lambda t, m: (lambda p: lambda: Mask.load(p))(_bad_mask_indices(t)),
                                      ValueError, r"abc: indices of 'w' fall outside its shape \(2, 3\)"),
    "density-zero": Case(lambda t, m: lambda: lota_mask({"w": torch.ones(4)}, 0.0),
                         ValueError, r"LoTA density must be in \(0, 1\], got 0.0"),
    "density-percent": Case(lambda t, m: lambda: fish_masks(m, [], "sent", None, [10.0]),
                            ValueError, r"FISH density must be in \(0, 1\], got 10.0 \(fractions, not percentages"),
    "sparsity-not-a-number": Case(lambda t, m: lambda: check_fraction("ten", "sparsity"),
                                  ValueError, r"sparsity must be a number in \(0, 1\], got 'ten'"),
    # --- artifacts -------------------------------------------------------------------------------------
    "artifact-bitflip": Case(lambda t, m: (lambda p: (_flip(p.with_suffix(".safetensors")),
                                                      lambda: load_tensors(p))[1])(_stored(t)),
                             ArtifactError, r"corrupt: the tensor file's sha256 differs"),
    "artifact-truncated-json": Case(
        lambda t, m: (lambda p: (p.with_suffix(".json").write_text('{"kind": "taskv'),
                                 lambda: TaskVector.load(p))[1])(_stored(t)),
        ArtifactError, r"corrupt: its JSON does not parse \(JSONDecodeError\)"),
    "artifact-missing-tensors": Case(
        lambda t, m: (lambda p: (p.with_suffix(".safetensors").unlink(), lambda: load_tensors(p))[1])(_stored(t)),
        ArtifactError, r"incomplete: abc.safetensors is missing"),
    "artifact-legacy-truncated": Case(lambda t, m: (lambda p: lambda: load_tensors(p))(_legacy_truncated(t)),
                                      ArtifactError, r"corrupt: unreadable safetensors"),
    "json-artifact-edited": Case(lambda t, m: (lambda p: lambda: load_json_artifact(p))(
        _edit_json_value(_json_artifact(t))), ArtifactError, r"corrupt: its content's sha256 differs"),
    "wrong-artifact-kind": Case(lambda t, m: (lambda p: lambda: Mask.load(p))(_stored(t)),
                                ValueError, r"is not a mask artifact \(kind='taskvec'\)"),
    "fingerprint-foreign-module": Case(lambda t, m: lambda: code_fingerprint(("numpy",)),
                                       ValueError, r"code fingerprints cover repro modules only, got 'numpy'"),
    # --- issue 25: sidecars whose metadata was edited (before: applied as-is, a float16 or reshaped τ came back)
    "sidecar-dtype-edited": Case(lambda t, m: (lambda p: lambda: TaskVector.load(p))(
        _edit_sidecar(_stored(t), '"float32"', '"float16"')),
        ArtifactError, r"abc.safetensors: corrupt: its .json metadata \(shapes, dtypes, ...\) differs"),
    "sidecar-shape-edited": Case(lambda t, m: (lambda p: lambda: load_tensors(p))(
        _edit_sidecar(_stored(t), '"w": [\n   2,', '"w": [\n   1,\n   2,')),
        ArtifactError, r"differs from the checksum it records; it was edited"),
    "sidecar-checksum-dropped": Case(lambda t, m: (lambda p: lambda: load_tensors(p))(_checksum_dropped(t)),
                                     ArtifactError, r"lost the checksum of its metadata \(meta_sha256\)"),
    # --- issue 25: masks in train (before: a (31, 32) mask trained entries of a (32, 32) weight in the wrong
    # layout), degenerate training requests (before: IndexError, "Total of weights must be greater than zero")
    "train-mask-wrong-shape": Case(
        lambda t, m: (lambda n, s: lambda: train(m, {"sent": EX}, RECIPE, Mask({n: torch.ones(s[0] - 1, *s[1:])})))(
            *_name_shape(m)),
        ValueError, r"trainable mask: tensor '.*' has shape \(\d+, \d+\) but the parameter has"),
    "train-mask-missing-parameter": Case(
        lambda t, m: lambda: train(m, {"sent": EX}, RECIPE, Mask({"no.such.weight": torch.ones(2)})),
        KeyError, r"trainable mask: 1 tensor\(s\) are not parameters of the model, e.g. \['no.such.weight'\]"),
    "train-batch-size-zero": Case(
        lambda t, m: lambda: train(m, {"sent": EX}, FinetuneRecipe(batch_size=0, steps=1), m.graftable_names()),
        ValueError, r"FinetuneRecipe.batch_size must be an integer >= 1, got 0"),
    "train-empty-example-list": Case(
        lambda t, m: lambda: train(m, {"sent": []}, RECIPE, m.graftable_names()),
        ValueError, r"train_data: task\(s\) \['sent'\] have no training examples"),
    "learn-graft-delta-shape": Case(
        lambda t, m: (lambda n, s: lambda: learn_graft(m, "sent", {n: torch.zeros(s.numel())}, EX, EX, 0.1,
                                                       GraftRecipe(steps=1), progress=False))(*_name_shape(m)),
        ValueError, r"Δ \(learn_graft\): '.*' has shape \(\d+,\) but its parameter has \(\d+, \d+\)"),
    "graft-lr-overflow": Case(lambda t, m: lambda: GraftRecipe(lr=1e300),
                              ValueError, r"GraftRecipe: lr must be in \(0, 1e30\], got 1e\+300"),
    # --- issue 25: NaN through arithmetic (before: τ + τ_nan was a NaN vector, no error)
    "arith-nan-operand": Case(
        lambda t, m: lambda: TaskVector({"w": torch.ones(2)}) + TaskVector({"w": torch.tensor([1.0, NAN])}),
        NonFiniteError, r"task-vector arithmetic τ_a \+ τ_b \(operand 2\): NaN values in 'w'"),
    "arith-inf-coefficient": Case(lambda t, m: lambda: TaskVector({"w": torch.ones(2)}) * float("inf"),
                                  NonFiniteError, r"α·τ with α = inf; α must be a finite number"),
    # --- issue 25: degenerate requests (before: an empty mask, an untrimmed merge, "every input")
    "top-fraction-zero": Case(lambda t, m: lambda: Mask.top_fraction({"w": torch.ones(10)}, 0.0),
                              ValueError, r"fraction 0 selects no entry of 10; ask for a fraction in \(0, 1\]"),
    "top-fraction-rounds-to-empty": Case(
        lambda t, m: lambda: _warning_as_error(lambda: Mask.top_fraction({"w": torch.ones(10)}, 1e-9)),
        RuntimeWarning, r"fraction 1e-09 of 10 entries selects none \(k = int\(fraction · 10\) = 0\)"),
    "ties-keep-above-one": Case(lambda t, m: lambda: ties_merge([TaskVector({"w": torch.ones(2)})], keep=1.5),
                                ValueError, r"TIES keep \(None = no trim\) must be in \(0, 1\], got 1.5"),
    "ties-keep-zero": Case(lambda t, m: lambda: Ties(keep=0.0),
                           ValueError, r"TIES keep \(None = no trim\) must be in \(0, 1\], got 0.0"),
    "n-fisher-zero": Case(lambda t, m: lambda: sensitivity_plan(get_profile("smoke"), n_fisher=0),
                          ValueError, r"n_fisher must be >= 1 \(training inputs per task for the Fisher\), got 0"),
    # --- issue 25: data paths that pointed the wrong way (before: "no folder <file>/SST-2", a missing file)
    "data-dir-is-a-file": Case(lambda t, m: (lambda f: lambda: load_task("SST-2", get_profile("smoke"), data_dir=f))(
        _file(t)), DataError, r"data folder .*/notes.txt is a file, not a folder; pass --data with the folder"),
    "data-dir-symlink-loop": Case(
        lambda t, m: (lambda f: lambda: load_task("SST-2", get_profile("smoke"), data_dir=f))(_loop(t / "data")),
        DataError, r"data folder .*/data is a symlink that loops back on itself"),
    "task-folder-symlink-loop": Case(
        lambda t, m: (lambda d: lambda: load_task("SST-2", get_profile("smoke"), data_dir=d))(_task_loop(t)),
        DataError, r"task folder .*/SST-2 is a symlink that loops back on itself"),
}


def _edit_sidecar(path: Path, old: str, new: str) -> Path:
    js = path.with_suffix(".json")
    text = js.read_text()
    assert old in text, text
    js.write_text(text.replace(old, new, 1))
    return path


def _checksum_dropped(tmp: Path) -> Path:
    import json

    path = tmp / "taskvec" / "abc"
    TaskVector({"w": torch.ones(3)}).save(path, {"config": {}, "_store": {"keys": KEY_SCHEME}})
    meta = json.loads(path.with_suffix(".json").read_text())
    del meta["_store"]["meta_sha256"]
    path.with_suffix(".json").write_text(json.dumps(meta))
    return path


def _warning_as_error(call: Callable[[], object]) -> object:
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        return call()


def _file(tmp: Path) -> Path:
    (tmp / "notes.txt").write_text("not a folder\n")
    return tmp / "notes.txt"


def _loop(link: Path) -> Path:
    os.symlink(link, link)
    return link


def _task_loop(tmp: Path) -> Path:
    (tmp / "data").mkdir()
    _loop(tmp / "data" / "SST-2")
    return tmp / "data"


EX = [Example("a good film", 1), Example("a bad film", 0)]
RECIPE = FinetuneRecipe(steps=1, batch_size=2, eval_every=0)


def _bf16_train(model, fault: str) -> object:
    """A bf16-autocast training run (the model's ``precision``, as on CUDA) with one fault injected."""
    model.precision = "bf16"
    names = model.graftable_names()
    params = dict(model.named_parameters())
    if fault == "inf-parameter":
        with torch.no_grad():
            params[names[3]].view(-1)[0] = float("inf")
    elif fault == "nan-gradient":
        params[names[5]].register_hook(lambda g: g * float("nan"))
    recipe = FinetuneRecipe(steps=3, batch_size=2, eval_every=0, optimizer="sgd",
                            lr=1e30 if fault == "lr-blowup" else 1e-3)
    return train(model, {"sent": EX}, recipe, names, progress=False)


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_table_has_enough_distinct_inputs():
    assert len(CASES) >= 22 and len({c.match for c in CASES.values()}) == len(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_is_rejected_and_nothing_is_written(name, tmp_path, tiny_model):
    case = CASES[name]
    call = case.setup(tmp_path, tiny_model)
    before = _snapshot(tmp_path)
    with pytest.raises(case.error, match=case.match) as info:
        call()
    assert "\n" not in str(info.value)  # one line
    after = {k: v for k, v in _snapshot(tmp_path).items() if not k.startswith(".locks")}
    assert after == before, f"{name}: files changed: {sorted(set(after) ^ set(before))}"


# --------------------------------------------------------------------------------------------------------
# issue 25: where a wrong number was possible, the right number now (each row asserts it; the store holds only
# what the right computation wrote)
# --------------------------------------------------------------------------------------------------------
def _sst2_folder(root: Path, flip: bool = False) -> Path:
    import json

    d = root / "SST-2"
    d.mkdir(parents=True, exist_ok=True)
    pos = [f"a great film number {i}" for i in range(20)]
    neg = [f"a dull film number {i}" for i in range(20)]
    rows = [{"text": t, "label": int(not flip)} for t in pos] + [{"text": t, "label": int(flip)} for t in neg]
    (d / "LABELS.json").write_text(json.dumps(["negative", "positive"]))
    (d / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (d / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[::4]))
    return root


def _signs_flipped_past_prefix(tmp: Path, model) -> None:
    """Two task vectors that differ only by 1,024 sign flips past the first 4096 bytes get different keys, so the
    second computation is not the first one's cached result (before: same digest, the mask of Δ came back for
    Δ′)."""
    from repro.artifacts import tensor_digest

    g = torch.Generator().manual_seed(0)
    a = torch.randn(4096, generator=g)
    b = a.clone()
    b[2048:3072] *= -1
    wb, calls = _bare(tmp), []

    def compute(v):
        return lambda: (calls.append(1), ({"w": v.clone()}, {}))[1]
    first, _ = wb.cached("graft", {"vector": tensor_digest({"w": a})}, compute(a), VECTOR)
    second, _ = wb.cached("graft", {"vector": tensor_digest({"w": b})}, compute(b), VECTOR)
    assert len(calls) == 2 and torch.equal(first["w"], a) and torch.equal(second["w"], b)
    assert len(list((tmp / "graft").glob("*.safetensors"))) == 2


def _flipped_labels_retrain(tmp: Path, model) -> None:
    """A --data folder whose train.jsonl was edited in place (labels flipped) retrains under a new key (before: the
    τ trained on the old file came back)."""
    data, art = _sst2_folder(tmp / "data"), tmp / "artifacts"
    tau1 = Workbench("smoke", data_dir=data, artifacts_dir=art).finetune("SST-2")
    again = Workbench("smoke", data_dir=data, artifacts_dir=art)
    assert all(torch.equal(tau1[n], v) for n, v in again.finetune("SST-2").items())  # unchanged data: cached
    _sst2_folder(tmp / "data", flip=True)
    wb = Workbench("smoke", data_dir=data, artifacts_dir=art)
    tau2 = wb.finetune("SST-2")
    assert any(not torch.equal(tau1[n], tau2[n]) for n in tau1)  # retrained on the flipped labels
    assert len(list((art / "smoke" / "taskvec").glob("*.safetensors"))) == 2
    moved = _sst2_folder(tmp / "moved")  # the same content elsewhere: the key holds content, not the path
    assert Workbench("smoke", data_dir=moved, artifacts_dir=art).data_tag != wb.data_tag
    _sst2_folder(tmp / "moved", flip=True)
    assert Workbench("smoke", data_dir=moved, artifacts_dir=art).data_tag == wb.data_tag


def _edited_sidecar_recomputed(tmp: Path, model) -> None:
    """The store rejects an edited sidecar (dtype float32 → float16), quarantines it and recomputes the float32 τ
    (before: a float16 τ came back)."""
    wb, calls = _bare(tmp), []
    value = {"w": torch.arange(6.0).reshape(2, 3) / 7}
    wb.cached("taskvec", {"a": 1}, lambda: (calls.append(1), (dict(value), {}))[1], VECTOR)
    _edit_sidecar(wb.store.path("taskvec", {"a": 1}), '"float32"', '"float16"')
    again, _ = wb.cached("taskvec", {"a": 1}, lambda: (calls.append(1), (dict(value), {}))[1], VECTOR)
    assert len(calls) == 2 and again["w"].dtype == torch.float32 and torch.equal(again["w"], value["w"])
    assert len(list((tmp / ".quarantine" / "taskvec").iterdir())) == 1


def _mask_shape_list_equals_tuple(tmp: Path, model) -> None:
    """A Mask over shape [2] equals one over (2,) (before: unequal, so a cached mask never matched)."""
    assert Mask({"w": torch.ones(2, dtype=torch.bool)}, {"w": [2]}) == Mask({"w": torch.ones(2, dtype=torch.bool)},
                                                                             {"w": (2,)})


def _stray_file_in_store(tmp: Path, model) -> None:
    """A stray NOTES.txt in a kind folder is no entry: `repro cache verify` passes and `clear --stale` removes
    nothing (before: verify failed, and clear --stale said "removed 1 entry" but deleted nothing)."""
    from repro.runner.cli import main

    wb = _bare(tmp / "smoke")
    wb.cached("taskvec", {"a": 1}, lambda: ({"w": torch.ones(2)}, {}), VECTOR)
    (tmp / "smoke" / "taskvec" / "NOTES.txt").write_text("my notes\n")
    assert main(["cache", "verify", "--profile", "smoke", "--artifacts", str(tmp)]) == 0
    assert main(["cache", "clear", "--stale", "--profile", "smoke", "--artifacts", str(tmp)]) == 0
    assert (tmp / "smoke" / "taskvec" / "NOTES.txt").exists()
    assert len(list((tmp / "smoke" / "taskvec").glob("*.safetensors"))) == 1


def _clear_stale_deletes(tmp: Path, model) -> None:
    """`repro cache clear --stale` deletes the entries it counts (an old-keyed one here) and keeps the good one."""
    import json

    from repro.runner.cli import main

    wb = _bare(tmp / "smoke")
    for a in (1, 2):
        wb.cached("taskvec", {"a": a}, lambda: ({"w": torch.ones(2)}, {}), VECTOR)
    js = wb.store.path("taskvec", {"a": 2}).with_suffix(".json")
    meta = json.loads(js.read_text())
    del meta["_store"]["keys"]
    js.write_text(json.dumps(meta))
    assert main(["cache", "clear", "--stale", "--profile", "smoke", "--artifacts", str(tmp)]) == 0
    assert not js.exists() and wb.store.path("taskvec", {"a": 1}).with_suffix(".json").exists()
    assert main(["cache", "verify", "--profile", "smoke", "--artifacts", str(tmp)]) == 0


def _old_keyed_entry_retired_once(tmp: Path, model) -> None:
    """An entry keyed the old way (no key scheme in its sidecar) is never reused, even under an equal key, and a
    store is swept once, one line per such entry (before: the sampled-digest key was trusted)."""
    import json
    import logging

    from repro.artifacts import REKEYED_MARKER, check_entry

    wb, calls = _bare(tmp), []
    for a in (1, 2):
        wb.cached("taskvec", {"a": a}, lambda: (calls.append(1), ({"w": torch.ones(2)}, {}))[1], VECTOR)
    for a in (1, 2):
        js = wb.store.path("taskvec", {"a": a}).with_suffix(".json")
        meta = json.loads(js.read_text())
        del meta["_store"]["keys"]
        js.write_text(json.dumps(meta))
        assert check_entry(js.with_suffix("")).startswith("stale: keyed the old way")
    records: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda r: records.append(r.getMessage())
    logging.getLogger("repro.artifacts").addHandler(handler)
    try:
        assert len(wb.store.retire_old_keys()) == 2 and wb.store.retire_old_keys() == []
    finally:
        logging.getLogger("repro.artifacts").removeHandler(handler)
    assert len(records) == 2 and all("stale: keyed the old way" in r for r in records)
    assert (tmp / REKEYED_MARKER).exists() and not list((tmp / "taskvec").glob("*.json"))
    wb.cached("taskvec", {"a": 1}, lambda: (calls.append(1), ({"w": torch.ones(2)}, {}))[1], VECTOR)
    assert len(calls) == 3  # recomputed under the new scheme


def _fetched_text_edit_changes_key(tmp: Path, model) -> None:
    """The paper profile reads fetched copies under the data root: an edited text task changes its data tag, a new
    P2 vision folder does not (before: the tag was "hub", whatever the files held)."""
    import os

    def tag() -> str:
        wb = Workbench.__new__(Workbench)
        wb.profile, wb.data_dir = get_profile("paper"), None
        return wb.data_tag

    old = os.environ.get("REPRO_DATA")
    os.environ["REPRO_DATA"] = str(_sst2_folder(tmp / "data"))
    try:
        first = tag()
        (tmp / "data" / "vision" / "MNIST").mkdir(parents=True)
        (tmp / "data" / "vision" / "MNIST" / "LABELS.json").write_text('["0"]')
        assert tag() == first
        _sst2_folder(tmp / "data", flip=True)
        assert tag() != first and tag().startswith("hub:")
    finally:
        if old is None:
            os.environ.pop("REPRO_DATA")
        else:
            os.environ["REPRO_DATA"] = old


RIGHT_ANSWERS: dict[str, Callable[[Path, object], None]] = {
    "fetched-text-edit-changes-key": _fetched_text_edit_changes_key,
    "old-keyed-entry-retired-once": _old_keyed_entry_retired_once,
    "signs-flipped-past-prefix": _signs_flipped_past_prefix,
    "flipped-labels-retrain": _flipped_labels_retrain,
    "edited-sidecar-recomputed": _edited_sidecar_recomputed,
    "mask-shape-list-equals-tuple": _mask_shape_list_equals_tuple,
    "stray-file-in-store": _stray_file_in_store,
    "clear-stale-deletes": _clear_stale_deletes,
}


@pytest.mark.parametrize("name", sorted(RIGHT_ANSWERS))
def test_right_number_where_a_wrong_one_was_possible(name, tmp_path, tiny_model):
    RIGHT_ANSWERS[name](tmp_path, tiny_model)


# --------------------------------------------------------------------------------------------------------
# issue 35: every precision a profile accepts trains, grafts, scores and merges on the smoke model (fp32; bf16
# autocast, set on the model as the CUDA path does, since the CPU otherwise runs fp32; tf32, which on the CPU
# resolves to fp32; float64 parameters for numerical checks). Before: float64 with gradient clipping crashed in
# the clip's norm (`vector_norm(t, dtype=float32)` refuses a double).
# --------------------------------------------------------------------------------------------------------
def _at_precision(model, precision: str):
    from repro.device import configure

    if precision == "float64":
        model.double()
    else:
        assert configure(model, torch.device("cpu"), precision) == "fp32"  # the CPU runs a profile's precision fp32
        model.precision = precision if precision == "bf16" else "fp32"  # bf16 autocast, as on CUDA
    return torch.float64 if precision == "float64" else torch.float32


@pytest.mark.parametrize("precision", ["fp32", "bf16", "tf32", "float64"])
def test_every_precision_trains_grafts_scores_and_merges(precision, tiny_model):
    from repro.core.fisher import diagonal_fisher
    from repro.core.merging import MERGERS

    dtype = _at_precision(tiny_model, precision)
    names = tiny_model.graftable_names()
    pre = {n: p.detach().clone() for n, p in tiny_model.named_parameters()}
    ex = EX + [Example("i loved it", 1), Example("i hated it", 0)]
    res = train(tiny_model, {"sent": ex}, FinetuneRecipe(steps=3, batch_size=2, eval_every=0, grad_clip=1e-3),
                names, progress=False)  # a tiny clip: the clipping branch runs
    params = dict(tiny_model.named_parameters())
    delta = {n: params[n].detach() - pre[n] for n in names}
    assert len(res.history) == 3 and all(params[n].dtype == dtype for n in names)
    assert any(bool(d.abs().sum() > 0) for d in delta.values())
    with torch.no_grad():
        for n in names:
            params[n].copy_(pre[n])
    graft = learn_graft(tiny_model, "sent", delta, ex, ex, 0.1, GraftRecipe(steps=2, batch_size=2, max_examples=4),
                        progress=False)
    assert graft.mask.count() > 0
    fisher = diagonal_fisher(tiny_model, ex, "sent", names[:4], batch_size=2, progress=False)
    assert fisher and all(bool(torch.isfinite(f).all()) and f.is_floating_point() for f in fisher.values())
    vectors = [TaskVector(delta), TaskVector({n: -0.5 * d for n, d in delta.items()})]
    for key, merger in MERGERS.items():
        merged = merger.merged(vectors)
        assert all(bool(torch.isfinite(t).all()) for t in merged.tensors.values()), key


def test_float32_clip_norm_is_the_float32_reduction():
    """The float64 fix leaves fp32 bitwise unchanged: the clip's norm of float32 gradients is the same float32
    reduction as before; a float64 gradient's is float64."""
    from repro.core.finetune import MaskedOptimizer

    g = torch.Generator().manual_seed(0)
    for dtype in (torch.float32, torch.float64):
        p = torch.nn.Parameter(torch.randn(1000, generator=g, dtype=dtype))
        p.grad = torch.randn(1000, generator=g, dtype=dtype)
        norm = MaskedOptimizer({"w": p}, {"w": None}, RECIPE).dense_grad_norm()
        want = torch.sqrt(torch.linalg.vector_norm(p.grad, dtype=torch.float32) ** 2) if dtype == torch.float32 \
            else torch.linalg.vector_norm(p.grad)
        assert norm.dtype == dtype and (torch.equal(norm, want) if dtype == torch.float32 else torch.allclose(norm, want))
