"""The P1 §4 figures (repro.p1.calibration_ood.views) draw from hand-made rows."""

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402

from repro.p1.calibration_ood import views  # noqa: E402


def test_fig7_wise_one_panel_per_source_titled():
    wise = pd.DataFrame([{"method": m, "source": s, "alpha": a, "id": 0.5 + a / 4, "ood": 0.5 + a / 8}
                         for s in ("QNLI", "MPQA") for m in ("WiSE-FT", "WiSE-Graft") for a in (0.0, 0.5, 1.0)])
    fig = views.fig7_wise(wise, ["QNLI", "MPQA"], {"QNLI": "QNLI → MNLI", "MPQA": "MPQA → SST-2"})
    assert [ax.get_title() for ax in fig.axes] == ["QNLI → MNLI", "MPQA → SST-2"]
    assert len(fig.axes[0].texts) == 6  # an α label per point


def test_fig7_panels_per_pair():
    ood = pd.DataFrame([{"source": "QNLI", "target": "MNLI", "method": m, "sparsity": sp, "acc": 0.6}
                        for m, sp in (("FT", 100.0), ("Grafting", 0.01), ("Grafting", 0.1))])
    assert len(views.fig7(ood, [("QNLI", "MNLI")]).axes) == 1
