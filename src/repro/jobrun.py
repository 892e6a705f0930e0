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
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import torch

from repro.artifacts import STORE_FIELD, read_json, write_json
from repro.core.masks import Mask
from repro.device import out_of_memory_line
from repro.inventory import inventory
from repro.jobs import JobSpec
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
SKIPPED = object()  # a call with nothing to compute (a re-training job whose learned region came out empty)


class UpstreamMissing(RuntimeError):
    """A dependency of the job is not in the store (or is stale): the job runs after it, never instead of it."""


# ==============================================================================================================
# one call per driver: (runner, workbench, job, kwargs with upstream references resolved) -> the job's value
# ==============================================================================================================
def _recipe(d: Mapping[str, Any] | None) -> FinetuneRecipe | None:
    return None if d is None else FinetuneRecipe(**d)


def _finetune_run(r: "JobRunner", wb: Workbench, job: JobSpec, k: dict) -> Any:
    trainable = k["trainable"]
    if isinstance(trainable, dict) and "lota_of" in trainable:  # P2 LoTA: the top-|τ_ft| mask of the FT run

        trainable = lota_mask_for(wb, k["tasks"][0], seed=k["seed"], density=trainable["density"])
    if isinstance(trainable, Mask) and trainable.count() == 0:
        return SKIPPED  # repro.p1.regions.retrained_region trains nothing on an empty region either
    return wb.finetune_run(k["tasks"], _recipe(k["recipe"]), k=k["k"], trainable=trainable,
                           l1_lambda=k.get("l1", 0.0), linearized=k.get("linearized", False), seed=k["seed"],
                           tag=k["tag"])[0]


def _graft_recipe(wb: Workbench, k: Mapping[str, Any]) -> Any:
    """The job's graft settings (``steps``, ``lr``, ``bs``, ``max_examples``, ``b``, ``max_dev``) as a GraftRecipe."""
    return replace(wb.profile.graft, steps=int(k["steps"]), lr=float(k["lr"]), batch_size=int(k["bs"]),
                   max_examples=int(k["max_examples"]), sigmoid_bias=float(k["b"]), max_dev=k["max_dev"])


def _graft(r: "JobRunner", wb: Workbench, job: JobSpec, k: dict) -> Any:
    base = k["base"]
    if isinstance(base, (int, float)) and k["scope"] != "graftable":  # as repro.p1.regions.learned_region

        base = scope_fraction(wb, float(base), k["scope"])
    return wb.graft(k["task"], k["vector"], base, k=k["k"], recipe=_graft_recipe(wb, k), scope=k["scope"],
                    seed=k["seed"], tag=k["tag"])[0]


def _lora(r: "JobRunner", wb: Workbench, job: JobSpec, k: dict) -> Any:
    return lora_run(wb, k["task"], k["rank"], _recipe(k["recipe"]), alpha=k["alpha"], seed=k["seed"])[0]


def _adapter(r: "JobRunner", wb: Workbench, job: JobSpec, k: dict) -> Any:
    return adapter_run(wb, k["task"], k["kind"], k["size"], _recipe(k["recipe"]), seed=k["seed"])[0]


def _tune_union(r: "JobRunner", wb: Workbench, job: JobSpec, k: dict) -> Any:
    union = Mask.union(k["union"][t] for t in k["tasks"])  # as repro.p1.multitask.union_regions
    return tune_union(wb, k["tasks"], k["vector"], union, recipe=_graft_recipe(wb, k), seed=k["seed"])[0]


def _continual(r: "JobRunner", wb: Workbench, job: JobSpec, k: dict) -> Any:
    given = k.get("given") or {}
    return sequential_finetune(wb, k["sequence"], _recipe(given.get("recipe", k["recipe"])), regions=k["regions"],
                               seed=k["seed"], later_recipe=_recipe(given.get("later_recipe", k["later_recipe"])))[-1]


def _fish(r: "JobRunner", wb: Workbench, job: JobSpec, k: dict) -> Any:
    total = graftable_total(wb)  # the FISH densities that select exactly the learned regions' counts
    learned = [r.value(i, wb) for i in k["matched_to"]]  # (as repro.p1.appendix.fish_vs_learned)
    return fish_regions(wb, k["task"], sorted({(m.count() + 0.5) / total for m in learned}), k=k["k"], seed=k["seed"])


def _tracking(r: "JobRunner", wb: Workbench, job: JobSpec, k: dict) -> Any:
    return checkpoint_tracking(wb, k["task"], k["sparsities"], k["checkpoint"], every=k["every"],
                               recipe=_recipe(k["recipe"]), graft=replace(wb.profile.graft, steps=k["graft_steps"]),
                               k=k["k"], seed=k["seed"], n_eval=k["n_eval"], progress=False)


def _method_run(r: "JobRunner", wb: Workbench, job: JobSpec, k: dict) -> Any:
    return finetune_method_run(wb, k["task"], k["method"], seed=k["seed"], recipe=_recipe(k["recipe"]))[0]


def _talos(r: "JobRunner", wb: Workbench, job: JobSpec, k: dict) -> Any:
    return talos_mask(wb, k["task"], seed=k["seed"], sparsity=k["sparsity"])[0]


def _evaluator(wb: Workbench, k: dict) -> Any:
    return Evaluator(wb, k["tasks"], k["control"], k["n_val"], k["n_test"], seed=k["seed"])


def _arithmetic(r: "JobRunner", wb: Workbench, job: JobSpec, k: dict) -> Any:
    return run_method(wb, _evaluator(wb, k), k["key"], k["alphas"], negation=k["negation"])


def _merge(r: "JobRunner", wb: Workbench, job: JobSpec, k: dict) -> Any:
    return merging_scheme(wb, _evaluator(wb, k), k["source"], k["scheme"], k["alphas"],
                          adamerging_steps=k["adamerging_steps"])


def _sensitivity(r: "JobRunner", wb: Workbench, job: JobSpec, k: dict) -> Any:
    return low_sensitivity_mask(wb, k["task"], k["n"], k["fraction"], k["seed"])[0]


def _drift(r: "JobRunner", wb: Workbench, job: JobSpec, k: dict) -> Any:
    return drift_curve(wb, k["task"], k["method"], k["steps"], eval_subset(wb, k["task"], k["examples"]),
                       seed=k["seed"])


#: driver (the job's dotted name) -> its call
CALLS: dict[str, Callable[["JobRunner", Workbench, JobSpec, dict], Any]] = {
    "repro.workbench.Workbench.finetune_run": _finetune_run,
    "repro.workbench.Workbench.graft": _graft,
    "repro.p1.peft_baselines.lora_run": _lora,
    "repro.p1.peft_baselines.adapter_run": _adapter,
    "repro.p1.multitask.tune_union": _tune_union,
    "repro.p1.continual.sequential_finetune": _continual,
    "repro.p1.regions.fish_regions": _fish,
    "repro.p1.trajectory.checkpoint_tracking": _tracking,
    "repro.p2.methods.finetune_method_run": _method_run,
    "repro.p2.methods.talos_mask": _talos,
    "repro.p2.arithmetic.run_method": _arithmetic,
    "repro.p2.arithmetic.merging_scheme": _merge,
    "repro.p2.sensitivity.runs.low_sensitivity_mask": _sensitivity,
    "repro.p2.linear_regime.drift_curve": _drift,
}


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

    def resolve(self, value: Any, wb: Workbench) -> Any:
        """``value`` with every ``{"job": id}`` replaced by that job's stored artifact (loaded, never computed)."""
        if isinstance(value, dict):
            if set(value) == {"job"}:
                return self.value(value["job"], wb)
            return {k: self.resolve(v, wb) for k, v in value.items()}
        if isinstance(value, list):
            return [self.resolve(v, wb) for v in value]
        return value

    def value(self, job_id: str, wb: Workbench) -> Any:
        """The stored artifact of upstream job ``job_id``, loaded with the store read-only (:class:`UpstreamMissing`
        when it is absent or stale)."""
        key = (job_id, id(wb))
        if key in self._values:
            return self._values[key]
        job = self.jobs.get(job_id)
        if job is None:
            raise UpstreamMissing(f"upstream missing: {job_id} is not a job of this plan")
        before, kinds = wb.read_only, wb.compute_kinds
        wb.read_only = True
        try:
            out = CALLS[job.driver](self, wb, job, self.resolve(dict(job.kwargs), wb))
        except StoreMiss as e:
            raise UpstreamMissing(f"upstream missing: {job.kind} {job.id}; run `repro job run {job.id} --profile "
                                  f"{self.plan or job.profile}` first ({e.kind} {e.path.name}: {e.reason})") from None
        finally:
            wb.read_only, wb.compute_kinds = before, kinds
        self._values[key] = out
        return out

    def run(self, job_id: str) -> dict[str, Any]:
        """Compute job ``job_id`` (its upstream artifacts must be stored) and write its done-marker."""
        job = self.jobs.get(job_id)
        if job is None:
            raise KeyError(job_id)
        if job.driver not in CALLS:
            raise ValueError(f"no job call for driver {job.driver!r}; known: {sorted(CALLS)}")
        start = time.perf_counter()
        wb = self.workbench(job)
        for dep in job.deps:  # every upstream artifact first, read-only
            self.value(dep, wb)
        upstream = {e["path"] for e in wb.ledger}
        kwargs = self.resolve(dict(job.kwargs), wb)
        wb.compute_kinds = STORE_KINDS[job.kind]
        mark = len(wb.ledger)
        try:
            out = CALLS[job.driver](self, wb, job, kwargs)
        except StoreMiss as e:
            raise UpstreamMissing(f"upstream missing: {e.kind} {e.path.name} ({e.reason}), which no dependency of "
                                  f"{job.kind} {job.id} declares; the inventory lacks a dependency") from None
        finally:
            wb.compute_kinds = None
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


__all__ = ["CALLS", "DONE_DIR", "JobRunner", "STORE_KINDS", "UpstreamMissing", "done_path", "main", "plan_jobs"]
