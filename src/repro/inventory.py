"""The job inventory of the book and the paper-plan check (issue 21 §2, issue 22 §4).

:func:`inventory` gathers the jobs every chapter declares from its own plan (``repro.p1.<chapter>.jobs``,
``repro.p2.<chapter>.jobs``; the type is :mod:`repro.jobs`), one spec per logical id: an artifact two notebooks share is
one job, owned by the first notebook in :data:`NOTEBOOKS` order.  Nothing here loads a model or a dataset.

:func:`check_plan` checks every job's inputs against dataset shapes (task → split → per-class counts): it builds
each k-shot split with :func:`repro.data.load_task` itself on a pool of those counts (so whatever the loader does
is what is checked) and runs the graft selection of :func:`repro.core.grafting.learn_graft` /
:func:`~repro.core.grafting.learn_joint_graft` with the model arithmetic stubbed out, to see which training
examples pick the best graft.  Failures: an empty split, a class missing from a split, a graft selection set that
misses a class, an impossible budget.  Warnings: a split shorter than the plan asks (fewer than k per class),
unbalanced classes, a task without shapes.

This module sits above ``p1`` and ``p2`` (it imports both); ``repro plan`` runs it as ``python -m repro.inventory``,
as ``repro bench`` runs :mod:`repro.bench`, since the runner imports neither.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any, Iterator, Mapping, Sequence
import warnings
from unittest import mock

import torch

from repro.core import grafting as G
from repro.data import SOURCES, Example, hub_nlp, hub_vision, load_task
from repro.data.shapes import DATASET_SHAPES
from repro.chapters import chapter_names, chapters, get_chapter
from repro.jobs import DataUse, JobSpec, check_deps, dedupe, format_table
from repro.plans import RANGES_FILE, range_spec
from repro.profiles import PROFILES, GraftRecipe, Profile, get_profile

#: every notebook chapter, in book order (the order that owns shared jobs): the chapter registry's
NOTEBOOKS: tuple[str, ...] = chapter_names()


def plan_ranges() -> dict[str, dict[str, dict[str, Any]]]:
    """``{notebook: {field: range}}``: the ranges on every chapter plan's fields (:func:`repro.plans.range_spec`),
    what the runner checks a notebook parameter of the same name against before any kernel starts."""
    out = {}
    for chapter in chapters():
        if chapter.package:
            plans = chapter.module("plan").PLANS
            out[chapter.name] = range_spec(type(next(iter(plans.values()))))
    return out


def write_plan_ranges() -> None:
    """Write :func:`plan_ranges` to :data:`repro.plans.RANGES_FILE` (after a plan's ranges change)."""
    blocks = [f" {json.dumps(nb)}: {{\n" + ",\n".join(f"  {json.dumps(f)}: {json.dumps(r, sort_keys=True)}"
                                                   for f, r in sorted(fields.items())) + "\n }"
              for nb, fields in sorted(plan_ranges().items())]
    RANGES_FILE.write_text("{\n" + ",\n".join(blocks) + "\n}\n")

#: task → split → per-class counts (a sequence in the task's label order, or label name → count)
Shapes = Mapping[str, Mapping[str, Any]]


def families(profile: Profile) -> list[str]:
    """The P2 model families ``--family`` may name for ``profile`` ("text" when it has none)."""
    return [f.name for f in profile.p2_families] or ["text"]


def inventory(profile: str | Profile, only: Sequence[str] | None = None, family: str = "",
              seed: int = 13) -> list[JobSpec]:
    """The deduplicated jobs of ``only`` (default: every notebook) on ``profile``; ``family`` is the P2 model
    family the P2 notebooks run ("" = each notebook's default, e.g. vision in the paper profile)."""
    prof = get_profile(profile) if isinstance(profile, str) else profile
    unknown = [n for n in only or () if n not in NOTEBOOKS]
    if unknown:
        raise ValueError(f"unknown notebooks {unknown}; choose from {list(NOTEBOOKS)}")
    if family and family not in families(prof):
        raise ValueError(f"profile {prof.name!r} has no P2 model family {family!r}; choose one of {families(prof)}")
    specs: list[JobSpec] = []
    for nb in (n for n in NOTEBOOKS if not only or n in only):
        kw = {"model_family": "" if family == "text" else family} if nb.startswith("p2") else {}
        specs += get_chapter(nb).jobs(prof, seed=seed, **kw)
    return dedupe(specs)


# ==============================================================================================================
# the plan check
# ==============================================================================================================
@dataclass(frozen=True)
class Finding:
    """One problem of a plan's inputs: ``level`` "fail" / "warn", a ``code`` (empty-split, missing-class,
    selection, plan-error, budget, short, unbalanced, no-shape, order), the task, a one-line message, the jobs."""

    level: str
    code: str
    task: str
    message: str
    jobs: tuple[str, ...] = ()

    def line(self, notebooks: Mapping[str, Sequence[str]] | None = None) -> str:
        nbs = sorted({n for j in self.jobs for n in (notebooks or {}).get(j, ())})
        where = f" [{len(self.jobs)} jobs: {', '.join(nbs)}; e.g. {self.jobs[0]}]" if self.jobs else ""
        return f"{self.level.upper()} {self.code} {self.task}: {self.message}{where}"


TRAIN_TAG, DEV_TAG, TEST_TAG = "shape-train", "shape-dev", "shape-test"
_SOURCE = "plan-check-shapes"


def per_class(counts: Any) -> list[int]:
    """Per-class counts as a list in label order (from a sequence or a label → count mapping)."""
    return [int(v) for v in (counts.values() if isinstance(counts, Mapping) else counts)]


def _pool(counts: Sequence[int], tag: str) -> list:
    """A split of the given per-class counts: one shared example object per class (only labels are read)."""
    return [ex for c, n in enumerate(counts) for ex in [Example(tag, c)] * n]


@contextmanager
def _shapes_source(shapes: Shapes) -> Iterator[str]:
    """A data source (:data:`repro.data.SOURCES`) serving pools of ``shapes``' train / test counts, while open."""
    def source(task: str, k: int, n_test: int, profile: Profile) -> tuple[list, list, str]:
        sp = shapes[task]
        return _pool(per_class(sp["train"]), TRAIN_TAG), _pool(per_class(sp.get("test", [])), TEST_TAG), _SOURCE

    SOURCES[_SOURCE] = source
    try:
        yield _SOURCE
    finally:
        SOURCES.pop(_SOURCE, None)


def kshot_counts(task: str, k: int, profile: Profile, shapes: Shapes) -> tuple[list, list]:
    """(train, dev) of :func:`repro.data.load_task` for ``task`` at ``k`` on a pool of ``shapes``' counts."""

    with _shapes_source(shapes) as name, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = load_task(task, profile.with_(data_source=name, packaged_tasks=()), seed=13, k=k, n_test=1)
    return _retag(data.train, TRAIN_TAG), _retag(data.dev, DEV_TAG)


def _retag(split: Sequence, tag: str) -> list:
    """``split`` in its order with one ``tag``-ged example object per class (tells train from dev examples)."""
    ones: dict[int, Any] = {}
    return [ones.setdefault(e.label, Example(tag, e.label)) for e in split]


def selection_labels(train: Sequence, dev: Sequence, select: int, max_dev: int | None, joint: bool) -> set[int] | str:
    """The labels of the training examples :func:`repro.core.grafting.learn_graft` (``joint``:
    :func:`~repro.core.grafting.learn_joint_graft`) scores to pick the best graft, observed by running it for one
    step with the model arithmetic stubbed; a string says why it could not be observed."""


    seen: list[int] = []

    def evaluate(model: Any, examples: Sequence, task: str, *a: Any, **kw: Any) -> dict:
        seen.extend(e.label for e in examples if getattr(e, "text_a", "") == TRAIN_TAG)
        return {"value": 0.0}

    delta = {"w": torch.arange(1.0, 9.0)}
    recipe = GraftRecipe(steps=1, max_examples=select, max_dev=max_dev)
    model = torch.nn.Module()
    model.w = torch.nn.Parameter(torch.zeros_like(delta["w"]))  # Δ is validated against the parameters
    try:
        with mock.patch.object(G, "evaluate", evaluate), \
                mock.patch.object(G, "grafted_params", lambda *a, **k: {}), \
                mock.patch.object(G, "graft_update", lambda model, task, sample, delta, S, *a, **k: S), \
                mock.patch.object(G, "graft_gradient", lambda *a, **k: {n: torch.zeros_like(d)
                                                                         for n, d in delta.items()}):
            if joint:
                G.learn_joint_graft(model, ["T"], delta, {"T": list(train)}, {"T": list(dev)},
                                    G.movement_mask(delta, 0.5), recipe, seed=0, progress=False)
            else:
                G.learn_graft(model, "T", delta, list(train), list(dev), 0.5, recipe, seed=0, progress=False)
    except (AttributeError, TypeError, KeyError, ValueError) as e:  # the grafting code changed shape: say so instead of guessing
        return f"could not observe the graft selection ({type(e).__name__}: {e})"
    return set(seen) if seen else "the graft scored no training example"


def _check_kshot(task: str, k: int, uses: Sequence[tuple[DataUse, str]], profile: Profile, shapes: Shapes,
                 out: list[Finding], memo: dict) -> None:
    ids = tuple(dict.fromkeys(j for _, j in uses))
    counts = per_class(shapes[task]["train"])
    try:
        train, dev = kshot_counts(task, k, profile, shapes)
    except Exception as e:  # a plan the loader refuses (e.g. a k-shot split that cannot exist)
        out.append(Finding("fail", "plan-error", task, f"k={k}: {type(e).__name__}: {e}", ids))
        return
    tr, dv = Counter(e.label for e in train), Counter(e.label for e in dev)
    n = len(counts)
    desc = f"k={k}, train pool {counts} per class -> train {[tr[c] for c in range(n)]}, dev {[dv[c] for c in range(n)]}"
    for split, got in (("train", tr), ("dev", dv)):
        if not sum(got.values()):
            out.append(Finding("fail", "empty-split", task, f"{split} split is empty ({desc})", ids))
        elif any(got[c] == 0 for c in range(n)):
            out.append(Finding("fail", "missing-class", task, f"{split} split lacks a class ({desc})", ids))
    test = per_class(shapes[task].get("test", []))
    if test and (not sum(test) or any(c == 0 for c in test)):
        out.append(Finding("fail", "missing-class", task, f"the test split {test} lacks a class", ids))
    short = [split for split, got in (("train", tr), ("dev", dv)) if any(got[c] < k for c in range(n))]
    if train and short:
        out.append(Finding("warn", "short", task, f"{' and '.join(short)}: fewer than k={k} per class ({desc})", ids))
    if train and min(tr[c] for c in range(n)) and max(tr.values()) > 1.5 * min(tr[c] for c in range(n)):
        out.append(Finding("warn", "unbalanced", task, f"train classes differ by more than 1.5x ({desc})", ids))
    sel_keys = {(u.select, u.max_dev, u.joint) for u, _ in uses if u.select is not None}
    for select, max_dev, joint in sorted(sel_keys, key=str):
        sel_ids = tuple(dict.fromkeys(j for u, j in uses if (u.select, u.max_dev, u.joint) == (select, max_dev, joint)))
        key = (task, k, select, max_dev, joint)
        if key not in memo:
            memo[key] = selection_labels(train, dev, select, max_dev, joint) if train else "no training examples"
        labels = memo[key]
        what = "joint graft" if joint else "graft"
        if isinstance(labels, str):
            out.append(Finding("fail", "selection", task, f"k={k}: {labels}", sel_ids))
        elif len(labels) < len(tr):
            out.append(Finding("fail", "selection", task,
                               f"k={k}: the {what}'s selection set (max_examples={select}) holds classes "
                               f"{sorted(labels)} of {sorted(tr)} ({desc})", sel_ids))


def family_splits(task: str, shape: Mapping[str, Any]) -> dict[str, list[int]]:
    """Per-class (train, dev, test) counts of P2 family ``task``: pools of ``shape``'s stored source splits, split
    by the loader's own function (:func:`repro.data.hub_vision.official_splits` / ``hub_nlp.official_splits``)."""
    pools = {name: _pool(per_class(counts), name) for name, counts in shape.items()}
    splitter = hub_vision.official_splits if task in hub_vision.FETCHED_SPLITS else hub_nlp.official_splits
    n = max((len(per_class(c)) for c in shape.values()), default=0)
    out = {}
    for split, items in zip(("train", "dev", "test"), splitter(task, pools)):
        counts = Counter(ex.label for ex in items)
        out[split] = [counts.get(c, 0) for c in range(n)]
    return out


def _check_family(task: str, uses: Sequence[tuple[DataUse, str]], shapes: Shapes, out: list[Finding]) -> None:
    ids = tuple(dict.fromkeys(j for _, j in uses))
    derived = family_splits(task, shapes[task])
    for split, name in (("train", "train"), ("dev", "val"), ("test", "test")):
        if task == "ImageNet" and split == "train":
            continue  # the negation control is evaluated only (ImageNetVal and its test split)
        counts = derived[split]
        if not sum(counts):
            out.append(Finding("fail", "empty-split", task, f"{name} split is empty or absent", ids))
        elif split in ("train", "test") and any(c == 0 for c in counts):
            out.append(Finding("fail", "missing-class", task, f"{name} split lacks a class: {counts}", ids))
        needs = {n for u, _ in uses for s, n in u.need if s == split}
        if needs and sum(counts) < max(needs):
            out.append(Finding("warn", "short", task, f"a job asks {max(needs)} {name} examples, the split has "
                                                      f"{sum(counts)}", ids))
    sel = tuple(dict.fromkeys(j for u, j in uses if u.select is not None))
    if sel:
        out.append(Finding("warn", "order", task, "a graft scores the first max_examples of the source's train "
                                                  "order: it holds every class only if that order is shuffled", sel))


def check_plan(jobs: Sequence[JobSpec], shapes: Shapes, profile: str | Profile = "paper") -> list[Finding]:
    """Every job's inputs against ``shapes`` (failures first); see the module docstring for what is checked."""
    prof = get_profile(profile) if isinstance(profile, str) else profile
    out: list[Finding] = []
    for j in jobs:
        for prob in _budget_problems(j):
            out.append(Finding("fail", "budget", ",".join(sorted({u.task for u in j.uses})), prob, (j.id,)))
    groups: dict[tuple[str, str, int], list[tuple[DataUse, str]]] = {}
    for j in jobs:
        for u in j.uses:
            groups.setdefault((u.how, u.task, u.k if u.how == "kshot" else 0), []).append((u, j.id))
    memo: dict = {}
    for (how, task, k), uses in sorted(groups.items()):
        if task not in shapes:
            out.append(Finding("warn", "no-shape", task, f"no dataset shapes for {task}: not checked",
                               tuple(dict.fromkeys(j for _, j in uses))))
        elif how == "kshot":
            _check_kshot(task, k, uses, prof, shapes, out, memo)
        else:
            _check_family(task, uses, shapes, out)
    return sorted(out, key=lambda f: (f.level != "fail", f.code, f.task))


def _budget_problems(job: JobSpec) -> list[str]:
    """Budgets that cannot run: no steps, a checkpoint interval longer than the run, a k-shot of 0."""
    problems = []
    rec = job.kwargs.get("recipe")
    if isinstance(rec, Mapping):
        if int(rec.get("steps", 1)) < 1:
            problems.append(f"{job.kind}: recipe.steps = {rec['steps']}")
        if int(rec.get("eval_every", 0)) > int(rec.get("steps", 1)):
            problems.append(f"{job.kind}: eval_every {rec['eval_every']} > steps {rec['steps']} (no dev checkpoint)")
    if job.kind in ("graft", "joint-graft") and int(job.kwargs.get("steps", 1)) < 1:
        problems.append(f"{job.kind}: {job.kwargs.get('steps')} graft steps")
    for u in job.uses:
        if u.how == "kshot" and u.k < 1:
            problems.append(f"{job.kind}: k-shot {u.k} for {u.task}")
    return problems


def dataset_shapes() -> tuple[Shapes, str]:
    """The dataset shapes the check reads (task → split → per-class counts, from
    :data:`repro.data.shapes.DATASET_SHAPES`, the counts the fixture folders are made of); and a word saying which."""
    return ({task: dict(shape.splits) for task, shape in DATASET_SHAPES.items()},
            "repro.data.shapes.DATASET_SHAPES")


def jobs_to_check(profile: Profile, only: Sequence[str] | None, family: str, jobs: Sequence[JobSpec]
                  ) -> list[JobSpec]:
    """The jobs ``--check`` reads: ``jobs`` (of ``family``), and without ``--family`` every P2 family's too."""
    if family or len(profile.p2_families) < 2:
        return list(jobs)
    return dedupe([*jobs, *(j for f in families(profile) for j in inventory(profile, only, f))])


# ==============================================================================================================
# the command (`repro plan`)
# ==============================================================================================================
def main(argv: Sequence[str] | None = None) -> int:
    """``repro plan``: the inventory table (or ``--json``), and with ``--check`` the paper-plan check."""
    parser = argparse.ArgumentParser(prog="repro plan", description="the job inventory of the book's notebooks")
    parser.add_argument("--profile", choices=sorted(PROFILES), default="cpu")
    parser.add_argument("--only", nargs="+", metavar="NOTEBOOK", choices=NOTEBOOKS)
    parser.add_argument("--family", default="", help="P2 model family (vision | nlp | nlp-base in paper)")
    parser.add_argument("--json", action="store_true", help="print every job as JSON")
    parser.add_argument("--check", action="store_true", help="check the jobs' inputs against dataset shapes")
    args = parser.parse_args(argv)
    prof = get_profile(args.profile)
    try:
        jobs = inventory(prof, args.only, args.family)
    except ValueError as e:
        print(f"repro plan: error: {e}", file=sys.stderr)
        return 2
    nbs = [n for n in NOTEBOOKS if not args.only or n in args.only]
    missing = check_deps(jobs)
    findings: list[Finding] = []
    where = ""
    if args.check:
        shapes, where = dataset_shapes()
        checked = jobs_to_check(prof, args.only, args.family, jobs)
        findings = check_plan(checked, shapes, prof)
    fails = [f for f in findings if f.level == "fail"]
    if args.json:
        out: dict[str, Any] = {"profile": prof.name, "family": args.family or None,
                               "jobs": [j.to_dict() for j in jobs], "missing_deps": missing}
        if args.check:
            out["check"] = {"shapes": where, "findings": [asdict(f) for f in findings]}
        print(json.dumps(out, indent=1))
    else:
        fam = args.family or ("/".join(dict.fromkeys(
            prof.for_p2("", n).p2_model_family for n in nbs if n.startswith("p2"))) or "-")
        print(format_table(jobs, nbs, f"profile {prof.name}, P2 family {fam}: {len(jobs)} jobs (cost in "
                                      "example-passes; 'shared' = declared here, owned by an earlier notebook)"))
        if missing and not args.only:
            print(f"dependencies declared by no job: {missing}")
    if args.check:
        stream = sys.stderr if args.json else sys.stdout
        owners = {j.id: j.notebooks for j in jobs}
        print(f"\nplan check of {len(checked)} jobs against {where}: {len(fails)} failures, "
              f"{len(findings) - len(fails)} warnings (--json lists every job id of each finding)", file=stream)
        for f in findings:
            print(f.line(owners), file=stream)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
