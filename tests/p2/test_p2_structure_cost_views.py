"""Tables and figures of the P2 structure-and-cost chapter (repro.p2.structure_cost.views) on hand-made inputs."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from repro.p2.structure_cost import views  # noqa: E402


def _placement() -> pd.DataFrame:
    rows = []
    for method, q, v in (("TaLoS", 8, 1), ("LoTA", 2, 3)):
        for layer in (0, 1):
            rows += [dict(method=method, layer=layer, type="Q", kind="weight", selected=q, eligible=10),
                     dict(method=method, layer=layer, type="V", kind="weight", selected=v, eligible=10),
                     dict(method=method, layer=layer, type="Q", kind="bias", selected=1, eligible=2)]
    return pd.DataFrame(rows)


def test_by_type_shares_and_fig4_rows():
    by_type = views.placement_by_type(_placement())
    got = {(r.method, r.group): r.selected_pct for r in by_type.itertuples()}
    assert got[("TaLoS", "Q weight")] == pytest.approx(80.0)
    assert got[("LoTA", "V weight")] == pytest.approx(30.0)
    assert got[("TaLoS", "Q bias")] == pytest.approx(50.0)
    rows = views.fig4_rows(by_type, "T", {"TaLoS": 0.1, "LoTA": 0.2})
    assert len(rows) == 6 and {r["density"] for r in rows if r["method"] == "LoTA"} == {0.2}
    assert all(r["metric"] == "selected_pct" and r["task"] == "T" for r in rows)


def test_summaries_and_summary_table():
    summaries = views.placement_summaries(_placement())
    assert list(summaries) == ["TaLoS", "LoTA"]
    assert summaries["TaLoS"]["top_weight_types"][0] == "Q"
    table = views.summary_table(summaries)
    assert table.loc["blocks whose top matrix is Q or K", "TaLoS"] == "100 %"
    assert table.loc["blocks whose top matrix is Q or K", "LoTA"] == "0 %"


def test_figures_draw_one_panel_per_method():
    placement = _placement()
    fig4 = views.plot_fig4(views.placement_by_type(placement), "T")
    assert "T" in fig4.axes[0].get_title()
    fig5 = views.plot_fig5(placement)
    assert [ax.get_title() for ax in fig5.axes if ax.get_title()] == [
        "Fig. 5 — LoTA (% selected per weight matrix)", "Fig. 5 — TaLoS (% selected per weight matrix)"]
    ratios = [dict(method=m, metric=k, value=1.0, paper=0.5) for m in ("TaLoS", "LoTA") for k in ("a", "b")]
    g = views.plot_cost_ratios(ratios)
    assert len(g.axes) == 2
    plt.close("all")


def _t4() -> dict:
    return {"talos": {"mask_calibration_time": 2.0, "mask_calibration_peak_memory": 1.0, "train_time": 20.0,
                      "total_time": 22.0},
            "lota": {"mask_calibration_time": 4.0, "mask_calibration_peak_memory": 2.0, "train_time": 30.0,
                     "total_time": 34.0},
            "ft": {"mask_calibration_time": 0.0, "mask_calibration_peak_memory": 0.0, "train_time": 11.0,
                   "total_time": 11.0}}


def _printed() -> pd.DataFrame:
    cells = {("TaLoS", "mask_calibration_time"): 10.0, ("TaLoS", "mask_calibration_peak_memory"): 3.0,
             ("TaLoS", "train_time"): 100.0, ("TaLoS", "total_time"): 110.0,
             ("LoTA", "mask_calibration_time"): 40.0, ("LoTA", "mask_calibration_peak_memory"): 6.0,
             ("Non-linear FT", "total_time"): 220.0}
    return pd.DataFrame([dict(method=m, metric=k, value=v) for (m, k), v in cells.items()])


def test_table4_rows_beside_the_printed_cells():
    labels = {"talos": "TaLoS", "lota": "LoTA", "ft": "Non-linear FT"}
    rows = views.table4_result_rows(_t4(), _printed(), labels, "T")
    by = {(r["method"], r["metric"]): r for r in rows}
    assert by[("TaLoS", "train_time")]["paper"] == 100.0 and by[("TaLoS", "train_time")]["unit"] == "s"
    assert by[("LoTA", "mask_calibration_peak_memory")]["unit"] == "GiB"
    assert by[("Non-linear FT", "train_time")]["paper"] is None


def test_table4_ratios_ours_and_paper():
    r = views.table4_ratios(_t4(), _printed(), calibration_seconds=3.0, n_calibration=6, fwd_bwd_s=0.25)
    assert list(r.ours) == pytest.approx([0.5, 0.5, 0.1, 2.0, 2.0])
    assert list(r.paper[:4]) == pytest.approx([0.25, 0.5, 0.1, 0.5])
    assert pd.isna(r.paper.iloc[4])
