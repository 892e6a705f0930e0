"""How a job's artifact is computed from its spec, in a notebook and on a node alike (issue 31 §1).

A :class:`~repro.jobs.JobSpec` names its ``driver`` (the dotted name of the function computing it) and plain
``kwargs``.  :data:`DRIVERS` maps each driver name to a :class:`Driver`: the one call that turns the kwargs back into
the function's arguments.  The two Workbench drivers (fine-tune, graft) are here; each section module registers
its own next to the function (:func:`register_driver`, e.g. ``repro.p1.regions`` for ``fish_regions``), so a
notebook's import closure holds exactly the drivers its chapter runs (P1 notebooks never import P2 code: the
notebook cache key relies on it).

:func:`call_job` is that call, with the Workbench restricted to the job kind's store kinds; a notebook reaches it
through :class:`ChapterJobs` (its chapter's declared specs, deps first), ``repro job run`` through
:class:`repro.jobrun.JobRunner` (deps loaded read-only).  What a notebook computes is therefore what its jobs
declare, by construction: a guarded Workbench refuses any cached artifact outside a declared job
(:class:`~repro.workbench.UndeclaredArtifact`), and :class:`ChapterJobs` any spec its chapter did not declare
(:class:`UndeclaredJob`).
"""

from __future__ import annotations

import importlib
import os
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from repro.artifacts import write_json
from repro.chapters import get_chapter
from repro.core.masks import Mask
from repro.jobs import SKIPPED, JobSpec
from repro.paths import JOBS_PROGRESS_ENV
from repro.profiles import FinetuneRecipe, get_profile
from repro.workbench import Workbench, scope_fraction

#: the store kinds (``Workbench.cached`` kinds) a job of each kind writes
STORE_KINDS: dict[str, frozenset[str]] = {
    "finetune": frozenset({"taskvec"}), "mask": frozenset({"mask"}), "graft": frozenset({"graft"}),
    "joint-graft": frozenset({"graft"}), "fish": frozenset({"fish"}), "adapter": frozenset({"taskvec", "adapter"}),
    "continual": frozenset({"taskvec"}), "tracking": frozenset({"tracking"}), "drift": frozenset({"p2-drift"}),
    "arithmetic": frozenset({"p2-arith"}), "merge": frozenset({"p2-merge"}),
}

Value = Callable[[str], Any]  # an upstream job's stored artifact, by job id


@dataclass(frozen=True)
class Driver:
    """How one driver (a job's dotted ``driver`` name) is called from its kwargs: ``call(wb, kwargs, value)`` returns
    what the driver function returns; ``pair``: that is ``(artifact, metadata)`` (else the artifact itself)."""

    call: Callable[[Workbench, dict, Value], Any]
    pair: bool = True

    def artifact(self, result: Any) -> Any:
        """The artifact in ``result`` (what a downstream job reads)."""
        return result[0] if self.pair and result is not SKIPPED else result


#: driver (the job's dotted name) -> how it is called; filled by :func:`register_driver`
DRIVERS: dict[str, Driver] = {}
#: special ``trainable`` values of a fine-tune job, ``{name: ...}`` -> the Mask it trains (registered by the section
#: module that defines them: P2 LoTA's ``lota_of``)
TRAINABLES: dict[str, Callable[[Workbench, dict, Any], Mask]] = {}


def register_driver(name: str, call: Callable[[Workbench, dict, Value], Any], *, pair: bool = True) -> None:
    """Register how driver ``name`` (a job spec's ``driver``: the function's dotted name) is called from its kwargs;
    ``pair``: the function returns ``(artifact, metadata)``.  Called once, next to the function."""
    DRIVERS[name] = Driver(call, pair)


def register_trainable(name: str, make: Callable[[Workbench, dict, Any], Mask]) -> None:
    """Register a special ``trainable`` of fine-tune jobs: a dict holding the key ``name`` in the kwargs (its upstream
    references resolved) becomes ``make(wb, kwargs, that dict)``."""
    TRAINABLES[name] = make


def recipe_of(d: Mapping[str, Any] | None) -> FinetuneRecipe | None:
    """A fine-tuning recipe from its JSON form in a job's kwargs (None stays None)."""
    return None if d is None else FinetuneRecipe(**d)


def _finetune_run(wb: Workbench, k: dict, value: Value) -> Any:
    trainable = k["trainable"]
    special = [n for n in trainable if n in TRAINABLES] if isinstance(trainable, dict) else []
    if special:  # e.g. P2 LoTA's {"lota_of": τ_ft (its upstream, resolved), "density": d}: the mask it gives
        trainable = TRAINABLES[special[0]](wb, k, trainable)
    if isinstance(trainable, Mask) and trainable.count() == 0:
        return SKIPPED  # an empty learned region: nothing to re-train (repro.p1.regions.retrained_region)
    return wb.finetune_run(k["tasks"], recipe_of(k["recipe"]), k=k["k"], trainable=trainable,
                           l1_lambda=k.get("l1", 0.0), linearized=k.get("linearized", False), seed=k["seed"],
                           tag=k["tag"])


def graft_recipe_of(wb: Workbench, k: Mapping[str, Any]) -> Any:
    """The job's graft settings (``steps``, ``lr``, ``bs``, ``max_examples``, ``b``, ``max_dev``) as a GraftRecipe."""
    return replace(wb.profile.graft, steps=int(k["steps"]), lr=float(k["lr"]), batch_size=int(k["bs"]),
                   max_examples=int(k["max_examples"]), sigmoid_bias=float(k["b"]), max_dev=k["max_dev"])


def _graft(wb: Workbench, k: dict, value: Value) -> Any:
    base = k["base"]
    if isinstance(base, (int, float)) and k["scope"] != "graftable":  # base counted in graftable entries
        base = scope_fraction(wb, float(base), k["scope"])
    return wb.graft(k["task"], k["vector"], base, k=k["k"], recipe=graft_recipe_of(wb, k), scope=k["scope"],
                    seed=k["seed"], tag=k["tag"])


register_driver("repro.workbench.Workbench.finetune_run", _finetune_run)
register_driver("repro.workbench.Workbench.graft", _graft)


def resolve(value: Any, upstream: Value) -> Any:
    """``value`` with every ``{"job": id}`` replaced by ``upstream(id)`` (that job's stored artifact)."""
    if isinstance(value, dict):
        if set(value) == {"job"}:
            return upstream(value["job"])
        return {k: resolve(v, upstream) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, upstream) for v in value]
    return value


def driver_of(job: JobSpec) -> Driver:
    """The :class:`Driver` of ``job``: registered by the module defining its function, imported here if need be
    (ValueError naming the known drivers when there is none)."""
    if job.driver not in DRIVERS:
        parts = job.driver.split(".")
        for end in range(len(parts) - 1, 1, -1):  # the longest importable prefix: the function's module
            name = ".".join(parts[:end])
            try:
                importlib.import_module(name)  # a plugin registry: the module registers its driver
                break
            except ModuleNotFoundError as e:
                if e.name != name:  # the module exists and fails: say so
                    raise
    if job.driver not in DRIVERS:
        raise ValueError(f"no job call for driver {job.driver!r}; known: {sorted(DRIVERS)}")
    return DRIVERS[job.driver]


def call_job(wb: Workbench, job: JobSpec, upstream: Value) -> Any:
    """The one call of ``job``'s driver on ``wb`` (upstream references resolved through ``upstream``), with
    :attr:`~repro.workbench.Workbench.compute_kinds` = the job kind's store kinds: whatever else the driver reaches
    must already be stored (:class:`~repro.workbench.StoreMiss` otherwise).  The notebook and the cluster both
    compute an artifact through this call."""
    drv = driver_of(job)
    kwargs = resolve(dict(job.kwargs), upstream)
    before, active = wb.compute_kinds, getattr(wb, "active_job", None)
    wb.compute_kinds, wb.active_job = STORE_KINDS[job.kind], job.id
    try:
        return drv.call(wb, kwargs, upstream)
    finally:
        wb.compute_kinds, wb.active_job = before, active


def load_job(wb: Workbench, job: JobSpec, upstream: Value) -> Any:
    """The stored artifact of ``job``, loaded with the store read-only (:class:`~repro.workbench.StoreMiss` when it
    is absent or stale)."""
    before = wb.read_only
    wb.read_only = True
    try:
        return driver_of(job).artifact(call_job(wb, job, upstream))
    finally:
        wb.read_only = before


class UndeclaredJob(LookupError):
    """A notebook asked for an artifact its chapter's ``jobs()`` does not declare (the message names the spec)."""


class ChapterJobs:
    """The artifacts of one chapter's notebook, obtained only through the :class:`~repro.jobs.JobSpec` s its
    ``jobs()`` declares (issue 31 §1): the one description of what the chapter computes.

    ``ChapterJobs(wb, "p1_localization", profile, seed=13, **plan_overrides)`` declares the chapter's jobs exactly as
    ``repro plan`` does (``profile`` the notebook's profile *before* its P2 family is applied; ``model_family`` among
    the overrides of a P2 chapter) and guards ``wb``: from then on every :meth:`~repro.workbench.Workbench.cached`
    call outside :meth:`artifact` raises :class:`~repro.workbench.UndeclaredArtifact`, and :meth:`artifact` of a spec
    the chapter did not declare raises :class:`UndeclaredJob`.  An artifact is computed by the same driver call as
    ``repro job run`` (:func:`call_job`), after its upstream jobs, so what a notebook computes is what its jobs
    declare, by construction.  :meth:`select` / :meth:`one` find specs by kind, role and kwargs; ``runs.py`` groups
    and evaluates what they return and never decides which artifacts exist."""

    def __init__(self, wb: Workbench, chapter: str, profile: Any, *, seed: int = 13,
                 specs: Sequence[JobSpec] | None = None, results: Any = None, **plan_overrides: Any) -> None:
        self.wb, self.chapter, self.results = wb, chapter, results
        prof = get_profile(profile) if isinstance(profile, str) else profile
        declared = specs if specs is not None else get_chapter(chapter).jobs(prof, seed=seed, **plan_overrides)
        self.specs: dict[str, JobSpec] = {}
        for spec in declared:  # one spec per id (a chapter may list an artifact twice: the first role wins)
            self.specs.setdefault(spec.id, spec)
        #: the ids obtained (by this object and those :meth:`on` made), each once, in order
        self.obtained: dict[str, None] = {}
        self._start = time.monotonic()
        wb.declared = chapter
        self._record()

    def on(self, wb: Workbench) -> "ChapterJobs":
        """The same declared jobs on another Workbench of the notebook (e.g. one with linear heads)."""
        other = ChapterJobs(wb, self.chapter, None, specs=list(self.specs.values()), results=self.results)
        other.obtained = self.obtained  # one record for the notebook ...
        other._start = self._start  # ... and one clock: the time left extrapolates from the notebook's first job
        other._record()
        return other

    def record(self) -> dict[str, Any]:
        """The notebook's jobs so far: declared and obtained per kind, and the ids declared but never obtained (what
        a cluster would compute for nothing); kept in the results JSON's ``meta["jobs"]`` when ``results`` is given."""
        kinds = dict.fromkeys(s.kind for s in self.specs.values())
        return {"chapter": self.chapter, "declared": len(self.specs), "obtained": len(self.obtained),
                "by_kind": {k: [sum(s.kind == k for s in self.specs.values()),
                                sum(self.specs[i].kind == k for i in self.obtained)] for k in kinds},
                "unused": [i for i in self.specs if i not in self.obtained]}

    def _record(self) -> None:
        if self.results is not None:
            self.results.meta["jobs"] = self.record()
        progress = os.environ.get(JOBS_PROGRESS_ENV)
        if progress:  # a batch run: the runner's progress line reads it (repro.runner.watch)
            done = [self.specs[i] for i in self.obtained]
            write_json(Path(progress), {"declared": len(self.specs), "obtained": len(done),
                                        "cost_done": sum(s.cost for s in done),
                                        "cost_total": sum(s.cost for s in self.specs.values()),
                                        "seconds": time.monotonic() - self._start,
                                        "started": time.time() - (time.monotonic() - self._start)})

    # --- finding specs -----------------------------------------------------------------------------------------
    def select(self, kind: str | None = None, role: str | None = None, **fields: Any) -> list[JobSpec]:
        """The declared specs of ``kind`` and ``role`` (None: any) whose kwargs hold every ``fields`` value, in
        declaration order."""
        return [s for s in self.specs.values() if (kind is None or s.kind == kind)
                and (role is None or s.role == role)
                and all(k in s.kwargs and s.kwargs[k] == _plain(v) for k, v in fields.items())]

    def one(self, kind: str | None = None, role: str | None = None, **fields: Any) -> JobSpec:
        """The one declared spec :meth:`select` finds (:class:`UndeclaredJob` naming the query when none or several)."""
        found = self.select(kind, role, **fields)
        if len(found) != 1:
            what = ", ".join([*(f"kind={kind}" for _ in [kind] if kind), *(f"role={role}" for _ in [role] if role),
                              *(f"{k}={v!r}" for k, v in fields.items())])
            raise UndeclaredJob(f"{self.chapter}: {len(found)} declared jobs match {what or 'the query'}"
                                + ("" if found else "; its jobs.py declares no such artifact")
                                + (f": {[s.id for s in found]}" if found else ""))
        return found[0]

    def deps(self, spec: JobSpec, kind: str | None = None) -> list[JobSpec]:
        """The declared upstream specs of ``spec`` (of ``kind``)."""
        return [self.specs[d] for d in spec.deps if d in self.specs and (kind is None or self.specs[d].kind == kind)]

    # --- obtaining artifacts -----------------------------------------------------------------------------------
    def artifact(self, spec: JobSpec) -> Any:
        """What the driver of ``spec`` returns (``(artifact, metadata)`` for most; :data:`SKIPPED` for a re-training
        of an empty region): loaded when stored, else computed after its upstream jobs."""
        if spec.id not in self.specs:
            raise UndeclaredJob(f"{self.chapter} asks for {spec.kind} {spec.id} ({spec.driver}, "
                                f"{_brief(spec.kwargs)}), which its jobs() does not declare")
        for dep in spec.deps:
            self.artifact(self._spec(dep, spec))
        if spec.id not in self.obtained:
            self.obtained[spec.id] = None
            self._record()
        heads = spec.kwargs.get("heads")
        if heads is not None and (heads == "linear") != bool(self.wb.linear_heads):
            raise UndeclaredJob(f"{spec.kind} {spec.id} trains {heads} heads; this Workbench has "
                                f"{'linear' if self.wb.linear_heads else 'zero-shot'} heads (ChapterJobs.on)")
        return call_job(self.wb, spec, self._upstream)

    def value(self, spec: JobSpec) -> Any:
        """The artifact of ``spec`` alone (a task vector, a mask, ...), as a downstream job reads it."""
        return driver_of(spec).artifact(self.artifact(spec))

    def _spec(self, job_id: str, downstream: JobSpec) -> JobSpec:
        if job_id not in self.specs:
            raise UndeclaredJob(f"{downstream.kind} {downstream.id} reads {job_id}, which {self.chapter}'s jobs() "
                                "does not declare")
        return self.specs[job_id]

    def _upstream(self, job_id: str) -> Any:
        return load_job(self.wb, self._spec(job_id, self.specs.get(job_id) or next(iter(self.specs.values()))),
                        self._upstream)


def _plain(value: Any) -> Any:
    """A query value as it sits in a spec's JSON kwargs (tuples as lists)."""
    return [_plain(v) for v in value] if isinstance(value, (tuple, list)) else value


def _brief(kwargs: Mapping[str, Any]) -> str:
    keys = ("task", "tasks", "k", "seed", "method", "scope", "base", "key", "scheme", "tag")
    return ", ".join(f"{k}={kwargs[k]!r}" for k in keys if k in kwargs and kwargs[k] not in ("", None))


__all__ = ["ChapterJobs", "DRIVERS", "Driver", "STORE_KINDS", "TRAINABLES", "UndeclaredJob", "Value", "call_job",
           "driver_of", "graft_recipe_of", "load_job", "recipe_of", "register_driver", "register_trainable", "resolve"]
