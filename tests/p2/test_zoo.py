"""The P2 zoo's shared declarations (repro.p2.zoo): its tasks are the §5.1 plan's, its jobs read the family splits."""

from __future__ import annotations

import pytest

from repro.p2.task_arithmetic.plan import arithmetic_plan
from repro.p2.zoo import CPU_TASKS, data_how, zoo_jobs, zoo_tasks
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
