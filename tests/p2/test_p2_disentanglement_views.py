"""Tables and figures of the P2 §5.2 chapter (repro.p2.disentanglement.views): row assembly on stubbed analyses
(the analyses themselves are tested in test_disentanglement_linear.py) and the figures on hand-made rows."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from repro.p2.disentanglement import views  # noqa: E402
from repro.p2.methods import METHODS  # noqa: E402

KEYS = ["ft", "linearized"]
LABELS = [METHODS[k].label for k in KEYS]
TASKS = ["A", "B"]
GRID = [-1.0, 0.0, 1.0]


def _grid_cells(wb, tau1, tau2, t1, t2, ex1, ex2, grid, linear=False):
    xi = 0.1 if linear else 0.5
    cells = [{"alpha1": a, "alpha2": b, "xi": xi * (a >= 0) * (b >= 0)} for a in grid for b in grid]
    return cells, ([xi] * len(ex1), [0.0] * len(ex2))


def _loc_cells(wb, vectors, tasks, examples, linear=False, pre_scores=None):
    assert pre_scores == {"A": 0.5, "B": 0.5}
    return [{"ft_task": i, "eval_task": j, "diagonal": i == j, "value": 0.8 if i == j else 0.5,
             "ratio": (1.6 if i == j else 1.0) * (0.9 if linear else 1.0)} for i in tasks for j in tasks]


class _WB:
    model = pre = None

    def evaluate(self, task, examples):
        return {"value": 0.5}


def test_fig2_rows_per_pair_and_method(monkeypatch):
    monkeypatch.setattr(views, "disentanglement_grid", _grid_cells)
    vectors = {k: {t: {} for t in TASKS} for k in KEYS}
    grid_rows, rows, per_example = views.fig2_tables(_WB(), vectors, KEYS, [("A", "B")], {"A": [1] * 4, "B": [1] * 4}, GRID, 3, 4)
    assert len(grid_rows) == 2 * 9 and {r["pair"] for r in grid_rows} == {"A + B"}
    by = {r["method"]: r for r in rows}
    assert by["Linearized FT"]["value"] < by["Non-linear FT"]["value"]
    assert by["Non-linear FT"]["grid"] == "3x3 on [-3,3]^2" and by["Non-linear FT"]["n_per_task"] == 4
    assert per_example["Linearized FT"]["A + B"] == ([0.1] * 4, [0.0] * 4) and set(per_example) == set(LABELS)
    views.plot_fig2(grid_rows, [("A", "B")], LABELS)
    plt.close("all")


def test_fig3_and_fig6_rows(monkeypatch):
    monkeypatch.setattr(views, "function_localization", _loc_cells)
    monkeypatch.setattr(views, "linearized_scores",
                        lambda model, ex, t, pre, vec, batch_size: {"ft": 0.8, "lin": 0.7, "agreement": 0.9,
                                                                    "ft_correct": [1, 1], "lin_correct": [1, 0]})
    vectors = {k: {t: {} for t in TASKS} for k in KEYS}
    sets = {t: [1, 2] for t in TASKS}
    loc_rows, rows = views.fig3_tables(_WB(), vectors, KEYS, TASKS, sets)
    by = {(r["method"], r["metric"]): r["value"] for r in rows}
    assert by[("Non-linear FT", "diagonal_ratio")] == pytest.approx(1.6)
    assert by[("Linearized FT", "off_diagonal_abs_dev")] == pytest.approx(0.1)
    lin, correct = views.fig6_tables(_WB(), vectors, KEYS, TASKS, sets, loc_rows, batch_size=2)
    assert correct == {"Non-linear FT": {t: {"ft": [1, 1], "lin": [1, 0]} for t in TASKS}}
    ft = [r for r in lin if r["method"] == "Non-linear FT"]
    assert [r["value"] for r in ft] == pytest.approx([-10.0, -10.0]) and not ft[0]["by_construction"]
    own = [r for r in lin if r["method"] == "Linearized FT"]
    assert all(r["value"] == 0 and r["agreement"] == 100 and r["by_construction"] for r in own)
    summary = views.fig6_summary(lin)
    assert summary.loc["Non-linear FT", "abs_gap"] == pytest.approx(10.0)
    views.plot_fig3(loc_rows, TASKS, LABELS)
    views.plot_fig6(lin)
    plt.close("all")


def test_fig7_table_takes_the_last_step():
    drift = [dict(step=s, rel_change=v * s, rel_per_example=[v * s - 0.1, v * s + 0.1], method=m)
             for m, v in (("A", 0.1), ("B", 0.2)) for s in (0, 5, 10)]
    rows, last = views.fig7_table(drift, "T", 10, 40)
    assert {m: v.mean() for m, v in last.items()} == pytest.approx({"A": 1.0, "B": 2.0})
    assert [r["value"] for r in rows] == pytest.approx([1.0, 2.0])
    assert all(r["step"] == 10 and r["of_steps"] == 40 and r["task"] == "T" for r in rows)
    fig = views.plot_fig7(drift, "T", 8, 40)
    assert "T, 8 examples" in fig.axes[0].get_title()
    plt.close("all")
