"""The results JSON format (repro.report.results) and the printed reference tables (repro.report.reference)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from repro.report.reference import load_reference, printed, reference_rows, select
from repro.report.results import Results, ResultsError, load_results, paper_vs_ours, pct, validate


def _row(**kw):
    row = dict(task="SST-2", method="Graft", sparsity=0.01, metric="acc", value=91.0, std=0.5, paper=92.4)
    row.update(kw)
    return row


def _claim(**kw):
    c = dict(id="p1-table2-recovery", text="graft recovers >95%", paper=">95%", ours=None, holds=None, note="")
    c.update(kw)
    return c


def _obj(**kw):
    obj = {"tables": {"p1-table2": [_row()]}, "figures": {"p1-fig2": [{"x": 1, "y": 2.0}]}, "claims": [_claim()]}
    obj.update(kw)
    return obj


def test_valid_object_passes():
    validate(_obj(), require_nonempty=True)
    validate(_obj(figures={}))


@pytest.mark.parametrize("bad", ["table2", "p3-table1", "p1-tab2", "p1-table0", "P1-table2", "p1-fig", "p1_table2"])
def test_bad_table_ids_are_rejected_with_the_convention(bad):
    with pytest.raises(ResultsError, match="p1-table2"):
        validate(_obj(tables={bad: [_row()]}))


def test_panel_and_slug_ids_are_accepted():
    validate(_obj(tables={"p1-fig7e": [_row()], "p1-table2-ece": [_row()], "p2-fig11": [_row()]}))


def test_missing_row_keys_are_named():
    row = _row()
    del row["std"]
    with pytest.raises(ResultsError, match=r"missing keys \['std'\]"):
        validate(_obj(tables={"p1-table2": [row]}))


@pytest.mark.parametrize("key,value", [("value", "91"), ("paper", True), ("sparsity", "0.01%"), ("task", ""),
                                       ("std", float("nan"))])
def test_wrong_row_types_are_rejected(key, value):
    with pytest.raises(ResultsError, match=key):
        validate(_obj(tables={"p1-table2": [_row(**{key: value})]}))


def test_missing_top_level_keys_and_unknown_keys():
    with pytest.raises(ResultsError, match="claims"):
        validate({"tables": {}, "figures": {}})
    with pytest.raises(ResultsError, match="unknown top-level"):
        validate(dict(_obj(), extra=1))


@pytest.mark.parametrize("holds", ["yes", 1, 0.0])
def test_claim_verdict_must_be_bool_or_null(holds):
    with pytest.raises(ResultsError, match="holds"):
        validate(_obj(claims=[_claim(holds=holds)]))


def test_claim_ids_follow_the_table_ids_and_are_unique():
    with pytest.raises(ResultsError, match="claim id"):
        validate(_obj(claims=[_claim(id="recovery")]))
    with pytest.raises(ResultsError, match="duplicate"):
        validate(_obj(claims=[_claim(), _claim()]))
    with pytest.raises(ResultsError, match="missing keys"):
        validate(_obj(claims=[{"id": "p1-table2-x", "text": "t"}]))


def test_nonempty_required_for_the_book():
    with pytest.raises(ResultsError, match="tables"):
        validate(_obj(tables={}), require_nonempty=True)
    with pytest.raises(ResultsError, match="claims"):
        validate(_obj(claims=[]), require_nonempty=True)


def test_builder_cleans_numbers_and_saves_atomically(tmp_path):
    res = Results("p1_localization", "smoke", params={"seed": np.int64(13)})
    rows = res.add_table("p1-table2", [_row(value=np.float32(0.5), std=float("nan"))])
    assert rows[0]["value"] == pytest.approx(0.5) and rows[0]["std"] is None
    res.add_figure("p1-fig2", [{"sparsity": np.float64(0.01), "acc": np.array(0.9)}])
    res.add_claim("p1-table2-recovery", "text", paper=">95%", ours=96.1, holds=np.bool_(True), note="3 seeds")
    with pytest.raises(ResultsError, match="unique"):
        res.add_claim("p1-table2-recovery", "text", holds=False)  # ids are unique: no silent replacement
    path = res.save(tmp_path)
    assert path == tmp_path / "smoke" / "p1_localization.json"
    obj = load_results(path, require_nonempty=True)
    assert obj["meta"]["notebook"] == "p1_localization" and obj["meta"]["params"] == {"seed": 13}
    assert len(obj["claims"]) == 1 and obj["claims"][0]["holds"] is True
    assert obj["claims"][0]["verdict"] == "holds" and obj["claims"][0]["beyond_paper"] is False
    assert not list((tmp_path / "smoke").glob("*.tmp"))
    json.loads(path.read_text())


def test_builder_rejects_bad_input_before_saving(tmp_path):
    res = Results("p1_localization", "smoke")
    with pytest.raises(ResultsError):
        res.add_table("table2", [_row()])
    with pytest.raises(ResultsError):
        res.add_claim("p1-table2-x", "text", holds="maybe")
    with pytest.raises(ResultsError, match="tables"):
        res.save(tmp_path)  # nothing to save
    assert not (tmp_path / "smoke" / "p1_localization.json").exists()


def test_paper_vs_ours_delta_and_formatting():
    rows = [_row(value=92.0, std=0.2, paper=92.4, shots=64), _row(value=None, std=None, paper=90.5, shots=4096),
            _row(metric="ece", value=3.0, std=None, paper=None, shots=64)]
    num = paper_vs_ours(rows, formatted=False)
    assert list(num.columns) == ["ours", "ours_std", "paper", "paper_std", "delta"]
    assert "shots" in num.index.names  # varying extra key becomes part of the index
    assert num["delta"].iloc[0] == pytest.approx(-0.4)
    assert math.isnan(num["delta"].iloc[1]) and math.isnan(num["delta"].iloc[2])
    txt = paper_vs_ours(rows)
    assert txt["ours"].iloc[0] == "92.0 ± 0.2 %" and txt["paper"].iloc[0] == "92.4%"
    assert txt["Δ (ours − paper)"].iloc[0] == "-0.4 pp" and txt["ours"].iloc[1] == "—"
    assert pct(0.923) == pytest.approx(92.3)


def test_paper_vs_ours_drops_constant_extras_and_rejects_a_results_dict():
    rows = [_row(model="RoBERTa-base", shots=64), _row(method="FT", model="RoBERTa-base", shots=64)]
    assert "model" not in paper_vs_ours(rows).index.names
    with pytest.raises(TypeError):
        paper_vs_ours(_obj())


# ---------------------------------------------------------------------------------------------------- reference
def test_every_printed_table_loads_and_converts_to_valid_rows():
    for paper, n in (("p1", 9), ("p2", 5)):
        for t in range(1, n + 1):
            df = load_reference(paper, t)
            assert len(df) > 0 and df["value"].notna().all()
            rows = reference_rows(paper, t)
            assert len(rows) == len(df)
            validate(_obj(tables={f"{paper}-table{t}": rows}))


def test_printed_lookups():
    assert printed("p1", 2, task="SST-2", method="Graft", shots=4096, metric="acc") == 92.4
    assert printed("grafting", "table8", task="SST-2", sparsity=0.01, method="Graft", metric="acc") == 92.4
    assert printed("p2", "p2-table1", model="ViT-B/32", method="TaLoS", metric="abs_acc") == 79.67
    assert printed("p1", 2, task="TREC", shots=4096, method="FT", metric="acc") is None  # a '-' cell


def test_reference_errors_name_the_choices():
    with pytest.raises(ValueError, match="grafting"):
        load_reference("p3", 1)
    with pytest.raises(ValueError, match=r"\[1, 2, 3, 4, 5\]"):
        load_reference("p2", 7)
    with pytest.raises(KeyError, match="SST-2"):
        select("p1", 2, task="SST-X")
    with pytest.raises(KeyError, match="columns"):
        select("p1", 2, dataset="SST-2")
    with pytest.raises(KeyError, match="narrow down"):
        printed("p1", 2, task="SST-2")


def test_reference_rows_carry_paper_std_and_extras():
    rows = reference_rows("p1", 1, task="SST-2", method="FT", metric="acc")
    assert rows == [{"task": "SST-2", "method": "FT", "sparsity": 100.0, "metric": "acc", "value": None,
                     "std": None, "paper": 92.3, "paper_std": 0.3, "model": "RoBERTa-base", "shots": 4096}]
    ood = reference_rows("p1", 3, ood_task="Yelp", method="Grafting")
    assert ood[0]["task"] == "Yelp" and ood[0]["id_task"] == "SST-2"


def test_claims_record_the_provenance_of_their_tasks_and_per_task_verdicts():
    import numpy as np

    from repro.profiles import get_profile
    from repro.report.results import ResultsError, validate_claim
    from repro.report.verdicts import compare

    res = Results("p1_localization", "cpu")  # the cpu profile reads CR from a packaged corpus, QNLI generated
    f = np.r_[np.ones(90), np.zeros(10)]
    parts = {t: compare(f, f, kind="ratio", op=">=", margin=0.95) for t in ("CR", "QNLI")}
    c = res.add_claim("p1-table2-recovery", "t", verdict=parts["CR"][0], evidence=parts["CR"][1],
                      tasks=["CR", "QNLI", "CR"], per_task=parts)
    assert [(d["task"], d["kind"]) for d in c["data"]] == [("CR", "real"), ("QNLI", "generated")]
    assert c["data"][0]["source"] == "vader-amazon" and set(c["evidence"]["per_task"]) == {"CR", "QNLI"}
    assert c["evidence"]["per_task"]["CR"]["verdict"] == "holds"
    cost = res.add_claim("p2-table3-cost", "t", holds=True, note="timing", tasks=())
    assert cost["data"] == []
    local = Results("p1_localization", "smoke", params={"data_dir": "/tmp/mydata"})
    assert local.add_claim("p1-fig2-x", "t", holds=True, tasks=["SST-2"])["data"][0]["source"] == "local"
    p2 = Results("p2_task_arithmetic", "paper", data_profile=get_profile("paper").for_p2("vision", "p2_task_arithmetic"))
    assert p2.provenance(["Cars"])[0]["source"] == "hub-vision"
    with pytest.raises(ResultsError, match="kind"):
        validate_claim(dict(c, data=[dict(c["data"][0], kind="synthetic")]))
    with pytest.raises(ResultsError, match="per_task"):
        validate_claim(dict(c, evidence=dict(c["evidence"], per_task={"CR": {"verdict": "holds"}})))
    with pytest.raises(ResultsError, match="string"):
        res.add_claim("p1-table2-y", "t", holds=True, tasks="SST-2")


def test_the_learning_gate_turns_a_verdict_into_not_testable_with_its_numbers():
    import numpy as np

    from repro.report.gates import learned

    res = Results("p1_localization", "smoke")
    ev = {"n_examples": 100, "seeds": 1, "statistic": 1.0, "ci_low": 1.0, "ci_high": 1.0, "margin": 0.95,
          "test": "exact", "op": ">="}
    chance = learned("SST-2", np.r_[np.ones(50), np.zeros(50)])
    c = res.add_claim("p1-table2-recovery", "t", verdict="holds", evidence=ev, note="ratio >= 0.95",
                      tasks=["SST-2"], learned=[chance], regions={"SST-2 region": 0})
    assert c["verdict"] == "not-testable" and c["holds"] is None
    assert c["note"].startswith("not testable; learning gate") and "empty-region gate" in c["note"]
    assert c["note"].endswith("; rule otherwise: ratio >= 0.95")
    ok = learned("SST-2", np.r_[np.ones(95), np.zeros(5)])
    c = res.add_claim("p1-table2-x", "t", verdict="holds", evidence=ev, tasks=["SST-2"], learned=[ok],
                      regions={"SST-2 region": 12})
    assert c["verdict"] == "holds"
    res.record_learning(ok)
    assert res.learned_on(["SST-2", "QNLI"])[0] is ok and not res.learned_on(["QNLI"])[0].ok


def test_a_cost_claim_measured_on_a_tiny_random_init_model_is_not_testable():
    from repro.report.results import Results

    res = Results("p2_structure_cost", "smoke")
    c = res.add_claim("p2-table3-x", "TaLoS is fastest.", verdict="holds", tasks=(), measured_on="tiny-bert",
                      note="ratio CI below 1")
    assert c["verdict"] == "not-testable" and "tiny random-init" in c["note"] and "ratio CI below 1" in c["note"]
    c = res.add_claim("p2-table3-y", "TaLoS is fastest.", verdict="holds", tasks=(), measured_on="minilm")
    assert c["verdict"] == "holds"
