"""Merging kernels (hand-computed cases), TIES as its named steps, and the MERGERS registry."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from repro.core.merging import (
    MERGERS,
    Breadcrumbs,
    Dare,
    Tall,
    Ties,
    breadcrumbs,
    consensus_mask,
    consensus_merge,
    dare,
    disjoint_mean,
    elect_signs,
    fill_zero_signs,
    merger,
    tall_masks,
    task_arithmetic,
    ties_merge,
    trim_topk,
    wise_interpolate,
)
from repro.core.taskvec import TaskVector


def tv(**tensors) -> TaskVector:
    return TaskVector({n: torch.tensor(v, dtype=torch.float32) for n, v in tensors.items()})


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


def test_wise_interpolate():
    pre, ft = {"w": torch.zeros(2)}, {"w": torch.tensor([2.0, 4.0])}
    assert wise_interpolate(pre, ft, 0.25)["w"].tolist() == [0.5, 1.0]


def test_ties_named_steps_hand_example():
    stack = torch.tensor([[3.0, -1.0, 0.0, 1.0], [-1.0, 2.0, 0.0, -1.0]])
    signs = elect_signs(stack)
    assert signs.tolist() == [1.0, 1.0, 0.0, 0.0]
    filled = fill_zero_signs({"w": signs}, {"w": stack})["w"]
    assert filled.tolist() == [1.0, 1.0, 1.0, 1.0]  # the elected majority is +, ties go to it
    assert fill_zero_signs({"w": -signs}, {"w": stack})["w"].tolist() == [-1.0, -1.0, -1.0, -1.0]
    # only agreeing nonzero entries are averaged; an entry no task agrees with is 0
    assert disjoint_mean(stack, filled).tolist() == [3.0, 2.0, 0.0, 1.0]
    with pytest.raises(ValueError, match="zero-sign rule"):
        fill_zero_signs({"w": signs}, {"w": stack}, rule="coin")


def test_mergers_are_configured_instances_of_the_kernels():
    a, b, c = tv(w=[3.0, -1.0, 2.0, 0.5]), tv(w=[-1.0, 2.0, -3.0, 0.2]), tv(w=[0.5, 0.5, 1.0, -2.0])
    vs = [a, b, c]
    assert list(MERGERS) == ["ties", "tall", "dare", "breadcrumbs"] and merger("dare") is MERGERS["dare"]
    with pytest.raises(KeyError, match="registered: ties"):
        merger("average")
    assert torch.equal(Ties(keep=0.5).merged(vs)["w"], ties_merge(vs, keep=0.5)["w"])
    assert torch.equal(Ties(keep=0.5).single(vs, 1)["w"], trim_topk(b, 0.5)["w"])
    assert Ties(keep=None).single(vs, 1) is b
    assert torch.equal(Tall(lam=0.6, k=2).merged(vs)["w"], consensus_merge(vs, 0.6, 2)["w"])
    assert torch.equal(Tall().single(vs, 2)["w"], c.masked(tall_masks(vs, 0.6)[2])["w"])
    assert torch.equal(Dare(p=0.5).merged(vs, seed=3)["w"],
                       task_arithmetic([dare(v, 0.5, seed=3 + i) for i, v in enumerate(vs)])["w"])
    assert torch.equal(Dare(p=0.0).merged(vs)["w"], task_arithmetic(vs)["w"])
    assert torch.equal(Breadcrumbs(beta=0.25, gamma=0.5).single(vs, 0)["w"], breadcrumbs(a, 0.25, 0.5)["w"])
    # hyperparameters enter cache keys by name
    assert MERGERS["ties"].config() == {"merger": "ties", "keep": 0.1, "trim": "global", "zero_sign": "majority"}
    assert replace(MERGERS["ties"], keep=None).config()["keep"] is None
    assert MERGERS["tall"].config() == {"merger": "tall", "lam": 0.6, "k": 2}
    for bad in (lambda: Ties(trim="row"), lambda: Dare(p=1.0), lambda: Tall(k=0), lambda: Breadcrumbs(beta=2.0)):
        with pytest.raises(ValueError):
            bad()
