"""Where a task's examples come from, in one record: what each claim says about the data that decided it.

:func:`task_provenance` answers for a profile (and an optional ``--data`` folder): is the task **real** text or
images (a packaged corpus, the hub, the user's own folder) or **generated** by :mod:`repro.data.generated`
(or the synthetic images of the smoke profiles), and from which source, under which licence and label rule.
It reads no examples, so claims and pages can ask it freely; the data page adds the sizes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from repro.data.loaders import HUB_SOURCES
from repro.data.packaged import SOURCES as PACKAGED
from repro.data.packaged_images import IMAGE_SOURCES

if TYPE_CHECKING:  # pragma: no cover
    from repro.profiles import Profile

KINDS: tuple[str, ...] = ("real", "generated")

#: a P2 family's data_source → (kind, what it is)
_FAMILY_SOURCES: dict[str, tuple[str, str]] = {
    "hub-vision": ("real", "the paper's image datasets, fetched from the hub (repro fetch --profile paper)"),
    "hub-nlp": ("real", "the paper's T5 datasets, fetched from the hub (repro fetch --profile paper)"),
    "synthetic-images": ("generated", "synthetic images (repro.data.synthetic_images): random class prototypes "
                                      "plus noise, for code-path tests"),
}


@dataclass(frozen=True)
class TaskProvenance:
    """One task's data as a profile reads it."""

    task: str
    kind: str        #: "real" | "generated"
    source: str      #: short id: a packaged corpus name, "generated", "hub:<repo>", "local", a family source
    title: str       #: what the examples are
    licence: str
    label_rule: str

    @property
    def real(self) -> bool:
        return self.kind == "real"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def task_provenance(profile: "Profile", task: str, data_dir: str | Path | None = None) -> TaskProvenance:
    """Where ``profile`` reads ``task`` from (``data_dir``: the run's ``--data`` folder, which wins as in
    :func:`repro.data.load_task`)."""
    if data_dir is not None:
        return TaskProvenance(task, "real", "local", f"the user's data folder ({Path(data_dir).name})",
                              "the user's", "LABELS.json of the folder")
    packaged = dict(profile.packaged_tasks)
    if task in packaged:
        c = PACKAGED[packaged[task]]
        return TaskProvenance(task, "real", c.name, c.title, c.licence, c.label_rule)
    src = profile.data_source
    if src == "generated":
        return TaskProvenance(task, "generated", "generated",
                              f"generated {task}-like sentences (repro.data.generated, data seed "
                              f"{profile.generated_seed})", "ours", "the template's class")
    if src == "hub":
        hub = HUB_SOURCES.get(task)
        where = f"hub:{hub.path}" if hub is not None else "hub"
        return TaskProvenance(task, "real", where, f"{task} from the hub (repro fetch --profile paper)",
                              "the dataset's", "the dataset's labels")
    if src == "packaged-images" and task in IMAGE_SOURCES:
        im = IMAGE_SOURCES[task]
        return TaskProvenance(task, "real", f"{im.package}:{task}", f"{im.title}; {im.origin}", im.licence,
                              im.label_rule)
    if src in _FAMILY_SOURCES:
        kind, title = _FAMILY_SOURCES[src]
        return TaskProvenance(task, kind, src, title, "the dataset's" if kind == "real" else "ours",
                              "the dataset's labels" if kind == "real" else "the prototype's class")
    raise ValueError(f"no provenance for data_source {src!r} of profile {profile.name!r}")


def provenance_tally(records: list[TaskProvenance]) -> str:
    """"real" if any of the deciding tasks is real, else "generated" (what a claim's tally counts)."""
    if not records:
        raise ValueError("a claim's data needs at least one task")
    return "real" if any(r.real for r in records) else "generated"


__all__ = ["KINDS", "TaskProvenance", "provenance_tally", "task_provenance"]
