"""The job type of the chapters' inventories: one :class:`JobSpec` per cached artifact a notebook computes.

A *job* is one cached artifact of the :class:`~repro.workbench.Workbench` store: a fine-tune (a task vector), a
mask, a graft, a FISH region, an adapter run, a continual stage, a drift measurement, an arithmetic or merge
sweep.  Each chapter declares its jobs from its own plan in its chapter package's ``jobs.py``, next to that plan
(``repro.p1.localization.jobs`` for ``p1_localization``, ...); :mod:`repro.inventory` gathers them, removes the
duplicates between notebooks and checks the paper plans against dataset shapes.

A spec holds the job's ``kind``, the ``driver`` it calls (a dotted name) with plain JSON-able ``kwargs``, the
``deps`` (ids of the jobs whose artifacts it reads) and an estimated ``cost``.  Its ``id`` is a hash of the profile
name, the driver and the kwargs, so it is known before any upstream job runs; two notebooks that declare the
same artifact declare the same id.  The kwargs mirror the artifact's cache key (recipes in full, ``k`` and the
graft steps resolved to numbers), with an upstream artifact named by its job id (``{"job": id}``) where the cache
key holds the artifact's digest.  What the plan check reads (tasks, k-shot, graft selection sizes) travels in
``uses``, outside the id.

``cost`` is in *example-passes*: one training example through forward and backward counts 1, an evaluated example
1/3.  It ranks jobs and sums per notebook; measured step times turn it into GPU-hours (issue 22 §5).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Iterable, Mapping, Protocol, Sequence

from repro.data import get_spec, kshot_sizes
from repro.profiles import FinetuneRecipe, GraftRecipe, Profile


#: the job kinds, in the order the inventory prints them
KINDS: tuple[str, ...] = ("finetune", "mask", "graft", "joint-graft", "fish", "adapter", "continual", "tracking",
                          "drift", "arithmetic", "merge")
#: a forward-only (evaluated) example costs this many example-passes
EVAL_PASS = 1.0 / 3.0


class _Skipped:
    def __repr__(self) -> str:
        return "SKIPPED"


#: what a job returns when it has nothing to compute (a re-training job whose learned region came out empty)
SKIPPED = _Skipped()


@dataclass(frozen=True)
class DataUse:
    """What a job reads from one task, for the paper-plan check (:func:`repro.inventory.check_plan`).

    ``how``: ``"kshot"`` (P1: the k-shot train / dev split of the task's train pool, :func:`repro.data.load_task`),
    ``"family"`` (P2 families: the source's own train / val / test splits).  ``select`` / ``max_dev``: a graft's
    selection sizes (``GraftRecipe.max_examples`` / ``max_dev``; None: not a graft); ``need``: named sizes the job
    asks of a split (e.g. ``{"train": 5000}`` TaLoS calibration inputs, ``{"dev": 32}`` α-selection examples)."""

    task: str
    how: str = "kshot"
    k: int = 0
    seed: int = 13
    select: int | None = None
    max_dev: int | None = None
    joint: bool = False
    need: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class JobSpec:
    """One cached artifact a notebook computes (see the module docstring)."""

    kind: str
    driver: str
    kwargs: Mapping[str, Any] = field(compare=False)
    profile: str
    id: str
    deps: tuple[str, ...] = ()
    cost: float = 0.0
    notebooks: tuple[str, ...] = ()
    family: str = ""
    uses: tuple[DataUse, ...] = field(default=(), compare=False)
    #: the :class:`Profile` the job was declared with (its Workbench's profile: ``repro job run``), not in JSON
    spec_profile: Profile | None = field(default=None, compare=False, repr=False)
    #: what the artifact is for in its chapter ("table2", "fig2-curve", ...): how ``runs.py`` finds it
    #: (:meth:`repro.jobcall.ChapterJobs.select`); outside the id, as several chapters may share an artifact
    role: str = field(default="", compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form ``repro plan --json`` prints (``uses`` left out: the check's input, not the job's)."""
        return {"id": self.id, "notebooks": list(self.notebooks), "kind": self.kind, "driver": self.driver,
                "kwargs": dict(self.kwargs), "deps": list(self.deps), "cost": round(self.cost, 1),
                "family": self.family, **({"role": self.role} if self.role else {})}


class Artifacts(Protocol):
    """What a chapter's ``runs.py`` obtains artifacts from (:class:`repro.jobcall.ChapterJobs` in a notebook): the
    declared specs, found by kind, role and kwargs, each spec's artifact, and the Workbench that evaluates them."""

    wb: Any  # the repro.workbench.Workbench the artifacts are evaluated on (the workbench imports this module)

    def select(self, kind: str | None = None, role: str | None = None, **fields: Any) -> list[JobSpec]: ...

    def one(self, kind: str | None = None, role: str | None = None, **fields: Any) -> JobSpec: ...

    def deps(self, spec: JobSpec, kind: str | None = None) -> list[JobSpec]: ...

    def artifact(self, spec: JobSpec) -> Any: ...

    def value(self, spec: JobSpec) -> Any: ...


def job_id(kind: str, profile: str, driver: str, kwargs: Mapping[str, Any]) -> str:
    """``<kind>-<12 hex>``: the hash of the profile name, the driver and the kwargs (canonical JSON)."""
    text = json.dumps({"profile": profile, "driver": driver, "kwargs": kwargs}, sort_keys=True, default=str)
    return f"{kind}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"


def make_job(kind: str, driver: str, profile: Profile, notebook: str, /, *, deps: Iterable[JobSpec | str] = (),
             cost: float = 0.0, uses: Sequence[DataUse] = (), role: str = "", **kwargs: Any) -> JobSpec:
    """A :class:`JobSpec` with its id hashed from ``profile.name``, ``driver`` and the JSON form of ``kwargs``."""
    if kind not in KINDS:
        raise ValueError(f"unknown job kind {kind!r}; choose one of {KINDS}")
    plain = json.loads(json.dumps(kwargs, sort_keys=True, default=_plain))
    dep_ids = tuple(d.id if isinstance(d, JobSpec) else d for d in deps)
    return JobSpec(kind=kind, driver=driver, kwargs=plain, profile=profile.name,
                   id=job_id(kind, profile.name, driver, plain), deps=dep_ids, cost=float(cost),
                   notebooks=(notebook,), family=profile.p2_model_family if notebook.startswith("p2") else "",
                   uses=tuple(uses), spec_profile=profile, role=role)


def _plain(value: Any) -> Any:
    if hasattr(value, "__dataclass_fields__"):
        return asdict(value)
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    raise TypeError(f"job kwargs must be JSON-able, got {type(value).__name__}")


def ref(job: JobSpec) -> dict[str, str]:
    """How a job's kwargs name an upstream artifact (a mask, a task vector): by that job's id."""
    return {"job": job.id}


# --- the two Workbench artifacts every chapter shares -------------------------------------------------------
def finetune_fields(tasks: Sequence[str], k: int, seed: int, recipe: FinetuneRecipe, trainable: Any, l1: float,
                    linearized: bool, tag: str, heads: str) -> dict[str, Any]:
    """What a fine-tune's job kwargs (:func:`finetune_job`) and its cache key
    (:meth:`repro.workbench.Workbench.finetune_run`) share, written once: ``trainable`` is the job's reference or
    scope name there, the mask's count and digest here."""
    return {"tasks": list(tasks), "k": int(k), "seed": seed, "recipe": asdict(recipe), "trainable": trainable,
            "l1": l1, "linearized": linearized, "tag": tag, "heads": heads,
            **({"task_sampling": "uniform"} if len(tasks) > 1 else {})}  # a multi-task model's batch rule


def graft_fields(task: str, k: int, seed: int, base: Any, scope: str, recipe: GraftRecipe, tag: str
                 ) -> dict[str, Any]:
    """What a graft's job kwargs (:func:`graft_job`) and its cache key (:meth:`repro.workbench.Workbench.graft`)
    share, written once: ``base`` is the γ_base sparsity or the base job's reference there, the sparsity or the
    base mask's count and digest here; the task vector is named by its job there and by its digest here."""
    return {"task": task, "k": int(k), "seed": seed, "base": base, "scope": scope, "lr": recipe.lr,
            "steps": recipe.steps, "bs": recipe.batch_size, "max_examples": recipe.max_examples,
            "b": recipe.sigmoid_bias, "tag": tag, **({"max_dev": recipe.max_dev} if recipe.max_dev is not None else {})}



def finetune_job(profile: Profile, notebook: str, tasks: str | Sequence[str], recipe: FinetuneRecipe, *,
                 k: int | None = None, seed: int = 13, trainable: str | JobSpec = "graftable", l1: float = 0.0,
                 linearized: bool = False, tag: str = "", linear_heads: bool = False, model: str | None = None,
                 how: str = "kshot", role: str = "") -> JobSpec:
    """:meth:`repro.workbench.Workbench.finetune_run`: τ of ``recipe`` on ``tasks`` (several = one multi-task
    model); ``trainable`` a scope name or the mask / graft job whose region is trained."""
    tasks = [tasks] if isinstance(tasks, str) else list(tasks)
    k = int(k or profile.k_shot)
    if not recipe.steps:  # the P1 step budget, resolved as Workbench.p1_recipe resolves it
        recipe = profile.p1_recipe([get_spec(t).num_labels for t in tasks], k, recipe)
    deps = [trainable] if isinstance(trainable, JobSpec) else []
    mult = 2.0 if linearized else 1.0
    cost = mult * recipe.steps * recipe.batch_size  # one batch of one task per step (repro.core.finetune.train)
    return make_job("finetune", "repro.workbench.Workbench.finetune_run", profile, notebook, deps=deps, cost=cost,
                    uses=[DataUse(t, how, k, seed) for t in tasks], role=role,
                    **finetune_fields(tasks, k, seed, recipe,
                                      ref(trainable) if isinstance(trainable, JobSpec) else trainable, l1, linearized,
                                      tag, "linear" if linear_heads else "zero-shot"),
                    model=model or profile.model, max_length=profile.max_length)


def graft_job(profile: Profile, notebook: str, task: str, vector: JobSpec, base: float | JobSpec, *,
              k: int | None = None, seed: int = 13, recipe: GraftRecipe | None = None, scope: str = "graftable",
              tag: str = "", n_classes: int = 2, how: str = "kshot", role: str = "") -> JobSpec:
    """:meth:`repro.workbench.Workbench.graft`: P1 Eq. 2-4 on ``task`` for the task vector of job ``vector``, with
    ``recipe`` (None: the profile's graft recipe)."""
    k = int(k or profile.k_shot)
    rec = profile.graft if recipe is None else recipe
    sizes = kshot_sizes({c: 2 * k for c in range(n_classes)}, k)  # a task with enough data: the split's sizes
    n_train, n_dev = sum(t for t, _ in sizes.values()), sum(d for _, d in sizes.values())
    dev = n_dev if rec.max_dev is None else min(rec.max_dev, n_dev)
    sel = min(rec.max_examples, n_train)
    cost = rec.steps * (sel + EVAL_PASS * (sel + dev))
    deps = [vector] + ([base] if isinstance(base, JobSpec) else [])
    return make_job("graft", "repro.workbench.Workbench.graft", profile, notebook, deps=deps, cost=cost, role=role,
                    uses=[DataUse(task, how, k, seed, select=rec.max_examples, max_dev=rec.max_dev)],
                    **{**graft_fields(task, k, seed, ref(base) if isinstance(base, JobSpec) else float(base), scope,
                                      rec, tag), "max_dev": rec.max_dev},  # (the kwargs name max_dev even when None)
                    vector=ref(vector))


# --- inventories -------------------------------------------------------------------------------------------
def dedupe(jobs: Iterable[JobSpec]) -> list[JobSpec]:
    """One spec per id, in first-seen order; a job several notebooks declare lists them all in ``notebooks``."""
    out: dict[str, JobSpec] = {}
    for j in jobs:
        if j.id in out:
            seen = out[j.id]
            merged = tuple(dict.fromkeys(seen.notebooks + j.notebooks))
            out[j.id] = replace(seen, notebooks=merged, uses=tuple(dict.fromkeys(seen.uses + j.uses)))
        else:
            out[j.id] = j
    return list(out.values())


def check_deps(jobs: Sequence[JobSpec]) -> list[str]:
    """The dependency ids that no job of ``jobs`` declares (an inventory is closed when this is empty)."""
    ids = {j.id for j in jobs}
    return sorted({d for j in jobs for d in j.deps if d not in ids})


def summary_rows(jobs: Sequence[JobSpec], notebooks: Sequence[str]) -> list[dict[str, Any]]:
    """Per notebook: jobs it *owns* (first notebook that declares them), per kind, dependencies and cost; a
    job shared with an earlier notebook counts once, in that earlier one (``shared`` counts the others)."""
    rows = []
    for nb in notebooks:
        own = [j for j in jobs if j.notebooks and j.notebooks[0] == nb]
        shared = [j for j in jobs if nb in j.notebooks[1:]]
        row: dict[str, Any] = {"notebook": nb, "jobs": len(own), "shared": len(shared)}
        row.update({kind: sum(j.kind == kind for j in own) for kind in KINDS})
        row["deps"] = sum(len(j.deps) for j in own)
        row["cost"] = sum(j.cost for j in own)
        rows.append(row)
    return rows


def format_table(jobs: Sequence[JobSpec], notebooks: Sequence[str], title: str = "") -> str:
    """The inventory as the plain-text table ``repro plan`` prints (kinds with no job are left out)."""
    rows = summary_rows(jobs, notebooks)
    kinds = [k for k in KINDS if any(r[k] for r in rows)]
    cols = ["notebook", "jobs", "shared", *kinds, "deps", "cost"]
    total = {"notebook": "total", **{c: sum(r[c] for r in rows) for c in cols[1:]}}

    def cell(r: Mapping[str, Any], c: str) -> str:
        v = r[c]
        return _human(v) if c == "cost" else str(v)

    body = [[cell(r, c) for c in cols] for r in [*rows, total]]
    widths = [max(len(c), *(len(b[i]) for b in body)) for i, c in enumerate(cols)]
    line = lambda vals: "  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(vals, widths)))
    out = ([title] if title else []) + [line(cols), line(["-" * w for w in widths])]
    out += [line(b) for b in body[:-1]] + [line(["-" * w for w in widths]), line(body[-1])]
    return "\n".join(out)


def _human(x: float) -> str:
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= size:
            return f"{x / size:.1f}{unit}"
    return f"{x:.0f}"


__all__ = ["Artifacts", "DataUse", "EVAL_PASS", "JobSpec", "KINDS", "SKIPPED", "check_deps", "dedupe", "finetune_job", "format_table",
           "finetune_fields", "graft_fields", "graft_job", "job_id", "make_job", "ref", "summary_rows"]
