"""Tables and figures of the P2 appendix chapter (repro.p2.appendix.views) on hand-made inputs."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from repro.p2.appendix import views  # noqa: E402

TASKS = ["A", "B", "C"]


def _summary(x: float, density: float) -> dict:
    return {"single": x, "abs": x - 0.1, "norm": x + 0.1, "target": 0.3, "control": 0.6, "density": density,
            "alpha": 0.5}


def test_fig9_rows_table_and_radar():
    single = {"TaLoS": {t: {"test": 0.8} for t in TASKS}, "LoTA": {t: {"test": 0.6 + 0.1 * i}
                                                                     for i, t in enumerate(TASKS)}}
    rows = views.fig9_rows(single, {t: 0.5 for t in TASKS}, TASKS)
    assert len(rows) == 9 and rows[-1]["method"] == views.ZERO_SHOT and rows[-1]["value"] == pytest.approx(50.0)
    table = views.fig9_table(rows, TASKS)
    assert list(table.columns) == TASKS + ["mean"]
    assert table.loc["LoTA", "mean"] == pytest.approx(70.0) and table.loc["TaLoS", "A"] == pytest.approx(80.0)
    fig = views.plot_fig9(table, TASKS)
    assert len(fig.axes[0].get_lines()) == 3
    plt.close("all")


def test_fig8_and_graft_rows():
    sweep = {0.0: _summary(0.7, 1.0), 0.9: _summary(0.8, 0.1)}
    rows = views.fig8_rows(sweep)
    assert len(rows) == 10 and {r["metric"] for r in rows} == set(views.FIG8_METRICS.values())
    k9 = {r["metric"]: r for r in rows if r["k"] == 0.9}
    assert k9["single_acc"]["value"] == pytest.approx(80.0) and k9["norm_acc"]["sparsity"] == pytest.approx(10.0)
    views.plot_fig8(rows)
    graft = views.graft_comparison_rows({"Non-linear FT": sweep[0.0], "TaLoS": None, "Grafted": _summary(0.6, 1e-4)})
    assert {r["method"] for r in graft} == {"Non-linear FT", "Grafted"}
    assert next(r for r in graft if r["method"] == "Grafted")["sparsity"] == pytest.approx(0.01)
    plt.close("all")


def test_overlap_rows_keep_each_unordered_pair_once():
    rows = [dict(task="A", a=a, b=b, iou=0.2, iou_random=0.05, containment=0.4, containment_random=0.1)
            for a in ("LoTA", "TaLoS") for b in ("LoTA", "TaLoS") if a != b]
    out = views.overlap_iou_rows(rows)
    assert [r["method"] for r in out] == ["LoTA vs TaLoS"]
    assert out[0]["value"] == pytest.approx(20.0) and out[0]["containment_random"] == pytest.approx(10.0)
    fig = views.plot_containment(rows)
    assert "containment" in fig.axes[0].get_title()
    plt.close("all")
