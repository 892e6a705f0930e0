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


def test_adamerging_correct_reproduces_the_table5_merge(wb):
    """The re-learned AdaMerging model scores exactly the accuracies merging_scheme reported (same seed and
    settings), and table5_adamerging_correctness puts it beside the source's first-seed vectors."""
    ev = ar.Evaluator(wb, TASKS, "RTE", n_val=8, n_test=16)
    grid = [0.0, 0.5, 1.0]
    for scheme in sr.ADA_SCHEMES:
        table = ar.merging_scheme(wb, ev, "ft", scheme, grid, adamerging_steps=2)
        c = sr.adamerging_correct(wb, ev, "ft", scheme, grid, adamerging_steps=2)
        for t in TASKS:
            assert c["test"][t] == pytest.approx(table["test"][t])
            assert np.mean(c["test_correct"][t]) == pytest.approx(table["test"][t])
    with pytest.raises(ValueError, match="adamerging_correct needs"):
        sr.adamerging_correct(wb, ev, "ft", "ties", grid)
    run = sr.SeedRun(13, wb, ev, {"ft": ar.run_method(wb, ev, "ft", grid)}, ar.zero_shot_summary(ev))
    ex5 = sr.table5_adamerging_correctness(wb, ev, sr.Correctness.from_runs([run]), grid, 2, source="ft")
    assert ex5.has("Layer-wise AdaMerging", "addition") and ex5.n_seeds == 1
    np.testing.assert_array_equal(ex5.stacked("Task-wise AdaMerging", "single")[0],
                                  ex5.stacked("Non-linear FT", "single")[0])
