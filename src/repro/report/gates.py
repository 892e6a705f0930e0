"""When a claim can be tested at all: the one place for "not testable" gates, used by both papers' claims.

- :func:`not_testable` is the one way a claim is withheld: the ``add_claim`` keyword arguments of a not-testable
  verdict with its reason (and, optionally, the rule it would otherwise be judged by); :func:`gate` picks between
  that and the rule's own outcome.
- A claim about vision models (ViT-B/32, "in vision") is judged only on a vision model: :func:`vision_reason`.

- **The learning gate** (:func:`learning_reason`), one rule for both papers: a claim about what fine-tuning, grafting
  or sparse fine-tuning *achieved* is judged only when the models it compares learned.  For every deciding task,
  the fine-tuned model must beat its reference — the zero-shot (pre-trained) model where the chapter keeps it, else
  chance — by more than :data:`MIN_GAIN_POINTS` (5) points at the **lower end of the 95 % CI** of the gain (paired
  bootstrap over seeds and test examples when the reference is scored per example, a bootstrap of the fine-tuned
  accuracy against the reference's fixed accuracy otherwise, a normal approximation when only accuracies are kept:
  :func:`learned`, :func:`learned_from_accuracy`); and every region / mask the claim is about must be non-empty,
  and two models a claim tells apart must not be identical (:func:`learning_reason`'s ``regions`` and ``distinct``).
  The not-testable note names the gate that failed and its numbers.  P2's normalized-accuracy gate
  (:func:`normalized_reason`, :func:`low_gain_tasks`) is this rule on TaLoS's single-task models.
- Task negation (Table 2) keeps a control task at ≥ 95 % of its zero-shot accuracy; a control that is not clearly
  above chance at zero-shot (< chance + 10 points) makes that constraint vacuous: :func:`negation_control_reason`.

:func:`gate` turns a rule's outcome and such a reason into the keyword arguments of ``Results.add_claim``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from repro.data.tasks import TASKS
from repro.report.verdicts import N_RESAMPLES, compare

MIN_GAIN_POINTS = 5.0
CONTROL_MARGIN_POINTS = 10.0


@dataclass(frozen=True)
class Learned:
    """Did ``model`` learn ``task``: its gain over ``reference`` (zero-shot or chance) in points, with the 95 % CI."""

    task: str
    model: str
    reference: str
    gain: float
    ci_low: float
    ci_high: float
    n_examples: int
    seeds: int = 1
    margin: float = MIN_GAIN_POINTS

    @property
    def ok(self) -> bool:
        """The rule: the lower end of the gain's 95 % CI lies above the margin."""
        return math.isfinite(self.ci_low) and self.ci_low > self.margin

    def text(self) -> str:
        if self.n_examples == 0:
            return f"{self.task}: no {self.model} accuracy was measured in this run"
        return (f"{self.task}: {self.model} − {self.reference} {self.gain:+.1f} points, 95% CI "
                f"[{self.ci_low:+.1f}, {self.ci_high:+.1f}], n = {self.n_examples}")


def unmeasured(task: str, model: str = "FT") -> Learned:
    """The check of a task whose fine-tuned accuracy this run did not measure: it always fails."""
    return Learned(task, model, "reference", math.nan, math.nan, math.nan, 0)


def chance_of(task: str) -> float:
    """Chance accuracy (a fraction) of a classification task of :data:`repro.data.TASKS`: 1 / number of labels."""
    if task not in TASKS:
        raise KeyError(f"no chance level for task {task!r}: pass chance= or a zero-shot reference")
    return 1.0 / TASKS[task].num_labels


def learned(task: str, scores: Any, *, reference: Any = None, reference_acc: float | None = None,
            chance: float | None = None, model: str = "FT", margin: float = MIN_GAIN_POINTS,
            n_resamples: int = N_RESAMPLES) -> Learned:
    """The learning check of one task from ``model``'s per-example correctness ``scores`` (``[examples]`` or
    ``[seeds, examples]``, 0/1).  The reference is, in this order: ``reference`` (the zero-shot model's per-example
    correctness on the same examples: a paired bootstrap of the difference), ``reference_acc`` (the zero-shot
    accuracy as a fraction, held fixed), ``chance`` (a fraction), else the chance level of ``task``."""
    if reference is not None:
        _, ev = compare(scores, reference, kind="difference", scale=100, op=">", margin=margin,
                        n_resamples=n_resamples)
        return Learned(task, model, "zero-shot", ev.statistic, ev.ci_low, ev.ci_high, ev.n_examples, ev.seeds, margin)
    if reference_acc is not None:
        ref, what = float(reference_acc), "zero-shot"
    else:
        ref = chance_of(task) if chance is None else float(chance)
        what = f"chance ({100 * ref:.0f}%)"
    _, ev = compare(scores, kind="mean", scale=100, op=">", margin=100 * ref + margin, n_resamples=n_resamples)
    shift = 100 * ref
    return Learned(task, model, what, ev.statistic - shift, ev.ci_low - shift, ev.ci_high - shift, ev.n_examples,
                   ev.seeds, margin)


def learned_from_accuracy(task: str, acc: float, reference_acc: float, n: int, *, model: str = "FT",
                          reference: str = "zero-shot", seeds: int = 1,
                          margin: float = MIN_GAIN_POINTS) -> Learned:
    """The learning check when only accuracies (fractions, each on ``n`` test examples) are kept: a normal 95 % CI
    of the difference treating both as independent binomials (conservative for models scored on the same
    examples)."""
    if n < 1:
        raise ValueError(f"a learning check needs n >= 1 test examples, got {n}")
    z = 1.959963984540054
    a, r = min(max(float(acc), 0.0), 1.0), min(max(float(reference_acc), 0.0), 1.0)
    half = 100 * z * math.sqrt((a * (1 - a) + r * (1 - r)) / n)
    gain = 100 * (float(acc) - float(reference_acc))
    return Learned(task, model, reference, gain, gain - half, gain + half, int(n), int(seeds), margin)


def learning_reason(checks: Iterable[Learned] = (), regions: Mapping[str, float] | None = None,
                    distinct: Mapping[str, bool] | None = None, *, need_checks: bool = True) -> str | None:
    """Why a claim about what fine-tuning / grafting achieved is not testable, or None when every gate passes.

    - **learned**: every check in ``checks`` must pass (:attr:`Learned.ok`); with ``need_checks`` an empty
      ``checks`` fails too (no evidence that anything was learned);
    - **non-empty region**: every entry of ``regions`` (name → number of parameters / mask entries) must be > 0;
    - **distinct models**: every entry of ``distinct`` (name → "the two models differ") must be true, so that a
      ratio of 1 or a gap of 0 cannot come from comparing a model with itself.
    The reason names each failed gate with its numbers."""
    checks = list(checks)
    failed: list[str] = []
    bad = [c for c in checks if not c.ok]
    if bad:
        margin = bad[0].margin
        failed.append(f"learning gate: the fine-tuned model must beat its reference by more than {margin:g} points at "
                      f"the lower end of the 95% CI of the gain, and did not on "
                      + "; ".join(c.text() for c in bad))
    elif need_checks and not checks:
        failed.append("learning gate: no fine-tuned-vs-reference accuracy was measured for the deciding tasks")
    empty = {k: v for k, v in (regions or {}).items() if not (v > 0)}
    if empty:
        failed.append("empty-region gate: " + ", ".join(f"{k} has {v:g} parameters" for k, v in empty.items()))
    same = [k for k, v in (distinct or {}).items() if not v]
    if same:
        failed.append("identical-models gate: the compared models are the same (" + ", ".join(same) + ")")
    return "not testable; " + "; ".join(failed) if failed else None


def low_gain_tasks(checks: Iterable[Learned]) -> dict[str, float]:
    """The tasks whose learning check fails (:func:`learned`), with their gain in points."""
    return {c.task: c.gain for c in checks if not c.ok}


def normalized_reason(checks: Iterable[Learned], method: str = "TaLoS") -> str | None:
    """Why normalized-accuracy verdicts are withheld (or None): the learning gate (:func:`learning_reason`) on
    ``method``'s single-task models (normalized accuracy divides by them, so it means nothing for a task the
    method did not learn)."""
    reason = learning_reason(checks)
    return None if reason is None else f"{reason} (normalized accuracy divides by {method}'s single-task accuracy)"


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
    """True for an image encoder: the CLIP ViTs (the papers' vision setting) or the EfficientNet-Lite0 of the cpu
    profile's vision family (its offline stand-in, real images; issue 26)."""
    m = model.lower()
    return "clip" in m or "vit" in m or "efficientnet" in m


def vision_reason(model: str) -> str | None:
    """Why a vision-only claim is not testable with ``model`` (or None for a vision model)."""
    if is_vision_model(model):
        return None
    return (f"vision claim: judged only on an image model (CLIP ViT, or the cpu profile's EfficientNet-Lite0 "
            f"vision family), and this run's model is {model}")


def tiny_model_reason(model: str) -> str | None:
    """Why a cost claim (time, memory) measured on ``model`` is not testable (or None): a tiny random-init model's
    timings are fixed per-call overheads, not the cost of the paper's models (full-size random-init models, as
    the gpu-check profile runs, are fine: cost does not depend on the weights)."""
    if model.lower().startswith("tiny"):
        return (f"cost claim: {model} is a tiny random-init test model, whose timings and memory are fixed "
                "overheads; judged on a pre-trained or full-size model")
    return None


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


__all__ = ["CONTROL_MARGIN_POINTS", "Learned", "MIN_GAIN_POINTS", "chance_of", "gate", "is_vision_model", "learned",
           "learned_from_accuracy", "learning_reason", "low_gain_tasks", "negation_control_reason",
           "normalized_reason", "not_testable", "tiny_model_reason", "unmeasured", "vision_reason"]
