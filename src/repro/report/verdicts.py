"""Statistical verdicts: one mechanism that turns per-example results into a claim's verdict and its evidence.

A claim is an inequality about a statistic, ``statistic <op> margin``: ``acc(graft) − acc(FT) ≥ −1`` (within one
point), ``acc(graft) / acc(FT) ≥ 0.95`` (the ratio of P1 Table 2), ``ECE(graft) − ECE(FT) < 0``.  The statistic is
estimated from per-example scores of the two models **on the same test examples** (and the same seeds), and its
95 % CI comes from a seeded paired bootstrap: examples are resampled with one set of indices shared by both models
(and, with several seeds, seeds are resampled first, then examples within each drawn seed).
Repeated measurements that are not paired (timings of methods, each in its own process) are resampled one
sample at a time instead (:func:`independent_bootstrap`).

The verdict follows from the CI (:func:`decide`):

- ``holds``         — the inequality holds at the conservative end of the CI;
- ``does-not-hold`` — the opposite inequality holds at the other end;
- ``inconclusive``  — the CI straddles the margin;
- ``not-testable``  — the profile cannot test the claim (the reason goes in the claim's note).

:class:`Evidence` is what a claim stores next to its verdict (``n_examples, seeds, statistic, ci_low, ci_high,
margin, test`` and the operator ``op``); :func:`compare` does all of it in one call.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

VERDICTS: tuple[str, ...] = ("holds", "does-not-hold", "inconclusive", "not-testable")
OPS: tuple[str, ...] = (">=", ">", "<=", "<")
#: ``holds`` (the compatibility boolean) for each verdict: inconclusive and not-testable are ``None``.
HOLDS: dict[str, bool | None] = {"holds": True, "does-not-hold": False, "inconclusive": None, "not-testable": None}
EVIDENCE_KEYS: tuple[str, ...] = ("n_examples", "seeds", "statistic", "ci_low", "ci_high", "margin", "test")
N_RESAMPLES = 2000
LEVEL = 0.95


class VerdictError(ValueError):
    """Inputs to a verdict are inconsistent (shapes, operator, evidence that contradicts the verdict)."""


@dataclass(frozen=True)
class Evidence:
    """What a verdict rests on: ``statistic`` with its CI ``[ci_low, ci_high]``, compared as ``statistic op margin``."""

    n_examples: int
    seeds: int
    statistic: float
    ci_low: float
    ci_high: float
    margin: float
    test: str
    op: str = ">="

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# --------------------------------------------------------------------------------------------------------
# the bootstrap
# --------------------------------------------------------------------------------------------------------
def _as_matrix(x: Any, name: str) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    if a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2 or a.shape[1] == 0:
        raise VerdictError(f"{name}: per-example scores must be a 1-d array (examples) or 2-d (seeds × examples), "
                           f"got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise VerdictError(f"{name}: per-example scores contain NaN or inf")
    return a


def resample_indices(rng: np.random.Generator, n_seeds: int, n_examples: int) -> tuple[np.ndarray, np.ndarray]:
    """One paired-bootstrap draw, shared by every model: ``(seed_idx [S, 1], example_idx [S, N])``.

    Seeds are drawn with replacement first (with one seed the index is always 0), then examples within each."""
    seed_idx = rng.integers(0, n_seeds, size=n_seeds) if n_seeds > 1 else np.zeros(1, dtype=int)
    return seed_idx[:, None], rng.integers(0, n_examples, size=(n_seeds, n_examples))


def paired_bootstrap(samples: Sequence[Any], statistic: Callable[..., float], n_resamples: int = N_RESAMPLES,
                     level: float = LEVEL, seed: int = 0) -> tuple[float, float, float]:
    """Point estimate and percentile CI of ``statistic(*samples)`` under a paired bootstrap.

    ``samples`` are per-example score arrays of equal shape (``[examples]`` or ``[seeds, examples]``), one per
    model, on the same examples; ``statistic`` maps the (resampled) arrays, each ``[seeds, examples]``, to a number.
    Returns ``(estimate, ci_low, ci_high)``.
    """
    mats = [_as_matrix(s, f"samples[{i}]") for i, s in enumerate(samples)]
    if not mats:
        raise VerdictError("paired_bootstrap needs at least one sample")
    shape = mats[0].shape
    if any(m.shape != shape for m in mats):
        raise VerdictError(f"paired samples must have the same shape (same seeds and examples), got "
                           f"{[m.shape for m in mats]}")
    if not 0 < level < 1:
        raise VerdictError(f"level must be in (0, 1), got {level}")
    n_seeds, n = shape
    estimate = float(statistic(*mats))
    rng = np.random.default_rng(seed)
    stats = np.empty(n_resamples)
    for r in range(n_resamples):
        rows, cols = resample_indices(rng, n_seeds, n)
        stats[r] = statistic(*[m[rows, cols] for m in mats])
    return (estimate, *_percentile_ci(stats, level))


def _percentile_ci(stats: np.ndarray, level: float) -> tuple[float, float]:
    """The percentile CI of the finite bootstrap statistics ``stats``."""
    stats = stats[np.isfinite(stats)]
    if stats.size == 0:
        raise VerdictError("the statistic is undefined on every bootstrap resample")
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(stats, [alpha, 1.0 - alpha])
    return float(low), float(high)


def independent_bootstrap(samples: Sequence[Any], statistic: Callable[..., float], n_resamples: int = N_RESAMPLES,
                          level: float = LEVEL, seed: int = 0) -> tuple[float, float, float]:
    """Point estimate and percentile CI of ``statistic(*samples)`` when the samples are *not* paired, e.g. repeated
    timings of methods each measured in its own process: every 1-d sample is resampled on its own (lengths may
    differ).  ``statistic`` maps the (resampled) 1-d arrays to a number.  Returns ``(estimate, ci_low, ci_high)``."""
    arrs = [_as_matrix(s, f"samples[{i}]") for i, s in enumerate(samples)]
    if not arrs:
        raise VerdictError("independent_bootstrap needs at least one sample")
    if any(a.shape[0] != 1 for a in arrs):
        raise VerdictError("independent_bootstrap takes 1-d samples (repeats), got shapes "
                           f"{[a.shape for a in arrs]}")
    if not 0 < level < 1:
        raise VerdictError(f"level must be in (0, 1), got {level}")
    arrs = [a[0] for a in arrs]
    estimate = float(statistic(*arrs))
    rng = np.random.default_rng(seed)
    stats = np.empty(n_resamples)
    for r in range(n_resamples):
        stats[r] = statistic(*[a[rng.integers(0, a.size, size=a.size)] for a in arrs])
    return (estimate, *_percentile_ci(stats, level))


def _mean(m: np.ndarray) -> float:
    return float(m.mean())


def difference(a: Any, b: Any, **kw: Any) -> tuple[float, float, float]:
    """``mean(a) − mean(b)`` with its paired-bootstrap CI (same examples, same seeds)."""
    return paired_bootstrap([a, b], lambda x, y: _mean(x) - _mean(y), **kw)


def ratio(a: Any, b: Any, **kw: Any) -> tuple[float, float, float]:
    """``mean(a) / mean(b)`` with its paired-bootstrap CI, e.g. graft/FT accuracy (P1 Table 2's ≥ 0.95)."""
    def stat(x: np.ndarray, y: np.ndarray) -> float:
        d = _mean(y)
        return _mean(x) / d if d != 0 else math.nan
    return paired_bootstrap([a, b], stat, **kw)


def mean(a: Any, **kw: Any) -> tuple[float, float, float]:
    """``mean(a)`` with its bootstrap CI (one model against a fixed bound, e.g. accuracy ≤ chance + 10)."""
    return paired_bootstrap([a], _mean, **kw)


# --------------------------------------------------------------------------------------------------------
# the verdict
# --------------------------------------------------------------------------------------------------------
def _check_op(op: str) -> None:
    if op not in OPS:
        raise VerdictError(f"unknown operator {op!r}; a claim is 'statistic OP margin' with OP in {list(OPS)}")


def _satisfies(x: float, op: str, margin: float) -> bool:
    return {">=": x >= margin, ">": x > margin, "<=": x <= margin, "<": x < margin}[op]


def decide(ci_low: float, ci_high: float, op: str, margin: float) -> str:
    """The verdict of the claim ``statistic op margin`` from the statistic's CI.

    ``holds`` when the inequality holds at the conservative end (``ci_low`` for ``>``/``>=``, ``ci_high`` for
    ``<``/``<=``); ``does-not-hold`` when the opposite holds at the other end; ``inconclusive`` otherwise."""
    _check_op(op)
    if not (math.isfinite(ci_low) and math.isfinite(ci_high)) or ci_low > ci_high:
        raise VerdictError(f"bad CI [{ci_low}, {ci_high}]: need finite ci_low <= ci_high")
    greater = op.startswith(">")
    conservative, other = (ci_low, ci_high) if greater else (ci_high, ci_low)
    if _satisfies(conservative, op, margin):
        return "holds"
    opposite = {">=": "<", ">": "<=", "<=": ">", "<": ">="}[op]
    if _satisfies(other, opposite, margin):
        return "does-not-hold"
    return "inconclusive"


def verdict_from_ci(est: float, lo: float, hi: float, *, n_examples: int, seeds: int, margin: float, op: str,
                    test: str) -> tuple[str, Evidence]:
    """``(verdict, evidence)`` of ``statistic op margin`` from a statistic and its 95 % CI (:func:`decide`): the one
    place every claim turns an interval into a verdict."""
    ev = Evidence(n_examples=int(n_examples), seeds=int(seeds), statistic=float(est), ci_low=float(lo),
                  ci_high=float(hi), margin=float(margin), test=test, op=op)
    return decide(ev.ci_low, ev.ci_high, op, ev.margin), ev


def compare(a: Any, b: Any | None = None, *, op: str = ">=", margin: float = 0.0, kind: str = "difference",
            scale: float = 1.0, n_resamples: int = N_RESAMPLES, seed: int = 0) -> tuple[str, Evidence]:
    """Test ``statistic(a, b) op margin`` on paired per-example scores; returns ``(verdict, evidence)``.

    ``kind`` is ``"difference"`` (mean(a) − mean(b)), ``"ratio"`` (mean(a) / mean(b)) or ``"mean"`` (mean(a),
    ``b`` unused).  ``scale`` multiplies the difference or mean for reporting (100 turns 0/1 correctness into
    percentage points); ``margin`` is in the reported units.
    """
    _check_op(op)
    fns = {"difference": difference, "ratio": ratio, "mean": mean}
    if kind not in fns:
        raise VerdictError(f"unknown kind {kind!r}; use one of {sorted(fns)}")
    if kind != "mean" and b is None:
        raise VerdictError(f"kind={kind!r} compares two models: pass b (the other model's per-example scores)")
    args = [a] if kind == "mean" else [a, b]
    est, lo, hi = fns[kind](*args, n_resamples=n_resamples, seed=seed)
    k = 1.0 if kind == "ratio" else scale
    est, lo, hi = est * k, lo * k, hi * k
    m = _as_matrix(a, "a")
    test = (f"paired bootstrap over {'seeds and ' if m.shape[0] > 1 else ''}examples, {n_resamples} resamples, "
            f"{LEVEL:.0%} CI of the {kind}")
    return verdict_from_ci(est, lo, hi, n_examples=m.shape[1], seeds=m.shape[0], margin=margin, op=op, test=test)


def normal_combination(terms: Sequence[tuple[float, float]], n: int, *, op: str, margin: float = 0.0,
                       scale: float = 100.0, test: str) -> tuple[str, Evidence]:
    """Test ``scale · Σ c_i p_i op margin`` for accuracies ``p_i`` (fractions, each on ``n`` examples) when no
    per-example results are kept: a normal-approximation 95 % CI treating the accuracies as independent binomials,
    var = scale² Σ c_i² p_i (1 − p_i) / n.  ``terms`` = ``[(c_i, p_i), ...]``; ``test`` says why it is unpaired."""
    _check_op(op)
    if n < 1:
        raise VerdictError(f"normal_combination needs n ≥ 1 examples, got {n}")
    est, var = 0.0, 0.0
    for c, p in terms:
        q = min(max(float(p), 0.0), 1.0)
        est += float(c) * float(p)
        var += float(c) ** 2 * q * (1.0 - q) / n
    z = 1.959963984540054  # the 97.5 % standard normal quantile
    half = z * scale * math.sqrt(var)
    return verdict_from_ci(scale * est, scale * est - half, scale * est + half, n_examples=n, seeds=1, margin=margin,
                           op=op, test=test)


def exact(statistic: float, op: str, margin: float, n: int, what: str, seeds: int = 1) -> tuple[str, Evidence]:
    """Test ``statistic op margin`` for a number with no sampling error to resample (a region's size, an overlap of
    two masks, one memory reading): the verdict and an :class:`Evidence` whose interval is the number itself,
    ``n`` = the regions / masks / readings it is computed from and ``test`` = ``"exact <what>; no sampling"``."""
    _check_op(op)
    s = float(statistic)
    return verdict_from_ci(s, s, s, n_examples=n, seeds=seeds, margin=margin, op=op, test=f"exact {what}; no sampling")


def combine_all(parts: Mapping[str, tuple[str, Evidence]]) -> tuple[str, Evidence, str]:
    """A claim about *every* part (task, pair, …): holds when every part holds, does not hold when one part does
    not, inconclusive otherwise.  Returns ``(verdict, evidence of the deciding part, its name)``: the part with the
    least favourable conservative end among those that give the combined verdict."""
    if not parts:
        raise VerdictError("combine_all needs at least one part")
    verdicts = {name: v for name, (v, _) in parts.items()}
    if "does-not-hold" in verdicts.values():
        verdict = "does-not-hold"
    elif all(v == "holds" for v in verdicts.values()):
        verdict = "holds"
    else:
        verdict = "inconclusive"
    candidates = [n for n, v in verdicts.items() if v == verdict]

    def badness(name: str) -> float:
        ev = parts[name][1]
        return ev.ci_low - ev.margin if ev.op.startswith(">") else ev.margin - ev.ci_high
    worst = min(candidates, key=badness)
    return verdict, parts[worst][1], worst


def op_symbol(evidence: Mapping[str, Any]) -> str:
    """The claim's inequality as printed: ``≥`` / ``≤`` (or the operator as stored)."""
    op = evidence.get("op", ">=")
    return {">=": "≥", "<=": "≤"}.get(op, op)


def seeds_text(n: int) -> str:
    """``1 seed`` / ``3 seeds``."""
    return f"{n} seed{'s' if n != 1 else ''}"


def verdict_of(claim: Mapping[str, Any]) -> str:
    """A claim's verdict; files written before verdicts existed map ``holds`` true/false/null to
    holds / does-not-hold / not-testable."""
    if claim.get("verdict") in VERDICTS:
        return str(claim["verdict"])
    return {True: "holds", False: "does-not-hold"}.get(claim.get("holds"), "not-testable")


def check_consistent(verdict: Any, holds: Any, evidence: Any, note: str = "", where: str = "claim") -> None:
    """Raise :class:`VerdictError` unless ``verdict``, ``holds`` and ``evidence`` agree (see the module docstring)."""
    if verdict not in VERDICTS:
        raise VerdictError(f"{where}: verdict must be one of {list(VERDICTS)}, got {verdict!r}")
    if holds is not HOLDS[verdict]:
        raise VerdictError(f"{where}: holds={holds!r} contradicts verdict {verdict!r} (expected {HOLDS[verdict]!r})")
    if verdict == "not-testable":
        if not str(note).strip():
            raise VerdictError(f"{where}: a not-testable claim needs the reason in its note")
        return
    if evidence is None:
        if verdict == "inconclusive":
            raise VerdictError(f"{where}: an inconclusive verdict needs evidence (a CI that straddles the margin)")
        return  # a point comparison without a CI (legacy rule); the claims page shows it without a CI
    if not isinstance(evidence, Mapping):
        raise VerdictError(f"{where}: evidence must be a dict with keys {list(EVIDENCE_KEYS)}")
    missing = [k for k in EVIDENCE_KEYS if k not in evidence]
    if missing:
        raise VerdictError(f"{where}: evidence misses {missing}; it needs {list(EVIDENCE_KEYS)}")
    for k in ("n_examples", "seeds"):
        v = evidence[k]
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise VerdictError(f"{where}: evidence[{k!r}] must be a positive integer, got {v!r}")
    for k in ("statistic", "ci_low", "ci_high", "margin"):
        v = evidence[k]
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
            raise VerdictError(f"{where}: evidence[{k!r}] must be a finite number, got {v!r}")
    expected = decide(evidence["ci_low"], evidence["ci_high"], evidence.get("op", ">="), evidence["margin"])
    if expected != verdict:
        raise VerdictError(f"{where}: verdict {verdict!r} contradicts its evidence: CI [{evidence['ci_low']:.4g}, "
                           f"{evidence['ci_high']:.4g}] {evidence.get('op', '>=')} {evidence['margin']:g} gives "
                           f"{expected!r}")


__all__ = ["EVIDENCE_KEYS", "Evidence", "HOLDS", "OPS", "VERDICTS", "VerdictError", "check_consistent", "combine_all",
           "compare", "decide", "difference", "exact", "independent_bootstrap", "mean", "normal_combination",
           "paired_bootstrap", "ratio", "resample_indices", "verdict_from_ci", "verdict_of"]
