"""The figures of the P1 §5 chapter (repro.p1.multitask_continual.views)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from repro.p1.multitask_continual import views  # noqa: E402


def test_heatmap_order_puts_groups_after_the_tasks():
    fig, ax = plt.subplots()
    cells = [{"row": r, "col": c, "v": float(r == c)} for r in ("B", "A", "G") for c in ("B", "A")]
    views.plot_heatmap(ax, cells, "v", "t", order=("A", "B"))
    assert [t.get_text() for t in ax.get_xticklabels()] == ["A", "B"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["A", "B", "G"]  # groups after the tasks
    plt.close(fig)


def test_fig8_leaves_the_panels_a_study_lacks_empty():
    overlap = [{"row": r, "col": c, "overlap": float(r == c)} for r in "AB" for c in "AB"]
    single = [{"region": r, "task": t, "rel": 0.5} for r in "AB" for t in "AB"]
    union = [{"region": "g", "task": t, "rel": 0.8} for t in "AB"]
    fig = views.fig8({"overlap": overlap, "single": single, "union": union}, ("A", "B"), 2)
    assert [bool(ax.collections) for ax in fig.axes] == [True, True, True, False]
    plt.close(fig)
    fig = views.overlap_and_rel({"overlap": overlap, "single": single}, "SGD MT", ("A", "B"))
    assert [ax.get_title() for ax in fig.axes] == ["SGD MT: overlap", "SGD MT: Rel"]
    plt.close(fig)
