"""The P2 zoo's shared declarations (repro.p2.zoo): its tasks are the §5.1 plan's, its jobs read the family splits."""

from __future__ import annotations

import pytest

from repro.p2.task_arithmetic.plan import arithmetic_plan
from repro.p2.zoo import CPU_TASKS, TALOS_MASK_ROLE, data_how, vector_spec, zoo_jobs, zoo_role, zoo_tasks
from repro.profiles import PROFILES


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_zoo_tasks_are_the_task_arithmetic_plans(name):
    profile = PROFILES[name]
    assert zoo_tasks(profile) == arithmetic_plan(profile).task_list(profile)


def test_cpu_zoo_is_the_breadth_cut_and_jobs_end_with_the_vector():
    cpu = PROFILES["cpu"]
    assert zoo_tasks(cpu) == list(CPU_TASKS) and set(CPU_TASKS) <= set(cpu.p2_tasks)
    assert data_how(cpu) == "kshot"
    jobs = zoo_jobs(cpu, "p2_task_arithmetic", CPU_TASKS[:1], seed=13, methods=("ft", "talos"))
    assert set(jobs) == {("ft", "SST-2"), ("talos", "SST-2")}
    assert [j.kind for j in jobs[("talos", "SST-2")]] == ["mask", "finetune"]


def test_zoo_specs_carry_their_roles_and_are_found_by_them():
    """The zoo's vector jobs carry role zoo-<method> (the TaLoS mask TALOS_MASK_ROLE), outside the ids;
    vector_spec finds each (method, task, seed) among a chapter's declared jobs."""
    from repro.jobcall import ChapterJobs, UndeclaredJob
    from repro.jobs import job_id

    cpu = PROFILES["cpu"]
    zoo = zoo_jobs(cpu, "p2_test", CPU_TASKS[:2], seed=13)
    for (m, t), js in zoo.items():
        assert js[-1].role == zoo_role(m) and js[-1].id == job_id(js[-1].kind, cpu.name, js[-1].driver, js[-1].kwargs)
    assert zoo[("talos", "SST-2")][0].role == TALOS_MASK_ROLE

    class Unguarded:  # ChapterJobs only sets a flag on its Workbench
        declared = None

    jobs = ChapterJobs(Unguarded(), "p2_test", None, specs=[j for js in zoo.values() for j in js])
    for (m, t), js in zoo.items():
        assert vector_spec(jobs, t, m, 13) == js[-1]
    assert jobs.one(kind="mask", role=TALOS_MASK_ROLE, task="TREC", seed=13) == zoo[("talos", "TREC")][0]
    with pytest.raises(UndeclaredJob, match="0 declared jobs"):
        vector_spec(jobs, "SST-2", "ft", 21)


def test_the_lota_job_trains_the_top_movement_mask_of_its_upstream_ft_vector():
    """The LoTA job's trainable ``{"lota_of": ref(ft), "density": d}`` becomes, once its upstream τ_ft is resolved,
    the mask repro.p2.methods.lota_mask_from builds (the one LoTA mask from τ) before the masked fine-tune."""
    import types

    import torch

    from repro.core.fisher import lota_mask
    from repro.jobcall import call_job
    from repro.p2.methods import LOTA_DENSITY
    from repro.p2.zoo import method_jobs

    cpu = PROFILES["cpu"]
    lota = method_jobs(cpu, "p2_test", "SST-2", "lota", 13)[-1]
    (ft_id,) = lota.deps
    tau = {"w": torch.arange(20.0).reshape(4, 5)}  # no "b": absent tensors count as 0
    seen = {}

    def finetune_run(tasks, recipe, k, trainable, **kw):
        seen.update(tasks=tasks, trainable=trainable)
        return {}, {}

    wb = types.SimpleNamespace(compute_kinds=None, pre={"w": torch.zeros(4, 5), "b": torch.zeros(5)},
                               names=lambda scope: ["w", "b"], finetune_run=finetune_run)
    call_job(wb, lota, lambda job: tau if job == ft_id else None)
    assert seen["tasks"] == ["SST-2"]
    assert seen["trainable"] == lota_mask({"w": tau["w"], "b": torch.zeros(5)}, LOTA_DENSITY)


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_ft_jobs_train_the_familys_scope(name):
    """Issue 32 item 2: the zoo's FT and Linearized FT jobs train P2Family.ft_scope ("all" on the paper's and
    paper-smoke's families, as the official FT; "maskable" on the cpu family and the text family); LoTA's job
    reads the FT job, so its id follows the scope."""
    from dataclasses import replace

    from repro.p2.methods import ft_scope
    from repro.p2.zoo import method_jobs

    profile = PROFILES[name]
    for fam in [f.name for f in profile.p2_families] + ([] if profile.p2_families else ["text"]):
        prof = profile.for_p2(fam)
        task = zoo_tasks(prof)[0]
        for m in ("ft", "linearized"):
            assert method_jobs(prof, "p2_test", task, m, 13)[-1].kwargs["trainable"] == ft_scope(prof)
        expected = "all" if name in ("paper", "paper-rehearsal", "paper-smoke", "gpu-check") else "maskable"
        assert ft_scope(prof) == expected, (name, fam)
    if name == "paper":
        vision = profile.for_p2("vision")
        narrow = replace(profile, p2_families=tuple(replace(f, ft_scope="maskable") for f in profile.p2_families))
        narrow = narrow.for_p2("vision")
        assert method_jobs(vision, "p2_test", "MNIST", "lota", 13)[-1].id != \
            method_jobs(narrow, "p2_test", "MNIST", "lota", 13)[-1].id
        with pytest.raises(ValueError, match="ft_scope"):
            replace(profile.p2_families[0], ft_scope="everything")
