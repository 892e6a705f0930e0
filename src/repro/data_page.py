"""The book's data page body (``python -m repro.data_page --profile cpu``): every task a profile's notebooks read,
real or generated, with its source, licence, size and label rule.

The tasks are those the profile's job inventory trains on (:func:`repro.inventory.inventory`) plus the OOD
targets the calibration chapter evaluates; where each comes from is :func:`repro.data.provenance.task_provenance`.
Sizes are counted after the label rule and de-duplication (a packaged corpus is read; a generated task is
described by its generator's sizes, as it is built on demand).  The runner calls this module in a subprocess
(it does not import the data package) and includes the output in ``book/generated_tasks.md``.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from typing import Sequence

from repro.data import generated, get_spec
from repro.data.packaged import DataError, load_packaged
from repro.data.packaged_images import IMAGE_SOURCES, split_sizes, task_spec
from repro.data.provenance import TaskProvenance, task_provenance
from repro.inventory import inventory
from repro.p1.calibration_ood.plan import calibration_plan
from repro.profiles import Profile, get_profile


def used_tasks(profile: Profile) -> dict[str, set[str]]:
    """task → the notebooks that read it (trained on, evaluated as an OOD target, or a P2 negation control)."""
    out: dict[str, set[str]] = {}
    for job in inventory(profile):
        for use in job.uses:
            if use.how in ("kshot", "family"):
                out.setdefault(use.task, set()).update(job.notebooks)
    plan = calibration_plan(profile)
    for s in plan.ood_sources:
        for t in plan.targets(s):
            out.setdefault(t, set()).add("p1_calibration_ood")
    out.setdefault(profile.for_p2("", "p2_task_arithmetic").p2_control, set()).add("p2_task_arithmetic")
    return out


def reading_profile(profile: Profile, notebooks: set[str]) -> Profile:
    """The profile the ``notebooks`` read a task with: a P2 notebook's model family (its own data source), else
    ``profile`` itself."""
    for nb in sorted(notebooks):
        if nb.startswith("p2"):
            fam = profile.for_p2("", nb)
            if fam.p2_model_family != "text":
                return fam
    return profile


def _size(prov: TaskProvenance) -> str:
    spec = task_spec(prov.task) if prov.task in IMAGE_SOURCES else get_spec(prov.task)
    if prov.kind == "generated":
        per = max(generated.POOL_FACTOR * 64, generated.MIN_POOL_PER_LABEL)
        return (f"generated on demand: ≥ {per} train per label at 64-shot, {generated.DEFAULT_TEST_SIZE} test "
                f"({spec.num_labels} labels)")
    if prov.source == "local" or prov.source.startswith("hub"):
        return "the dataset's"
    if prov.source.endswith(f":{prov.task}") and prov.task in IMAGE_SOURCES:  # real images of a package
        sizes = split_sizes(prov.task)
        return f"{sizes['train']:,} train + {sizes['val']:,} val + {sizes['test']:,} test ({spec.num_labels} classes)"
    try:
        train, test = load_packaged(prov.source)
    except (DataError, ModuleNotFoundError, FileNotFoundError) as e:
        return f"not available here ({str(e).splitlines()[0]})"
    counts = Counter(e.label for e in train + test)
    per_label = ", ".join(f"{counts[i]:,} {lab}" for i, lab in enumerate(spec.labels))
    return f"{len(train):,} train pool + {len(test):,} test ({per_label})"


def _cell(x: str) -> str:
    return str(x).replace("|", "\\|").replace("\n", " ")


def data_page_markdown(profile: str | Profile) -> str:
    """The data table of ``profile`` (markdown), real tasks first."""
    prof = get_profile(profile) if isinstance(profile, str) else profile
    used = used_tasks(prof)
    provs = sorted((task_provenance(reading_profile(prof, nbs), t) for t, nbs in used.items()),
                   key=lambda p: (p.kind != "real", p.task))
    n_real = sum(p.real for p in provs)
    lines = [f"The **{prof.name}** profile reads {len(provs)} tasks: **{n_real} real**, "
             f"**{len(provs) - n_real} generated**.", "",
             "| task | data | what it is | source · licence | size (after the label rule) | label rule | notebooks |",
             "|---|---|---|---|---|---|---|"]
    for p in provs:
        kind = "**real**" if p.real else "generated"
        nbs = ", ".join(sorted(used[p.task]))
        lines.append(f"| {p.task} | {kind} | {_cell(p.title)} | `{p.source}` · {_cell(p.licence)} | "
                     f"{_cell(_size(p))} | {_cell(p.label_rule)} | {nbs} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m repro.data_page", description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="cpu")
    args = parser.parse_args(argv)
    print(data_page_markdown(args.profile))
    return 0


if __name__ == "__main__":
    sys.exit(main())
