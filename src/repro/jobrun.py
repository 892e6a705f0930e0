"""``repro job run ID``: compute exactly one job of the inventory in this process (issue 23).

The job comes from :func:`repro.inventory.inventory` (the same plan ``repro plan --json`` prints).  Its driver and
kwargs become the one Workbench / driver call the notebook makes (:data:`CALLS`, one small function per driver):
recipes are rebuilt from their JSON, an upstream reference ``{"job": id}`` is the upstream job's stored artifact.

A node never computes an upstream artifact.  Every dependency is loaded first with the store read-only
(:attr:`repro.workbench.Workbench.read_only`); a missing or stale one is the error ``upstream missing: <kind> <id>``.
The job's own call then runs with :attr:`~repro.workbench.Workbench.compute_kinds` = the store kinds of its job kind
(:data:`STORE_KINDS`), so whatever else the driver reaches must already be stored.

When done, a done-marker ``<artifacts>/jobs/<id>.done.json`` is written atomically (temp file, then rename in the
same directory): the store entries the job computed or found, the sha256 each records, the seconds, the host and
the device.  ``python -m repro.jobrun`` is the command (the runner imports no p1 / p2 code).
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import torch

from repro.artifacts import STORE_FIELD, read_json, write_json
from repro.core.masks import Mask
from repro.chapters import get_chapter
from repro.device import out_of_memory_line
from repro.inventory import inventory
from repro.jobs import SKIPPED, JobSpec
from repro.p1.continual import sequential_finetune
from repro.p1.multitask import tune_union
from repro.p1.peft_baselines import adapter_run, lora_run
from repro.p1.regions import fish_regions, graftable_total, scope_fraction
from repro.p1.trajectory import checkpoint_tracking
from repro.p2.arithmetic import Evaluator, merging_scheme, run_method
from repro.p2.function_localization import eval_subset
from repro.p2.linear_regime import drift_curve
from repro.p2.methods import finetune_method_run, lota_mask_for, talos_mask
from repro.p2.sensitivity.runs import low_sensitivity_mask
from repro.paths import DONE_DIR, done_path  # (re-exported: the runner and the workflow share them)
from repro.profiles import PROFILES, FinetuneRecipe, get_profile
from repro.workbench import StoreMiss, Workbench

#: the store kinds (``Workbench.cached`` kinds) a job of each kind writes
STORE_KINDS: dict[str, frozenset[str]] = {
    "finetune": frozenset({"taskvec"}), "mask": frozenset({"mask"}), "graft": frozenset({"graft"}),
    "joint-graft": frozenset({"graft"}), "fish": frozenset({"fish"}), "adapter": frozenset({"taskvec", "adapter"}),
    "continual": frozenset({"taskvec"}), "tracking": frozenset({"tracking"}), "drift": frozenset({"p2-drift"}),
    "arithmetic": frozenset({"p2-arith"}), "merge": frozenset({"p2-merge"}),
}


class UpstreamMissing(RuntimeError):
    """A dependency of the job is not in the store (or is stale): the job runs after it, never instead of it."""


# ==============================================================================================================
# one call per driver: (workbench, kwargs with upstream references resolved, upstream value by job id) -> the
# driver function's own result; the notebook (ChapterJobs.artifact) and the cluster (JobRunner.run) make this call
# ==============================================================================================================
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


def _recipe(d: Mapping[str, Any] | None) -> FinetuneRecipe | None:
    return None if d is None else FinetuneRecipe(**d)


def _finetune_run(wb: Workbench, k: dict, value: Value) -> Any:
    trainable = k["trainable"]
    if isinstance(trainable, dict) and "lota_of" in trainable:  # P2 LoTA: the top-|τ_ft| mask of the FT run

        trainable = lota_mask_for(wb, k["tasks"][0], seed=k["seed"], density=trainable["density"])
    if isinstance(trainable, Mask) and trainable.count() == 0:
        return SKIPPED  # an empty learned region: nothing to re-train (repro.p1.regions.retrained_region)
    return wb.finetune_run(k["tasks"], _recipe(k["recipe"]), k=k["k"], trainable=trainable,
                           l1_lambda=k.get("l1", 0.0), linearized=k.get("linearized", False), seed=k["seed"],
                           tag=k["tag"])


def _graft_recipe(wb: Workbench, k: Mapping[str, Any]) -> Any:
    """The job's graft settings (``steps``, ``lr``, ``bs``, ``max_examples``, ``b``, ``max_dev``) as a GraftRecipe."""
    return replace(wb.profile.graft, steps=int(k["steps"]), lr=float(k["lr"]), batch_size=int(k["bs"]),
                   max_examples=int(k["max_examples"]), sigmoid_bias=float(k["b"]), max_dev=k["max_dev"])


def _graft(wb: Workbench, k: dict, value: Value) -> Any:
    base = k["base"]
    if isinstance(base, (int, float)) and k["scope"] != "graftable":  # as repro.p1.regions.learned_region

        base = scope_fraction(wb, float(base), k["scope"])
    return wb.graft(k["task"], k["vector"], base, k=k["k"], recipe=_graft_recipe(wb, k), scope=k["scope"],
                    seed=k["seed"], tag=k["tag"])


def _lora(wb: Workbench, k: dict, value: Value) -> Any:
    return lora_run(wb, k["task"], k["rank"], _recipe(k["recipe"]), alpha=k["alpha"], seed=k["seed"])


def _adapter(wb: Workbench, k: dict, value: Value) -> Any:
    return adapter_run(wb, k["task"], k["kind"], k["size"], _recipe(k["recipe"]), seed=k["seed"])


def _tune_union(wb: Workbench, k: dict, value: Value) -> Any:
    union = Mask.union(k["union"][t] for t in k["tasks"])  # as repro.p1.multitask.union_regions
    return tune_union(wb, k["tasks"], k["vector"], union, recipe=_graft_recipe(wb, k), seed=k["seed"])


def _continual(wb: Workbench, k: dict, value: Value) -> Any:
    given = k.get("given") or {}
    return sequential_finetune(wb, k["sequence"], _recipe(given.get("recipe", k["recipe"])), regions=k["regions"],
                               seed=k["seed"], later_recipe=_recipe(given.get("later_recipe", k["later_recipe"])))


def _fish(wb: Workbench, k: dict, value: Value) -> Any:
    total = graftable_total(wb)  # the FISH densities that select exactly the learned regions' counts
    learned = [value(i) for i in k["matched_to"]]  # (as repro.p1.appendix.fish_vs_learned)
    return fish_regions(wb, k["task"], sorted({(m.count() + 0.5) / total for m in learned}), k=k["k"], seed=k["seed"])


def _tracking(wb: Workbench, k: dict, value: Value) -> Any:
    return checkpoint_tracking(wb, k["task"], k["sparsities"], k["checkpoint"], every=k["every"],
                               recipe=_recipe(k["recipe"]), graft=replace(wb.profile.graft, steps=k["graft_steps"]),
                               k=k["k"], seed=k["seed"], n_eval=k["n_eval"], progress=False)


def _method_run(wb: Workbench, k: dict, value: Value) -> Any:
    return finetune_method_run(wb, k["task"], k["method"], seed=k["seed"], recipe=_recipe(k["recipe"]))


def _talos(wb: Workbench, k: dict, value: Value) -> Any:
    return talos_mask(wb, k["task"], seed=k["seed"], sparsity=k["sparsity"])


def _evaluator(wb: Workbench, k: dict) -> Any:
    return Evaluator(wb, k["tasks"], k["control"], k["n_val"], k["n_test"], seed=k["seed"])


def _arithmetic(wb: Workbench, k: dict, value: Value) -> Any:
    return run_method(wb, _evaluator(wb, k), k["key"], k["alphas"], negation=k["negation"])


def _merge(wb: Workbench, k: dict, value: Value) -> Any:
    return merging_scheme(wb, _evaluator(wb, k), k["source"], k["scheme"], k["alphas"],
                          adamerging_steps=k["adamerging_steps"])


def _sensitivity(wb: Workbench, k: dict, value: Value) -> Any:
    return low_sensitivity_mask(wb, k["task"], k["n"], k["fraction"], k["seed"])


def _drift(wb: Workbench, k: dict, value: Value) -> Any:
    return drift_curve(wb, k["task"], k["method"], k["steps"], eval_subset(wb, k["task"], k["examples"]),
                       seed=k["seed"])


#: driver (the job's dotted name) -> how it is called
DRIVERS: dict[str, Driver] = {
    "repro.workbench.Workbench.finetune_run": Driver(_finetune_run),
    "repro.workbench.Workbench.graft": Driver(_graft),
    "repro.p1.peft_baselines.lora_run": Driver(_lora),
    "repro.p1.peft_baselines.adapter_run": Driver(_adapter),
    "repro.p1.multitask.tune_union": Driver(_tune_union),
    "repro.p1.continual.sequential_finetune": Driver(_continual, pair=False),
    "repro.p1.regions.fish_regions": Driver(_fish, pair=False),
    "repro.p1.trajectory.checkpoint_tracking": Driver(_tracking, pair=False),
    "repro.p2.methods.finetune_method_run": Driver(_method_run),
    "repro.p2.methods.talos_mask": Driver(_talos),
    "repro.p2.arithmetic.run_method": Driver(_arithmetic, pair=False),
    "repro.p2.arithmetic.merging_scheme": Driver(_merge, pair=False),
    "repro.p2.sensitivity.runs.low_sensitivity_mask": Driver(_sensitivity),
    "repro.p2.linear_regime.drift_curve": Driver(_drift, pair=False),
}


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
    """The :class:`Driver` of ``job`` (ValueError naming the known drivers when there is none)."""
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


# ==============================================================================================================
# the runner
# ==============================================================================================================
class JobRunner:
    """Runs jobs of one inventory (``jobs``: id -> spec) against one artifacts root and data folder."""
    def __init__(self, jobs: Mapping[str, JobSpec], data_dir: str | Path | None = None,
                 artifacts: str | Path | None = None, device: str | None = None, plan: str = "") -> None:
        self.jobs = dict(jobs)
        self.plan = plan  # the `--profile [--family]` of the plan, for the messages (default: the job's profile)
        self.data_dir = data_dir
        self.artifacts = artifacts
        self.device = device
        self._values: dict[tuple[str, int], Any] = {}

    def workbench(self, job: JobSpec) -> Workbench:
        """A fresh Workbench of the profile the job was declared with, at the job's seed (linear heads when the job
        or one of its upstream jobs trains them)."""
        prof = job.spec_profile or get_profile(job.profile)
        if self.device:
            prof = prof.with_device(self.device)
        linear = any(self.jobs[i].kwargs.get("heads") == "linear" for i in self.closure(job.id))
        return Workbench(prof, data_dir=self.data_dir, artifacts_dir=self.artifacts,
                         seed=int(job.kwargs.get("seed", 13)), linear_heads=linear)

    def closure(self, job_id: str) -> list[str]:
        """``job_id`` and every job it depends on, transitively."""
        seen: dict[str, None] = {}
        todo = [job_id]
        while todo:
            j = todo.pop()
            if j not in seen:
                seen[j] = None
                todo += list(self.jobs[j].deps) if j in self.jobs else []
        return list(seen)

    def value(self, job_id: str, wb: Workbench) -> Any:
        """The stored artifact of upstream job ``job_id``, loaded with the store read-only (:class:`UpstreamMissing`
        when it is absent or stale)."""
        key = (job_id, id(wb))
        if key in self._values:
            return self._values[key]
        job = self.jobs.get(job_id)
        if job is None:
            raise UpstreamMissing(f"upstream missing: {job_id} is not a job of this plan")
        try:
            out = load_job(wb, job, lambda i: self.value(i, wb))
        except StoreMiss as e:
            raise UpstreamMissing(f"upstream missing: {job.kind} {job.id}; run `repro job run {job.id} --profile "
                                  f"{self.plan or job.profile}` first ({e.kind} {e.path.name}: {e.reason})") from None
        self._values[key] = out
        return out

    def run(self, job_id: str) -> dict[str, Any]:
        """Compute job ``job_id`` (its upstream artifacts must be stored) and write its done-marker."""
        job = self.jobs.get(job_id)
        if job is None:
            raise KeyError(job_id)
        driver_of(job)  # an unknown driver fails before any model is built
        start = time.perf_counter()
        wb = self.workbench(job)
        for dep in job.deps:  # every upstream artifact first, read-only
            self.value(dep, wb)
        upstream = {e["path"] for e in wb.ledger}
        mark = len(wb.ledger)
        try:
            out = call_job(wb, job, lambda i: self.value(i, wb))
        except StoreMiss as e:
            raise UpstreamMissing(f"upstream missing: {e.kind} {e.path.name} ({e.reason}), which no dependency of "
                                  f"{job.kind} {job.id} declares; the inventory lacks a dependency") from None
        own = [e for e in wb.ledger[mark:] if e["path"] not in upstream and e["kind"] in STORE_KINDS[job.kind]]
        root = Path(wb.store.root).parent
        entries = [_entry(e, root) for e in dict((e["path"], e) for e in own).values()]
        marker = {"job": job.id, "kind": job.kind, "driver": job.driver, "profile": job.profile,
                  "notebooks": list(job.notebooks), "skipped": "nothing to train (empty region)" if out is SKIPPED
                  else None, "entry": entries[-1]["path"] if entries else None,
                  "sha256": entries[-1]["sha256"] if entries else None, "entries": entries,
                  "seconds": round(time.perf_counter() - start, 3), "host": socket.gethostname(),
                  "device": _device_name(wb), "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
                  "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        write_json(done_path(job.id, self.artifacts), marker)
        return marker


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
        wb.declared = chapter
        self._record()

    def on(self, wb: Workbench) -> "ChapterJobs":
        """The same declared jobs on another Workbench of the notebook (e.g. one with linear heads)."""
        other = ChapterJobs(wb, self.chapter, None, specs=list(self.specs.values()), results=self.results)
        other.obtained = self.obtained  # one record for the notebook
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


def _entry(e: Mapping[str, Any], root: Path) -> dict[str, Any]:
    path = Path(e["path"])
    try:
        sha = read_json(path.with_suffix(".json")).get(STORE_FIELD, {}).get("sha256")
    except (OSError, ValueError):
        sha = None
    return {"path": path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path),
            "kind": e["kind"], "computed": bool(e["computed"]), "sha256": sha}


def _device_name(wb: Workbench) -> str:
    dev = str(wb.device)
    if dev.startswith("cuda"):

        return f"{dev} ({torch.cuda.get_device_name(wb.device)})"
    return dev


def _batch_size(job: JobSpec) -> int | None:
    """The batch size a job trains or scores with, as its kwargs give it (a recipe's, a graft's ``bs``)."""
    recipe = job.kwargs.get("recipe")
    return (recipe or {}).get("batch_size") if isinstance(recipe, dict) else job.kwargs.get("bs")


def plan_jobs(profile: str, family: str = "") -> dict[str, JobSpec]:
    """Every job of ``profile``'s plan (``family``: the P2 model family, as ``repro plan --family``), by id."""
    return {j.id: j for j in inventory(get_profile(profile), None, family)}


# ==============================================================================================================
# the command (`repro job run`)
# ==============================================================================================================
def main(argv: Sequence[str] | None = None) -> int:
    """``repro job run ID [ID ...] --profile P [--family F] [--data DIR]``: compute those jobs, in order."""
    parser = argparse.ArgumentParser(prog="repro job run", description="compute one job of the plan")
    parser.add_argument("ids", nargs="+", metavar="ID", help="job ids (`repro plan --json` lists them)")
    parser.add_argument("--profile", choices=sorted(PROFILES), default="cpu")
    parser.add_argument("--family", default="", help="P2 model family, as `repro plan --family`")
    parser.add_argument("--data", default=None, metavar="DIR", help="the data folder the notebooks read (--data)")
    parser.add_argument("--artifacts", default=None, metavar="DIR", help="artifacts root (default $REPRO_ARTIFACTS)")
    parser.add_argument("--device", default=None, metavar="DEV", help="auto | cpu | cuda[:N] (default the profile's)")
    args = parser.parse_args(argv)
    jobs = plan_jobs(args.profile, args.family)
    unknown = [i for i in args.ids if i not in jobs]
    if unknown:
        print(f"repro job run: error: {', '.join(unknown)} is no job of profile {args.profile}"
              f"{' family ' + args.family if args.family else ''}; `repro plan --profile {args.profile} --json` "
              "lists the ids", file=sys.stderr)
        return 2
    runner = JobRunner(jobs, data_dir=args.data, artifacts=args.artifacts, device=args.device,
                       plan=args.profile + (f" --family {args.family}" if args.family else ""))
    for job_id in args.ids:
        try:
            m = runner.run(job_id)
        except UpstreamMissing as e:
            print(f"repro job run: error: {e}", file=sys.stderr)
            return 3
        except torch.OutOfMemoryError as e:  # (= torch.cuda.OutOfMemoryError): one line, nothing stored
            job = jobs[job_id]
            print(f"repro job run: error: {out_of_memory_line(f'{job.kind} {job_id}', _batch_size(job), e)}",
                  file=sys.stderr)
            return 4
        what = m["skipped"] or ", ".join(f"{'computed' if e['computed'] else 'found'} {e['path']}"
                                         for e in m["entries"])
        print(f"{job_id}: {what} in {m['seconds']:.1f} s on {m['device']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["ChapterJobs", "DRIVERS", "DONE_DIR", "Driver", "JobRunner", "UndeclaredJob", "call_job", "load_job", "STORE_KINDS", "UpstreamMissing", "done_path", "main", "plan_jobs"]
