"""Bad tensors, masks and artifacts: each gets one clear error naming the problem, and nothing is written.

Table-driven: every row builds its bad input in a fresh folder (``setup(tmp, model) -> call``), the folder is
snapshotted, the call must raise ``error`` with a message matching ``match``, and the folder must be unchanged
(no artifact, no temp file, no quarantine).  The data/parameter/results rows live with the runner's tests.
"""

from __future__ import annotations

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


class Case(NamedTuple):
    setup: Callable[[Path, object], Callable[[], object]]
    error: type[BaseException]
    match: str


def _bare(root: Path) -> Workbench:
    wb = Workbench.__new__(Workbench)
    wb.store, wb.pre, wb.model = ArtifactStore(root), {}, torch.nn.Module()
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
}


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
