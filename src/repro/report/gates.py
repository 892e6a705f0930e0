"""When a claim can be tested at all: the one place for "not testable" gates, used by both papers' claims.

- :func:`not_testable` is the one way a claim is withheld: the ``add_claim`` keyword arguments of a not-testable
  verdict with its reason (and, optionally, the rule it would otherwise be judged by); :func:`gate` picks between
  that and the rule's own outcome.
- A claim about vision models (ViT-B/32, "in vision") is judged only on a vision model: :func:`vision_reason`.

- Normalized accuracy (P2 §5.1: absolute accuracy divided by the method's own single-task accuracy) means
  nothing for a task the method barely learned: :func:`low_gain_tasks` lists the tasks whose single-task gain
  over zero-shot is under 5 points, and their normalized-accuracy verdicts are withheld (not testable).
- Task negation (Table 2) keeps a control task at ≥ 95 % of its zero-shot accuracy; a control that is not clearly
  above chance at zero-shot (< chance + 10 points) makes that constraint vacuous: :func:`negation_control_reason`.

:func:`gate` turns a rule's outcome and such a reason into the keyword arguments of ``Results.add_claim``.
"""

from __future__ import annotations

from typing import Any, Mapping

MIN_GAIN_POINTS = 5.0
CONTROL_MARGIN_POINTS = 10.0


def low_gain_tasks(single: Mapping[str, float], zero_shot: Mapping[str, float],
                   min_gain: float = MIN_GAIN_POINTS) -> dict[str, float]:
    """Tasks whose single-task accuracy (fractions) beats zero-shot by less than ``min_gain`` points, with the gain."""
    missing = sorted(set(single) - set(zero_shot))
    if missing:
        raise KeyError(f"no zero-shot accuracy for tasks {missing}; pass zero_shot for every task of single")
    gains = {t: 100.0 * (single[t] - zero_shot[t]) for t in single}
    return {t: g for t, g in gains.items() if g < min_gain}


def normalized_reason(single: Mapping[str, float], zero_shot: Mapping[str, float], method: str = "TaLoS",
                      min_gain: float = MIN_GAIN_POINTS) -> str | None:
    """Why normalized-accuracy verdicts are withheld (or None when every task was learned)."""
    low = low_gain_tasks(single, zero_shot, min_gain)
    if not low:
        return None
    listed = ", ".join(f"{t} {g:+.1f}" for t, g in sorted(low.items()))
    return (f"normalized accuracy withheld: {method}'s single-task gain over zero-shot is under {min_gain:g} points "
            f"on {listed}")


def negation_control_reason(zero_shot_control: float, n_classes: int,
                            margin: float = CONTROL_MARGIN_POINTS) -> str | None:
    """Why the negation claims are not testable (or None): the control's zero-shot accuracy (a fraction) must be
    at least chance + ``margin`` points, or keeping 95 % of it constrains nothing."""
    if n_classes < 2:
        raise ValueError(f"a classification control task needs at least 2 classes, got {n_classes}")
    chance = 100.0 / n_classes
    acc = 100.0 * zero_shot_control
    if acc >= chance + margin:
        return None
    return (f"negation not testable: the control's zero-shot accuracy {acc:.1f}% is below chance + {margin:g} "
            f"points ({chance + margin:.1f}%), so keeping 95% of it constrains nothing")


def is_vision_model(model: str) -> bool:
    """True for the CLIP ViT image encoders (the papers' vision setting)."""
    m = model.lower()
    return "clip" in m or "vit" in m


def vision_reason(model: str) -> str | None:
    """Why a vision-only claim is not testable with ``model`` (or None for a vision model)."""
    if is_vision_model(model):
        return None
    return f"vision claim: judged only on a CLIP ViT, and this profile's model is {model}"


def not_testable(reason: str, rule: str = "") -> dict[str, Any]:
    """``add_claim`` keyword arguments of a not-testable verdict: the reason, then the rule otherwise applied."""
    if not reason:
        raise ValueError("a not-testable claim needs its reason (the profile, plan or data that cannot test it)")
    return {"verdict": "not-testable", "note": f"{reason}; rule otherwise: {rule}" if rule else reason}


def gate(holds: bool | None, reason: str | None, note: str = "") -> dict[str, Any]:
    """``add_claim`` keyword arguments: the rule's ``holds`` and ``note``, or not-testable with the reason."""
    if reason:
        return not_testable(reason, note)
    return {"holds": holds, "note": note}


__all__ = ["CONTROL_MARGIN_POINTS", "MIN_GAIN_POINTS", "gate", "is_vision_model", "low_gain_tasks",
           "negation_control_reason", "normalized_reason", "not_testable", "vision_reason"]
