"""P1 §4.2 zero-shot out-of-distribution evaluation: a model trained (or grafted) on a *source* task is evaluated
on a *target* task's examples with the source task's own head and input format.

The official code has processors for the OOD datasets but never released the evaluation (official-code facts,
Part C): OOD use there means "evaluate the source-task model on the target file with the source template and
label words".  Here the same is done with labels: every target label is mapped by name onto a source label
(:func:`label_mapping`), target examples whose label has no counterpart are dropped, and the remaining examples
are scored by the source task's head (:func:`ood_examples`).

Pairs studied by the paper (:data:`OOD_PAIRS`): SST-2 → IMDb / Yelp (small shift), MPQA → SST-2 / Yelp and
QNLI → MNLI / SNLI (large shift).  For the NLI targets P1 keeps "only contradiction and entailment labels"
(footnote 2, Tables 3 and 7 print "MNLI(0/1)", "SNLI(0/1)"): entailment ↦ entailment, contradiction ↦
not_entailment, neutral dropped; ``neutral="not_entailment"`` gives the alternative 3→2 binarization instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

import numpy as np

from repro.data import Example, TaskSpec, fixed_subset
from repro.core.merging import wise_interpolate

if TYPE_CHECKING:  # pragma: no cover
    from repro.workbench import Workbench

#: source task → its OOD target tasks (P1 Fig. 7, Tables 3 and 7)
OOD_PAIRS: dict[str, tuple[str, ...]] = {
    "SST-2": ("IMDb", "Yelp"),
    "MPQA": ("SST-2", "Yelp"),
    "QNLI": ("MNLI", "SNLI"),
}

#: how the paper prints a target in the OOD tables (binarized NLI targets get "(0/1)")
PRINTED_NAME: dict[str, str] = {"MNLI": "MNLI(0/1)", "SNLI": "SNLI(0/1)"}

#: label names that mean the same thing under another name (target name → source name)
_SYNONYMS: dict[str, str] = {
    "contradiction": "not_entailment",
    "not_entailment": "not_entailment",
    "neg": "negative", "pos": "positive",
}
NEUTRAL_CHOICES = ("drop", "not_entailment")


def label_mapping(source: TaskSpec, target: TaskSpec, neutral: str = "drop") -> dict[int, int | None]:
    """Target label index → source label index (None = the example is dropped).

    Labels map by equal name, then through the synonyms above (contradiction ↦ not_entailment).  ``neutral``:
    ``"drop"`` (P1 footnote 2: only entailment and contradiction) or ``"not_entailment"``.  Raises if a target
    label has no counterpart, naming the source labels.
    """
    if neutral not in NEUTRAL_CHOICES:
        raise ValueError(f"unknown neutral={neutral!r}; choose one of {NEUTRAL_CHOICES}")
    src = {name.lower(): i for i, name in enumerate(source.labels)}
    out: dict[int, int | None] = {}
    for j, name in enumerate(target.labels):
        key = name.lower()
        if key == "neutral" and "neutral" not in src:
            out[j] = None if neutral == "drop" else src.get("not_entailment")
            if neutral != "drop" and out[j] is None:
                raise ValueError(f"{source.name} has no 'not_entailment' label for {target.name}'s neutral")
            continue
        if key in src:
            out[j] = src[key]
        elif _SYNONYMS.get(key) in src:
            out[j] = src[_SYNONYMS[key]]
        else:
            raise ValueError(f"target {target.name} label {name!r} has no counterpart among source {source.name} "
                             f"labels {list(source.labels)}")
    if source.pair != target.pair:
        raise ValueError(f"{source.name} is {'a pair' if source.pair else 'a single-sentence'} task but "
                         f"{target.name} is not; OOD transfer needs the same input format")
    return out


def map_examples(examples: Iterable[Example], mapping: Mapping[int, int | None]) -> list[Example]:
    """Relabel ``examples`` into the source label space, dropping those whose label maps to None."""
    out = []
    for e in examples:
        if e.label not in mapping:
            raise KeyError(f"example label {e.label} not in the mapping {dict(mapping)}")
        new = mapping[e.label]
        if new is not None:
            out.append(Example(e.text_a, int(new), e.text_b))
    return out


def ood_examples(wb: "Workbench", source: str, target: str, split: str = "test", neutral: str = "drop",
                 limit: int | None = None) -> list[Example]:
    """The target task's ``split`` relabelled for the source task's head (a fixed label-balanced subset of
    ``limit`` examples, if given)."""
    src = wb.task(source).spec
    tgt_data = wb.task(target)
    ex = map_examples(tgt_data.split(split), label_mapping(src, tgt_data.spec, neutral))
    return _limit(ex, limit)


def _limit(examples: Sequence[Example], limit: int | None) -> list[Example]:
    return fixed_subset(examples, limit)


def ood_correct(wb: "Workbench", source: str, targets: Sequence[str], overrides=None, split: str = "test",
                neutral: str = "drop", limit: int | None = None) -> dict[str, np.ndarray]:
    """Per-example 0/1 correctness of the source-task model under ``overrides`` on each target's mapped examples,
    plus the source's own ``split`` under key ``source`` (the ID set): the same examples for every model of the
    source, so two models' arrays pair for a bootstrap."""
    sets = {source: _limit(wb.task(source).split(split), limit),
            **{t: ood_examples(wb, source, t, split, neutral, limit) for t in targets}}
    out = {}
    for name, examples in sets.items():
        if not examples:
            raise ValueError(f"{source} → {name}: no {split} examples to score (after label mapping)")
        pred = wb.predict(source, examples=examples, overrides=overrides)
        out[name] = pred.correct()
    return out


def ood_accuracy(wb: "Workbench", source: str, targets: Sequence[str], overrides=None, split: str = "test",
                 neutral: str = "drop", limit: int | None = None) -> dict[str, float]:
    """Accuracy (fraction) of the source-task model under ``overrides`` on each target, plus the source's own
    ``split`` accuracy under key ``source`` (the ID number): the means of :func:`ood_correct`."""
    return {t: float(c.mean()) for t, c in ood_correct(wb, source, targets, overrides, split, neutral, limit).items()}


def wise_correct(wb: "Workbench", source: str, targets: Sequence[str], vector: Mapping, alphas: Sequence[float],
                 mask=None, split: str = "test", neutral: str = "drop", limit: int | None = None
                 ) -> dict[float, dict[str, np.ndarray]]:
    """P1 Fig. 7e-f: per-example 0/1 correctness (:func:`ood_correct`) along θ(α) = (1 − α)·θ_pre + α·θ_end
    (Wortsman et al. 2022), α → {source (ID) / target: array}.

    θ_end is the fine-tuned model (WiSE-FT) or, with ``mask``, the graft θ_pre + γ ⊙ τ (WiSE-Graft)."""
    end = wb.overrides(vector, 1.0, mask)
    pre = {n: wb.pre[n] for n in end}
    return {float(a): ood_correct(wb, source, targets, wise_interpolate(pre, end, float(a)), split, neutral, limit)
            for a in alphas}


def wise_rows(correct: Mapping[float, Mapping[str, np.ndarray]], source: str, targets: Sequence[str],
              label: str = "WiSE-FT") -> list[dict]:
    """Rows ``method, source, alpha, id`` (source accuracy), one column per target and ``ood`` (their mean),
    fractions, from :func:`wise_correct`."""
    rows = []
    for a, c in correct.items():
        acc = {k: float(v.mean()) for k, v in c.items()}
        rows.append({"method": label, "source": source, "alpha": float(a), "id": acc[source],
                     **{t: acc[t] for t in targets}, "ood": sum(acc[t] for t in targets) / len(targets)})
    return rows


def wise_curve(wb: "Workbench", source: str, targets: Sequence[str], vector: Mapping, alphas: Sequence[float],
               mask=None, label: str = "WiSE-FT", split: str = "test", neutral: str = "drop",
               limit: int | None = None) -> list[dict]:
    """P1 Fig. 7e-f: ID and OOD accuracy along θ(α) (:func:`wise_correct`), as :func:`wise_rows`."""
    return wise_rows(wise_correct(wb, source, targets, vector, alphas, mask, split, neutral, limit), source, targets,
                     label)


def best_point(rows: Sequence[Mapping], key: str = "ood") -> dict:
    """The row with the best ``key`` (ties: the higher ID accuracy), e.g. the paper's "optimal (ID, OOD) point"."""
    if not rows:
        raise ValueError("no rows")
    return dict(max(rows, key=lambda r: (r[key], r["id"])))
