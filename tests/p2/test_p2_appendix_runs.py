"""P2 appendix chapter: what the notebook obtains from its declared jobs (repro.p2.appendix.runs).

The driver calls are replaced by a stub (an FT-like vector per finetune job, a mask per mask / graft job), so the
test checks the queries (the zoo's accessors, repro.p2.zoo), γ ⊙ τ, the LoTA mask and the parity of declared and obtained jobs without training."""

from __future__ import annotations

import types

import pytest
import torch

import repro.jobcall
from repro.core.fisher import lota_mask
from repro.core.masks import Mask
from repro.jobcall import ChapterJobs
from repro.p2.appendix.plan import appendix_plan
from repro.p2.appendix.runs import grafted_vectors, masked_vector, sweep_vectors
from repro.p2.methods import P2_METHODS
from repro.p2.zoo import lota_mask_of, vector_spec, zoo_role, zoo_tasks, zoo_vectors
from repro.profiles import get_profile

SHAPES = {"w": (2, 3), "b": (3,)}
PRE = {n: torch.zeros(s) for n, s in SHAPES.items()}


def _tau(job_id: str) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(int(job_id.split("-")[1], 16) % 2**31)
    return {"w": torch.randn(2, 3, generator=g)}  # no "b": a vector over part of the maskable set


def _stub(wb, spec, upstream):
    if spec.kind in ("mask", "graft"):
        return Mask.random(SHAPES, 2, seed=int(spec.id.split("-")[1], 16) % 2**31), {"job": spec.id}
    return _tau(spec.id), {"job": spec.id}


@pytest.fixture
def jobs(monkeypatch):
    monkeypatch.setattr(repro.jobcall, "call_job", _stub)
    wb = types.SimpleNamespace(linear_heads=False, declared=None, seed=13, pre=PRE, names=lambda scope: list(SHAPES))
    return ChapterJobs(wb, "p2_appendix", "smoke")


def test_every_declared_job_is_obtained(jobs):
    prof = get_profile("smoke").for_p2("", "p2_appendix")
    plan = appendix_plan(prof)
    zoo_vectors(jobs, zoo_tasks(prof), 13, P2_METHODS)
    for k in plan.sparsities:
        sweep_vectors(jobs, k, plan.ablation_tasks)
    grafted_vectors(jobs, plan.ablation_tasks)
    talos = get_profile("smoke").talos.sparsity
    for t in plan.ablation_tasks:
        jobs.value(jobs.one(kind="mask", task=t, sparsity=talos))  # overlap_masks' TaLoS mask
    assert jobs.record()["unused"] == []


def test_sweep_vectors_follow_the_talos_mask_of_each_sparsity(jobs):
    task = "SST-2"
    ft = vector_spec(jobs, task, "ft")  # the seed: the Workbench's
    assert ft.kwargs["trainable"] == "maskable" and not ft.kwargs["linearized"] and ft.kwargs["seed"] == 13
    assert torch.equal(sweep_vectors(jobs, 0.0, [task])[task]["w"], _tau(ft.id)["w"])
    for k in (0.9, 0.99):
        mask = jobs.one(kind="mask", task=task, sparsity=k)
        (vec,) = [s for s in jobs.select(kind="finetune") if s.deps == (mask.id,)]
        assert torch.equal(sweep_vectors(jobs, k, [task])[task]["w"], _tau(vec.id)["w"])
    zoo_talos = jobs.select(role=zoo_role("talos"), tasks=[task])[0]
    assert torch.equal(sweep_vectors(jobs, 0.9, [task])[task]["w"], _tau(zoo_talos.id)["w"])  # the zoo's TaLoS


def test_grafted_vectors_keep_tau_on_the_graft(jobs):
    vecs, masks = grafted_vectors(jobs, ["SST-2"])
    graft = jobs.one(kind="graft", role="graft", task="SST-2")
    tau = _tau(vector_spec(jobs, "SST-2", "ft").id)
    assert jobs.deps(graft, "finetune") == [vector_spec(jobs, "SST-2", "ft")]
    assert torch.equal(vecs["SST-2"]["w"], torch.where(masks["SST-2"].tensors["w"], tau["w"], 0.0))


def test_masked_vector_zeroes_tensors_outside_the_mask():
    mask = Mask.from_names({"w": (2,)}, ["w"])
    out = masked_vector({"w": torch.tensor([1.0, -2.0]), "v": torch.ones(3)}, mask)
    assert torch.equal(out["w"], torch.tensor([1.0, -2.0])) and torch.equal(out["v"], torch.zeros(3))


def test_lota_mask_of_is_the_top_movement_of_the_ft_vector(jobs):
    tau = _tau(vector_spec(jobs, "SST-2", "ft").id)
    expect = lota_mask({"w": tau["w"], "b": torch.zeros(3)}, 0.5)
    assert lota_mask_of(jobs, "SST-2", density=0.5) == expect == lota_mask_of(jobs, "SST-2", 13, 0.5)
