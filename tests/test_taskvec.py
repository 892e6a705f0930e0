"""Task vectors, merging kernels (hand-computed cases), α selection, storage, and the evaluation drivers."""

from __future__ import annotations

import pytest
import torch

from repro.data import Example, TaskSpec
from repro.core.masks import Mask
from repro.core.taskvec import (
    TaskVector,
    adamerging,
    alpha_grid,
    breadcrumbs,
    consensus_mask,
    consensus_merge,
    dare,
    disentanglement_error,
    eval_addition,
    eval_negation,
    merge,
    rows_by_alpha,
    select_addition_alpha,
    select_negation_alpha,
    tall_masks,
    task_arithmetic,
    ties_merge,
    trim_topk,
    wise_interpolate,
)


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


# --- TIES ---------------------------------------------------------------------------------------------------
def test_ties_hand_example_sign_conflict_and_zero_sum():
    t1 = tv(w=[3.0, -1.0, 2.0, 0.5, 0.0, -4.0])
    t2 = tv(w=[-1.0, 2.0, -3.0, 0.2, 5.0, 0.0])
    t3 = tv(w=[2.5, -2.2, 1.0, 0.1, -5.0, 0.3])
    # keep 50% (3 of 6) by |τ|:  τ̂1 = [3,0,2,0,0,-4]  τ̂2 = [0,2,-3,0,5,0]  τ̂3 = [2.5,-2.2,0,0,-5,0]
    assert trim_topk(t1, 0.5)["w"].tolist() == [3.0, 0.0, 2.0, 0.0, 0.0, -4.0]
    # Σ τ̂ = [5.5, -0.2, -1, 0, 0, -4] -> elected [+,-,-,0,0,-]; majority of elected signs = -1 (3 minus, 1 plus)
    # entry 1: sign conflict (2 vs -2.2) -> -2.2 ; entry 2: (2 vs -3) -> -3
    # entry 4: +5 and -5 cancel -> zero sum -> majority sign -1 -> mean of the negative entries = -5
    #          (the P2 code's always-+1 fallback would give +5)
    # entry 3: all trimmed to 0 -> 0
    expected = [2.75, -2.2, -3.0, 0.0, -5.0, -4.0]
    for rule in ("majority", "vote"):
        out = ties_merge([t1, t2, t3], keep=0.5, zero_sign=rule)
        assert torch.allclose(out["w"], torch.tensor(expected)), (rule, out["w"])
    # without trimming (P2 Table 5 "TaLoS + TIES"): Σ = [4.5,-1.2,0,0.8,0,-3.7], elected [+,-,0,+,0,-]
    nt = ties_merge([t1, t2, t3], keep=None)
    # entry 0: + -> mean(3, 2.5); entry 1: - -> mean(-1,-2.2); entry 3: + -> mean(0.5,0.2,0.1); entry 5: - -> -4
    assert torch.allclose(nt["w"][[0, 1, 3, 5]], torch.tensor([2.75, -1.6, 0.8 / 3, -4.0]))


def test_ties_vote_rule_differs_from_global_majority():
    # entry 0 sums to zero with two positive votes and one negative: the per-entry vote says +, the global
    # majority of elected signs says - (entries 1 and 2 are negative)
    a, b, c = tv(w=[1.0, -1.0, -1.0]), tv(w=[1.0, 0.0, 0.0]), tv(w=[-2.0, 0.0, 0.0])
    assert ties_merge([a, b, c], keep=None, zero_sign="majority")["w"].tolist() == [-2.0, -1.0, -1.0]
    assert ties_merge([a, b, c], keep=None, zero_sign="vote")["w"].tolist() == [1.0, -1.0, -1.0]
    with pytest.raises(ValueError, match="majority"):
        ties_merge([a], zero_sign="plus")


def test_global_vs_per_tensor_trimming_differ():
    v = tv(a=[10.0, 9.0, 8.0, 7.0], b=[1.0, 0.5])
    g = trim_topk(v, 0.5, "global")  # 3 of 6 globally: all from a
    p = trim_topk(v, 0.5, "per_tensor")  # 2 of 4 in a, 1 of 2 in b
    assert g["a"].tolist() == [10.0, 9.0, 8.0, 0.0] and g["b"].tolist() == [0.0, 0.0]
    assert p["a"].tolist() == [10.0, 9.0, 0.0, 0.0] and p["b"].tolist() == [1.0, 0.0]
    assert not torch.equal(ties_merge([v], 0.5, "global")["b"], ties_merge([v], 0.5, "per_tensor")["b"])
    with pytest.raises(ValueError, match="per_tensor"):
        trim_topk(v, 0.5, "layer")


# --- DARE ---------------------------------------------------------------------------------------------------
def test_dare_exact_fraction_rescale_and_expectation():
    ones = TaskVector({"a": torch.ones(1000), "b": torch.ones(10, 10)})
    d = dare(ones, p=0.9, seed=3)
    assert int((d["a"] == 0).sum()) == 900 and int((d["b"] == 0).sum()) == 90
    assert torch.allclose(d["a"][d["a"] != 0], torch.full((100,), 10.0))
    g = dare(ones, p=0.9, seed=3, trim="global")
    assert d.count_nonzero() == 110 and g.count_nonzero() == 110
    assert torch.equal(dare(ones, 0.9, seed=3)["a"], d["a"]) and not torch.equal(dare(ones, 0.9, seed=4)["a"], d["a"])
    # only the named tensors are processed
    assert torch.equal(dare(ones, 0.9, names=["a"])["b"], ones["b"])
    # E[DARE(τ)] = τ
    torch.manual_seed(0)
    tau = TaskVector({"w": torch.randn(500)})
    avg = sum(dare(tau, p=0.5, seed=s)["w"] for s in range(400)) / 400
    assert (avg - tau["w"]).abs().mean() < 0.08
    bern = sum(dare(tau, p=0.5, seed=s, exact=False)["w"] for s in range(400)) / 400
    assert (bern - tau["w"]).abs().mean() < 0.08
    with pytest.raises(ValueError):
        dare(tau, p=1.0)


# --- TALL / Consensus ---------------------------------------------------------------------------------------
def test_tall_consensus_hand_example():
    t1 = tv(w=[1.0, 0.0, 2.0, -1.0])
    t2 = tv(w=[1.0, 3.0, 0.0, -1.0])
    t3 = tv(w=[0.0, 3.0, 2.0, -4.0])
    # τ_MTL = [2, 6, 4, -6];  λ = 0.5
    # m1: |τ1| >= .5|[1,6,2,-5]| -> [T,F,T,F] ; m2: |τ2| >= .5|[1,3,4,-5]| -> [T,T,F,F]
    # m3: |τ3| >= .5|[2,3,2,-2]| -> [F,T,T,T]
    m = tall_masks([t1, t2, t3], lam=0.5)
    assert [mm.tensors["w"].tolist() for mm in m] == [[True, False, True, False], [True, True, False, False],
                                                       [False, True, True, True]]
    # counts [2,2,2,1] -> consensus (k=2) [T,T,T,F] -> Σ τ ⊙ consensus = [2, 6, 4, 0]
    assert consensus_mask([t1, t2, t3], 0.5, k=2).tensors["w"].tolist() == [True, True, True, False]
    merged = consensus_merge([t1, t2, t3], lam=0.5, k=2)
    assert merged["w"].tolist() == [2.0, 6.0, 4.0, 0.0]
    # the P2 code's bug (consensus ⊙ last task's mask m3) would zero entry 0:
    assert merged["w"][0] != 0 and not bool(m[-1].tensors["w"][0])
    # the abs matters: without it, τ_MTL − τ_t = -5 < 0 would select entry 3 for tasks 1, 2 and keep -6
    assert merged["w"][3] == 0
    # k = 0 keeps everything (task arithmetic), k = T+1 nothing
    assert torch.equal(consensus_merge([t1, t2, t3], 0.5, k=0)["w"], task_arithmetic([t1, t2, t3])["w"])
    assert consensus_merge([t1, t2, t3], 0.5, k=4).count_nonzero() == 0


# --- Breadcrumbs --------------------------------------------------------------------------------------------
def test_breadcrumbs_per_row_hand_matrix():
    row0 = [10.0, -9.0, 8.0, 1.0, 2.0, 3.0, -4.0, 5.0, 6.0, 7.0]
    row1 = [0.1 * (i + 1) for i in range(10)]
    v = TaskVector({"W": torch.tensor([row0, row1]), "bias": torch.tensor(row0)})
    out = breadcrumbs(v, beta=0.1, gamma=0.2, scope="per_row")
    # per row of 10: drop the top 1 by |τ|, keep the next 2
    assert out["W"][0].tolist() == [0.0, -9.0, 8.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert torch.allclose(out["W"][1], torch.tensor([0.0] * 7 + [0.8, 0.9, 0.0]))
    assert out["bias"].tolist() == out["W"][0].tolist()  # a 1-D tensor is one row
    # global over 30 entries: drop 3 (10, 10, -9), keep the next 6 (-9, 8, 8, 7, 7, 6)
    g = breadcrumbs(v, beta=0.1, gamma=0.2, scope="global")
    assert g.count_nonzero() == 6 and g["W"][1].abs().sum() == 0 and g["W"][0, 0] == 0
    only = breadcrumbs(v, 0.1, 0.2, names=["W"])
    assert torch.equal(only["bias"], v["bias"])


def test_wise_and_merge_dispatch():
    pre, ft = {"w": torch.zeros(2)}, {"w": torch.tensor([2.0, 4.0])}
    assert wise_interpolate(pre, ft, 0.25)["w"].tolist() == [0.5, 1.0]
    a, b = tv(w=[1.0, 0.0]), tv(w=[0.0, 2.0])
    assert merge("task_arithmetic", [a, b])["w"].tolist() == [1.0, 2.0]
    assert merge("dare", [a, b], p=0.0)["w"].tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match="ties"):
        merge("average", [a, b])


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


def test_alpha_grid_sparse_extension():
    g = alpha_grid()
    assert len(g) == 21 and g[0] == 0.0 and g[1] == 0.05 and g[-1] == 1.0
    s = alpha_grid(sparsity=0.9)
    assert abs(s[-1] - 10.0) < 1e-9 and abs(s[1] - 0.5) < 1e-9
    with pytest.raises(ValueError):
        alpha_grid(sparsity=1.0)


# --- drivers on the tiny model ------------------------------------------------------------------------------
SENT = TaskSpec("tv_sent", ("negative", "positive"), label_prompts=("It was terrible.", "It was great."))
TOPIC = TaskSpec("tv_topic", ("sports", "business"), label_prompts=("This is about sports.", "This is about money."))


@pytest.fixture(scope="module")
def tiny():
    from repro.models import build_tiny_bert

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a 32-wide model: intra-op threads only add contention on a busy 2-core machine
    model = build_tiny_bert(seed=0)
    model.add_task(SENT)
    model.add_task(TOPIC)
    names = model.maskable_names()
    pre = {n: p.detach().clone() for n, p in model.param_dict(names).items()}
    g = torch.Generator().manual_seed(0)
    tau1 = TaskVector({n: 0.05 * torch.randn(pre[n].shape, generator=g) for n in names})
    tau2 = TaskVector({n: 0.05 * torch.randn(pre[n].shape, generator=g) for n in names[: len(names) // 2]})
    d1 = [Example(t, i % 2) for i, t in enumerate(["a great film", "a dull film", "i loved it", "i hated it"])]
    d2 = [Example(t, i % 2) for i, t in enumerate(["the team won", "stocks fell", "a late goal", "rates rose"])]
    yield model, pre, tau1, tau2, d1, d2
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


def test_eval_drivers_and_adamerging_tiny_model(tiny):
    model, pre, tau1, tau2, d1, d2 = tiny
    tasks = {SENT.name: d1, TOPIC.name: d2}
    rows = eval_addition(model, pre, task_arithmetic([tau1, tau2]), tasks, [0.0, 1.0], progress=False)
    table = rows_by_alpha(rows)
    assert set(table) == {0.0, 1.0} and set(table[0.0]) == set(tasks)
    neg = rows_by_alpha(eval_negation(model, pre, tau1, tasks, [0.0], progress=False))
    assert neg[0.0] == table[0.0]  # α = 0 is the pre-trained model either way
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
    assert all(torch.equal(p, pre[nm]) for nm, p in model.param_dict(list(pre)).items())
