"""The P2 §5.1 plan object, Tables 1-2 over seeds, and the per-example test correctness the protocol records."""

from __future__ import annotations

import numpy as np
import pytest

from repro.p2 import arithmetic as ar
from repro.p2.task_arithmetic import runs as sr
from repro.p2.task_arithmetic.plan import CPU_TASKS, ArithmeticPlan, arithmetic_plan
from repro.profiles import get_profile

TASKS = ("SST-2", "AGNews")


def test_plan_per_profile():
    smoke = get_profile("smoke")
    plan = arithmetic_plan(smoke)
    assert plan.n_seeds == 1 and plan.task_list(smoke) == list(smoke.p2_tasks) and plan.seeds(smoke, 13) == [13]
    paper_smoke = get_profile("paper-smoke").for_p2("", "p2_task_arithmetic", None)
    assert arithmetic_plan(paper_smoke).task_list(paper_smoke) == list(paper_smoke.p2_tasks)
    cpu = get_profile("cpu")  # the text family: the zoo's 3 tasks; the book runs the vision family's 3
    plan = arithmetic_plan(cpu)
    assert plan.tasks is None and plan.task_list(cpu) == list(CPU_TASKS) == ["SST-2", "TREC", "QNLI"]
    assert set(CPU_TASKS) <= set(cpu.p2_tasks)
    vision = cpu.for_p2("", "p2_task_arithmetic")
    assert arithmetic_plan(vision).task_list(vision) == ["mnist5k", "digits", "textures"]
    assert plan.n_seeds == 3 and plan.seeds(cpu, 13) == [13, 21, 42] and arithmetic_plan(cpu, n_seeds=1).seeds(cpu, 13) == [13]
    paper = get_profile("paper")
    assert arithmetic_plan(paper).n_seeds == 3 and arithmetic_plan(paper).task_list(paper) == list(paper.p2_tasks)


def test_plan_overrides_and_seeds_beyond_the_profile_list():
    cpu = get_profile("cpu")
    plan = arithmetic_plan(cpu, tasks=["SST-2"], n_seeds=None)
    assert plan.tasks == ("SST-2",) and plan.n_seeds == 3  # None keeps the plan's value
    assert arithmetic_plan(cpu, n_seeds=2).seeds(cpu, 21) == [21, 42]
    assert ArithmeticPlan(n_seeds=2).seeds(get_profile("smoke"), 13) == [13, 1013]
    with pytest.raises(ValueError, match="unknown plan fields"):
        arithmetic_plan(cpu, seeds=3)
    with pytest.raises(ValueError, match="n_seeds must be"):
        arithmetic_plan(cpu, n_seeds=0)


def test_mean_rows_averages_seeds():
    a = [{"method": "TaLoS", "metric": "abs_acc", "value": 70.0, "std": None, "alpha": 0.5}]
    b = [{"method": "TaLoS", "metric": "abs_acc", "value": 74.0, "std": None, "alpha": 1.0}]
    (row,) = sr.mean_rows([a, b])
    assert row["value"] == 72.0 and row["std"] == pytest.approx(np.std([70, 74], ddof=1)) and row["seeds"] == 2
    assert row["alpha"] == 0.75
    assert sr.mean_rows([a])[0]["std"] is None
    with pytest.raises(ValueError, match="differ"):
        sr.mean_rows([a, [dict(b[0], method="DARE")]])


@pytest.fixture(scope="module")
def wb(tmp_path_factory):
    from repro.workbench import Workbench

    return Workbench(get_profile("smoke", p2_tasks=TASKS), artifacts_dir=tmp_path_factory.mktemp("artifacts"))


def test_protocol_records_per_example_correctness_of_every_reported_number(wb):
    ev = ar.Evaluator(wb, TASKS, "RTE", n_val=8, n_test=16)
    res = ar.run_method(wb, ev, "ft", [0.0, 0.5, 1.0])
    add, neg = res["addition"], res["negation"]
    for t in TASKS:
        n = len(ev.sets[t]["test"])
        # accuracy tasks: the reported test number is the mean of its correctness vector
        assert len(add["test_correct"][t]) == n and np.mean(add["test_correct"][t]) == pytest.approx(add["test"][t])
        single = add["single"][t]
        assert set(single["test_correct"]) <= {0, 1} and np.mean(single["test_correct"]) == pytest.approx(single["test"])
        r = neg["per_task"][t]
        assert np.mean(r["target_correct"]) == pytest.approx(r["target"])
        assert np.mean(r["control_correct"]) == pytest.approx(r["control"])
        assert len(r["control_correct"]) == len(ev.sets["RTE"]["test"])
    run = sr.SeedRun(13, wb, ev, {"ft": res}, ar.zero_shot_summary(ev))
    ex = sr.Correctness.from_runs([run, run])
    x, ids = ex.stacked("Non-linear FT", "addition")
    assert x.shape == (2, sum(len(ev.sets[t]["test"]) for t in TASKS)) and set(np.unique(ids)) == {0.0, 1.0}
    assert ex.n_seeds == 2 and ex.has("Non-linear FT", "target")
    rows = sr.table1([run, run], "T5-Small")
    assert all(r["seeds"] == 2 for r in rows) and {r["method"] for r in rows} >= {"Non-linear FT"}


def test_declared_table5_merges_and_adamerging_correctness(wb):
    """The notebook's path: a seed's evaluation sets come from its declared Table 1-2 job, the Table 5 merges are
    the declared merge jobs (the same cached results merging_scheme returns), and table5_adamerging_correctness
    puts their per-example correctness beside the source's first-seed vectors."""
    from repro.jobcall import ChapterJobs
    from repro.jobs import make_job
    from repro.p2.task_arithmetic.jobs import TABLE5_ROLE, TABLE12_ROLE
    from repro.p2.zoo import method_jobs
    from repro.workbench import Workbench

    ev = ar.Evaluator(wb, TASKS, "RTE", n_val=8, n_test=16)
    grid = [0.0, 0.5, 1.0]
    table = {s: ar.merging_scheme(wb, ev, "ft", s, grid, adamerging_steps=2) for s in sr.ADA_SCHEMES}
    run = sr.SeedRun(13, wb, ev, {"ft": ar.run_method(wb, ev, "ft", grid)}, ar.zero_shot_summary(ev))
    # the same artifacts through declared jobs, on a second (guarded) Workbench of the same store
    prof, nb = wb.profile, "p2_test"
    zoo = [method_jobs(prof, nb, t, "ft", 13)[-1] for t in TASKS]
    common = dict(seed=13, tasks=list(TASKS), control="RTE", n_val=8, n_test=16, alphas=grid, model=prof.model)
    arith = make_job("arithmetic", "repro.p2.arithmetic.run_method", prof, nb, deps=zoo, role=TABLE12_ROLE,
                     key="ft", negation=True, **common)
    merges = [make_job("merge", "repro.p2.arithmetic.merging_scheme", prof, nb, deps=[*zoo, arith], role=TABLE5_ROLE,
                       source="ft", scheme=s, adamerging_steps=2, **common) for s in sr.ADA_SCHEMES]
    jobs = ChapterJobs(Workbench(prof, artifacts_dir=wb.store.root.parent), nb, None, specs=[*zoo, arith, *merges])
    ev2 = sr.seed_evaluator(jobs, 13)
    assert ev2.config() == ev.config()
    got = sr.table5_merges(jobs, 13)
    assert set(got) == {("ft", s) for s in sr.ADA_SCHEMES}
    for s in sr.ADA_SCHEMES:
        assert got[("ft", s)]["test"] == pytest.approx(table[s]["test"])
        for t in TASKS:
            assert np.mean(got[("ft", s)]["test_correct"][t]) == pytest.approx(table[s]["test"][t])
    assert jobs.record()["unused"] == []  # the merges obtain their upstream jobs first
    ex5 = sr.table5_adamerging_correctness(got, sr.Correctness.from_runs([run]), source="ft")
    assert ex5.has("Layer-wise AdaMerging", "addition") and ex5.n_seeds == 1
    np.testing.assert_array_equal(ex5.stacked("Task-wise AdaMerging", "single")[0],
                                  ex5.stacked("Non-linear FT", "single")[0])
