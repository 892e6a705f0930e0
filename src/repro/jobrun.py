"""``repro job run ID``: compute exactly one job of the inventory in this process (issue 23).

The job comes from :func:`repro.inventory.inventory` (the same plan ``repro plan --json`` prints).  Its driver and
kwargs become the one driver call the notebook makes too (:func:`repro.jobcall.call_job`, registered per driver):
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
from pathlib import Path
from typing import Any, Mapping, Sequence

import torch

from repro.artifacts import STORE_FIELD, read_json, write_json
from repro.device import out_of_memory_line
from repro.inventory import inventory
from repro.jobcall import STORE_KINDS, call_job, driver_of, load_job
from repro.jobs import SKIPPED, JobSpec
from repro.paths import DONE_DIR, done_path  # (re-exported: the runner and the workflow share them)
from repro.profiles import PROFILES, get_profile
from repro.workbench import StoreMiss, Workbench


class UpstreamMissing(RuntimeError):
    """A dependency of the job is not in the store (or is stale): the job runs after it, never instead of it."""


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


__all__ = ["DONE_DIR", "JobRunner", "UpstreamMissing", "done_path", "main", "plan_jobs"]
