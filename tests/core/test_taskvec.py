"""Task vectors (arithmetic, storage), α selection (p2.arithmetic), the disentanglement error (p2.function_localization)
and AdaMerging on the tiny model.  The merging kernels are in test_merging.py."""

from __future__ import annotations

import pytest
import torch
from conftest import two_task_setup

from repro.data import Example, TaskSpec
from repro.core.masks import Mask
from repro.core.adamerging import adamerging
from repro.core.merging import task_arithmetic
from repro.core.taskvec import TaskVector, align
from repro.p2.arithmetic import select_addition_alpha, select_negation_alpha
from repro.p2.function_localization import disentanglement_error


def tv(**tensors) -> TaskVector:
    return TaskVector({n: torch.tensor(v, dtype=torch.float32) for n, v in tensors.items()})


# --- the vector ---------------------------------------------------------------------------------------------
def test_taskvector_arithmetic_and_apply():
    pre = {"w": torch.tensor([1.0, 2.0, 3.0]), "b": torch.tensor([0.5])}
    ft = {"w": torch.tensor([2.0, 2.0, 1.0]), "b": torch.tensor([0.5]), "step": torch.tensor(3)}
    t = TaskVector.from_models(pre, ft)
    assert t.names == ["w", "b"]  # integer buffers and names absent from pre are skipped
    assert t["w"].tolist() == [1.0, 0.0, -2.0] and t["b"].tolist() == [0.0]
    assert abs(t.norm() - 5 ** 0.5) < 1e-9 and abs(t.dot(t) - 5.0) < 1e-9
    assert abs(t.density() - 2 / 4) < 1e-12 and abs(t.sparsity() - 0.5) < 1e-12
    u = tv(w=[1.0, 1.0, 1.0], extra=[2.0])
    s = t + u
    assert s.names == ["w", "b", "extra"] and s["w"].tolist() == [2.0, 1.0, -1.0] and s["extra"].tolist() == [2.0]
    assert (t - t).count_nonzero() == 0 and (-t)["w"].tolist() == [-1.0, 0.0, 2.0]
    assert (2 * t)["w"].tolist() == (t * 2.0)["w"].tolist() == [2.0, 0.0, -4.0]
    assert sum([t, u])["w"].tolist() == s["w"].tolist()
    with pytest.raises(TypeError):
        t * t
    # θ_pre + α τ; at α=1 it recovers θ_ft
    assert t.apply(pre, 1.0)["w"].tolist() == ft["w"].tolist()
    assert t.apply(pre, 0.5)["w"].tolist() == [1.5, 2.0, 2.0]
    m = Mask({"w": torch.tensor([True, False, False])}, {"w": (3,)})
    tm = t.masked(m)
    assert tm["w"].tolist() == [1.0, 0.0, 0.0] and tm["b"].tolist() == [0.0]  # outside the eligible set -> 0
    assert t.support().count() == 2
    with pytest.raises(KeyError):
        u.apply(pre)  # "extra" has no pre-trained value


def test_sparse_save_load_roundtrip(tmp_path):
    from repro.artifacts import load_tensors

    torch.manual_seed(0)
    w = torch.randn(10, 10)
    w[w.abs() < 1.5] = 0.0  # ~13 % nonzero: indices + values are smaller than the tensor
    d = torch.randn(6, 5)  # a dense update (all entries changed): stored whole
    h = torch.tensor([0.0, 0.0, 0.0, 1.5, 0.0, 0.0], dtype=torch.float64)
    t = TaskVector({"w": w, "z": torch.zeros(3), "h": h, "d": d})
    t.save(tmp_path / "vec", meta={"task": "sent"})
    raw, info = load_tensors(tmp_path / "vec")
    assert raw["w::idx"].dtype == torch.int64 and raw["w::val"].numel() == int((w != 0).sum())
    assert raw["h::val"].numel() == 1 and "h::dense" not in raw
    assert "d::dense" in raw and "d::idx" not in raw and raw["d::dense"].numel() == d.numel()
    assert raw["z::val"].numel() == 0 and info["nnz"] == t.count_nonzero() and info["task"] == "sent"
    back = TaskVector.load(tmp_path / "vec")
    assert back.names == t.names and back.meta["task"] == "sent"
    for n in t.names:
        assert back[n].dtype == t[n].dtype and torch.equal(back[n], t[n])
    # the workflow's reader understands the same layout (it assumes float32 values)
    from repro.workbench import load_sparse_vector

    TaskVector({"w": w, "z": torch.zeros(3)}).save(tmp_path / "vec32")
    vec, _ = load_sparse_vector(tmp_path / "vec32")
    assert torch.equal(vec["w"], w) and torch.equal(vec["z"], torch.zeros(3))


def test_align_fills_missing_tensors_with_zeros_and_checks_shapes():
    names, aligned = align([tv(w=[1.0, 2.0]), tv(b=[3.0])])
    assert names == ["w", "b"] and aligned[0]["b"].tolist() == [0.0] and aligned[1]["w"].tolist() == [0.0, 0.0]
    assert task_arithmetic([tv(w=[1.0, 2.0]), tv(b=[3.0])])["w"].tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match="shape"):
        align([tv(w=[1.0, 2.0]), tv(w=[1.0])])


# --- α selection --------------------------------------------------------------------------------------------
def test_select_addition_alpha_normalizes_and_breaks_ties_to_smallest():
    val = {1.0: {"a": 0.6, "b": 0.8}, 0.0: {"a": 0.5, "b": 0.5}, 0.5: {"a": 0.8, "b": 0.6}}
    alpha, table = select_addition_alpha(val, {"a": 1.0, "b": 1.0})
    assert alpha == 0.5 and [r["alpha"] for r in table] == [0.0, 0.5, 1.0]  # 0.5 and 1.0 tie at 0.7
    # normalizing by the single-task accuracies changes the choice: b is the harder task
    alpha, table = select_addition_alpha(val, {"a": 1.0, "b": 0.8})
    assert alpha == 1.0 and abs(table[2]["avg_normalized"] - 0.8) < 1e-12 and table[2]["normalized"]["b"] == 1.0
    with pytest.raises(KeyError):
        select_addition_alpha(val, {"a": 1.0})


def test_select_negation_alpha_constraint_and_none():
    target = {0.0: 0.9, 0.5: 0.4, 1.0: 0.1}
    control = {0.0: 0.80, 0.5: 0.78, 1.0: 0.50}
    assert select_negation_alpha(target, control, control_zeroshot=0.8) == 0.5  # 1.0 breaks the control
    assert select_negation_alpha(target, {a: 0.5 for a in target}, control_zeroshot=0.8) is None
    tie = {0.0: 0.9, 0.5: 0.4, 1.0: 0.4}
    assert select_negation_alpha(tie, {a: 0.8 for a in tie}, 0.8) == 0.5


# --- drivers on the tiny model ------------------------------------------------------------------------------
SENT = TaskSpec("tv_sent", ("negative", "positive"), label_prompts=("It was terrible.", "It was great."))
TOPIC = TaskSpec("tv_topic", ("sports", "business"), label_prompts=("This is about sports.", "This is about money."))


@pytest.fixture(scope="module")
def tiny():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a 32-wide model: intra-op threads only add contention on a busy 2-core machine
    yield two_task_setup(SENT, TOPIC, 0.05)
    torch.set_num_threads(threads)


def test_disentanglement_error_tiny_model(tiny):
    model, pre, tau1, tau2, d1, d2 = tiny
    xi = disentanglement_error(model, pre, tau1, tau2, d1, d2, SENT.name, TOPIC.name, [-2.0, 0.0, 2.0],
                               progress=False)
    assert xi.shape == (3, 3) and xi[1, 1] == 0.0  # ξ(0, 0) = 0
    assert ((xi >= 0) & (xi <= 2)).all()
    rect = disentanglement_error(model, pre, tau1, tau2, d1, d2, SENT.name, TOPIC.name, [0.0, 3.0],
                                 grid2=[0.0, 1.0, 3.0], progress=False)
    assert rect.shape == (2, 3) and rect[0, 0] == 0.0
    # the model itself was not modified
    assert all(torch.equal(p, pre[n]) for n, p in model.param_dict(list(pre)).items())


def test_adamerging_tiny_model(tiny):
    model, pre, tau1, tau2, d1, d2 = tiny
    tasks = {SENT.name: d1, TOPIC.name: d2}
    res = adamerging(model, pre, {SENT.name: tau1, TOPIC.name: tau2}, tasks, "task", steps=3, lr=0.05,
                     batch_size=2, progress=False)
    assert res.lambdas.shape == (2,) and len(res.history) == 3
    assert not torch.allclose(res.lambdas, torch.full((2,), 0.3))  # the coefficients moved
    lw = adamerging(model, pre, {SENT.name: tau1, TOPIC.name: tau2}, tasks, "layer", steps=2, batch_size=2,
                    progress=False)
    assert lw.lambdas.shape == (2, len(tau1)) and set(lw.coefficients()) == set(tasks)
    # the merged vector is Σ λ τ
    n = tau1.names[0]
    assert torch.allclose(res.merged[n], res.lambdas[0] * tau1[n] + res.lambdas[1] * tau2[n], atol=1e-6)
    with pytest.raises(ValueError, match="granularity"):
        adamerging(model, pre, {SENT.name: tau1}, tasks, "row", steps=1, progress=False)
    assert all(torch.equal(p, pre[nm]) for nm, p in model.param_dict(list(pre)).items())
