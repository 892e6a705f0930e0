"""The P1 appendix figures (repro.p1.appendix.views) draw from hand-made placement and tracking rows."""

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402

from repro.p1.appendix import views  # noqa: E402


def test_figures_draw_placement_and_tracking_rows():
    place = pd.DataFrame([{"task": "A", "target_sparsity": 1e-3, "layer": li, "type": t, "selected": li + 1,
                           "share_of_region": 0.5} for li in range(2) for t in ("V", "FFN-in")])
    views.plot_layers(place)
    by_type = place.groupby(["task", "target_sparsity", "type"])["share_of_region"].sum().reset_index()
    assert views.plot_modules(by_type, pd.Series({"V": 0.3, "FFN-in": 0.7})) == ["V", "FFN-in"]
    rows = [{"step": st, "model": m, "target_sparsity": 1e-3, "count": 5, "acc": 0.5} for st in (0, 5)
            for m in ("FT", "graft")]
    views.plot_tracking(rows, 5, "A")
