"""The claims of P2 §5.2 and App. A.4 (``notebooks/p2_disentanglement.md``), one function each.

Each function takes the chapter's table rows, adds one claim to ``res`` and returns it (the notebook shows it
as a verdict box); each docstring quotes what the paper says.  The numbers here are means over a grid or over
tasks, not per-example correctness of two models on the same examples, so every rule is a point rule (no CI),
and each note says so.  The claims about ViT-B/32 are judged only on a vision model
(:func:`repro.p2.claim_gates.vision_reason`); the T5 claim only on a language model.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from repro.p2.claim_gates import gate, is_vision_model, vision_reason
from repro.p2.methods import METHODS, P2_METHODS
from repro.report.results import Results

LABELS: dict[str, str] = {k: METHODS[k].label for k in P2_METHODS}
FT, LIN, LLORA, LOTA, TALOS = (LABELS[k] for k in ("ft", "linearized", "l-lora", "lota", "talos"))
POINT_RULE = "point rule on means (no per-example pairing, no CI)"


def _by_method(rows: Sequence[Mapping], what: str, metric: str | None = None) -> dict[str, float]:
    """Mean ``value`` per method; every P2 method must be there (a missing one is an error, not a dropped clause)."""
    vals: dict[str, list[float]] = {}
    for r in rows:
        if metric is None or r.get("metric") == metric:
            vals.setdefault(r["method"], []).append(float(r["value"]))
    missing = [m for m in LABELS.values() if m not in vals]
    if missing:
        raise ValueError(f"{what}: no rows for {missing}; every P2 method ({list(LABELS.values())}) must be "
                         "evaluated (the linearized ones on their linearized network) before its claim is judged")
    return {m: float(np.mean(v)) for m, v in vals.items()}


def language_reason(model: str) -> str | None:
    """Why a T5 (language) claim is not testable with ``model`` (or None for a text model)."""
    if not is_vision_model(model):
        return None
    return f"language claim: judged only on a text model, and this profile's model is {model}"


def fig2_vision(res: Results, fig2_rows: Sequence[Mapping], model: str, setting: str) -> dict:
    """"non-linear FT is much less disentangled than linearized FT, L-LoRA and TaLoS, TaLoS being the most
    disentangled; LoTA is much less" — P2 Fig. 2 (ViT-B/32).  Holds when ξ(TaLoS) is the lowest, LoTA is above
    TaLoS and both linearized methods are below non-linear FT (mean ξ over the grid and the pairs)."""
    xi = _by_method(fig2_rows, "p2-fig2", "disentanglement_error")
    ok = (xi[TALOS] <= min(xi.values()) and xi[TALOS] < xi[FT] and xi[LOTA] > xi[TALOS]
          and xi[LIN] < xi[FT] and xi[LLORA] < xi[FT])
    txt = ", ".join(f"{m} {v:.3f}" for m, v in sorted(xi.items(), key=lambda kv: kv[1]))
    return res.add_claim(
        "p2-fig2-vision",
        "On ViT-B/32, linearized FT, L-LoRA and TaLoS are more weight-disentangled than non-linear FT, TaLoS the "
        "most; LoTA is much less disentangled.",
        paper="Fig. 2 (heatmaps)", ours=f"mean ξ: {txt}",
        **gate(bool(ok), vision_reason(model),
               note=f"{model}, {setting}; holds = TaLoS lowest ξ, LoTA above TaLoS, and Linearized FT and L-LoRA "
                    f"(on their linearized network) below non-linear FT; {POINT_RULE}"))


def fig2_language(res: Results, fig2_rows: Sequence[Mapping], model: str, setting: str) -> dict:
    """"On T5-Small […] LoTA is more disentangled than non-linear FT but less than TaLoS" — P2 Fig. 2.
    Holds when ξ(TaLoS) < ξ(LoTA) < ξ(non-linear FT)."""
    xi = _by_method(fig2_rows, "p2-fig2", "disentanglement_error")
    ok = xi[LOTA] < xi[FT] and xi[TALOS] < xi[LOTA]
    return res.add_claim(
        "p2-fig2-language",
        "On T5-Small the patterns are consistent across methods; LoTA beats non-linear FT but loses to TaLoS.",
        paper="Fig. 2 (heatmaps)", ours=f"LoTA {xi[LOTA]:.3f}, non-linear FT {xi[FT]:.3f}, TaLoS {xi[TALOS]:.3f}",
        **gate(bool(ok), language_reason(model),
               note=f"{model} on text tasks, {setting}; holds = ξ(TaLoS) < ξ(LoTA) < ξ(non-linear FT); "
                    f"{POINT_RULE}"))


def fig3_localization(res: Results, fig3_rows: Sequence[Mapping], model: str, setting: str) -> dict:
    """"TaLoS […] only affects the accuracy of the task it was fine-tuned on (diagonal), while the other methods
    interfere with the other tasks" — P2 Fig. 3 (ViT-B/32).  Holds when TaLoS has the smallest off-diagonal
    mean |ratio − 1| (ties count) and a diagonal ratio above 1."""
    off = _by_method(fig3_rows, "p2-fig3", "off_diagonal_abs_dev")
    diag = _by_method(fig3_rows, "p2-fig3", "diagonal_ratio")
    ok = off[TALOS] <= min(off.values()) and diag[TALOS] > 1.0
    return res.add_claim(
        "p2-fig3-localization",
        "A ViT-B/32 fine-tuned with TaLoS on task i changes only task i's accuracy (diagonal only); the other methods "
        "interfere with other tasks.",
        paper="Fig. 3 (heatmaps)",
        ours="off-diagonal mean |ratio − 1|: " + ", ".join(f"{m} {v:.3f}" for m, v in
                                                           sorted(off.items(), key=lambda kv: kv[1]))
             + f"; TaLoS diagonal ratio {diag[TALOS]:.2f}",
        **gate(bool(ok), vision_reason(model),
               note=f"{setting}; holds = TaLoS has the smallest off-diagonal deviation from the pre-trained "
                    f"accuracy (ties count) and improves its own task; {POINT_RULE}"))


def fig6_linear(res: Results, lin_rows: Sequence[Mapping], model: str, within_pp: float = 2.0) -> dict:
    """"TaLoS models […] lie close to the bisector on most tasks, LoTA does not consistently" — P2 Fig. 6
    (vision).  Holds when TaLoS has the smallest mean |linearized − fine-tuned| accuracy gap among the
    non-linearized methods and is within ``within_pp`` points of its linearization on most tasks."""
    gaps: dict[str, list[float]] = {}
    for r in lin_rows:
        if not r["by_construction"]:
            gaps.setdefault(r["method"], []).append(abs(float(r["value"])))
    need = [FT, LOTA, TALOS]
    missing = [m for m in need if m not in gaps]
    if missing:
        raise ValueError(f"p2-fig6: no post-hoc linearization rows for {missing}; evaluate {need}")
    gap = {m: float(np.mean(v)) for m, v in gaps.items()}
    near = float(np.mean([g <= within_pp for g in gaps[TALOS]]))
    ok = gap[TALOS] <= min(gap.values()) and near > 0.5
    return res.add_claim(
        "p2-fig6-linear",
        "TaLoS models behave like their post-hoc linearization on most vision tasks; LoTA does not consistently.",
        paper="Fig. 6 (plotted only)",
        ours="mean |lin − ft| (pp): " + ", ".join(f"{m} {v:.1f}" for m, v in sorted(gap.items(), key=lambda kv: kv[1]))
             + f"; TaLoS within {within_pp:g} pp on {100 * near:.0f} % of tasks",
        **gate(bool(ok), vision_reason(model),
               note=f"holds = TaLoS has the smallest gap among the non-linearized methods and is within "
                    f"{within_pp:g} pp of its linearization on most tasks; {POINT_RULE}"))


def fig7_gradient(res: Results, last: Mapping[str, float], drift_task: str, n_examples: int, step: int,
                  of_steps: int) -> dict:
    """"the gradients of TaLoS stay almost constant during fine-tuning, as for linearized FT, while LoTA's change
    like non-linear FT's" — P2 Fig. 7.  Holds when TaLoS's relative change of ∇θ f at the last checkpoint is less
    than half of LoTA's and of non-linear FT's."""
    missing = [m for m in (FT, LOTA, TALOS) if m not in last]
    if missing:
        raise ValueError(f"p2-fig7: no drift at step {step} for {missing}")
    ok = last[TALOS] < 0.5 * min(last[LOTA], last[FT])
    return res.add_claim(
        "p2-fig7-gradient",
        "During TaLoS fine-tuning the output gradient stays almost constant, like linearized FT; LoTA drifts like "
        "non-linear FT.",
        paper="Fig. 7 (plotted only)",
        ours=", ".join(f"{m} {v:.3g}" for m, v in sorted(last.items(), key=lambda kv: kv[1]))
             + f" (relative change after {step} of {of_steps} steps)",
        holds=bool(ok),
        note=f"{drift_task}, {n_examples} examples; holds = TaLoS's change is less than half of LoTA's and of "
             f"non-linear FT's; {POINT_RULE}" + ("" if step >= of_steps else
                                                 f"; only the first {step} steps are replayed"))


__all__ = ["LABELS", "fig2_language", "fig2_vision", "fig3_localization", "fig6_linear", "fig7_gradient",
           "language_reason"]
