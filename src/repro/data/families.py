"""Task loading for P2's model families (``Profile.data_source`` "hub-vision", "hub-nlp", "synthetic-images",
"packaged-images": real images shipped in installed packages, :mod:`repro.data.packaged_images`).

"hub-vision" and "hub-nlp" read the fetched layout (:mod:`repro.data.layout`) under ``data_dir`` (default: the data
root, ``$REPRO_DATA`` or ``data/``), which ``repro fetch --profile paper --family vision|nlp`` writes.
These sources come with their own splits (the official ``<Task>Val`` held-out split, the T5 code's 32 validation
examples), so no k-shot sampling: train = the source's train split, dev = its validation split (α selection, as
the official code), test = a label-balanced sample of ``n_test`` test examples (0 = all).  Each task's
:class:`TaskSpec` is built from the source (class names / answer strings) and registered in
:data:`repro.data.TASKS` so :func:`repro.data.get_spec` knows it afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from repro.data.hub_nlp import load_nlp
from repro.data.hub_vision import MAX_VAL, VAL_FRACTION, load_vision
from repro.data.shapes import DATASET_SHAPES
from repro.data.tasks import TASKS, Example, ImageExample, TaskData, TaskSpec, fixed_subset

if TYPE_CHECKING:  # pragma: no cover
    from repro.profiles import Profile

#: ``fn(task, profile, data_dir) -> (spec, train, dev, test)``: one family task's own splits
Splits = Callable[[str, "Profile", "str | Path | None"], "tuple[TaskSpec, list, list, list]"]


def _images(rows: list[tuple[Any, int]]) -> list:
    return [ImageExample(img, int(y)) for img, y in rows]


def _hub_vision(name: str, profile: "Profile", data_dir: str | Path | None) -> tuple[TaskSpec, list, list, list]:
    sp = load_vision(name, data_dir)
    return TaskSpec(name, tuple(sp.classnames), family="vision"), _images(sp.train), _images(sp.val), _images(sp.test)


def _synthetic_images(name: str, profile: "Profile", data_dir: str | Path | None
                      ) -> tuple[TaskSpec, list, list, list]:
    from repro.data.synthetic_images import synthetic_image_task  # heavy: torch; repro.data is read without it

    classes, sp = synthetic_image_task(name, image_size=int(profile.image_size))
    return (TaskSpec(name, classes, family="vision"), _images(sp["train"]), _images(sp["val"]),
            _images(sp["test"]))


def _packaged_images(name: str, profile: "Profile", data_dir: str | Path | None
                     ) -> tuple[TaskSpec, list, list, list]:
    from repro.data.packaged_images import load_images, task_spec  # heavy: numpy / skimage readers

    sp = load_images(name)
    return task_spec(name), sp["train"], sp["val"], sp["test"]


def _hub_nlp(name: str, profile: "Profile", data_dir: str | Path | None) -> tuple[TaskSpec, list, list, list]:
    return load_nlp(name, data_dir)


@dataclass(frozen=True)
class FamilySource:
    """A data source (an entry of :data:`repro.data.SOURCES`) whose tasks bring their own train / dev / test splits.

    Called as any source, ``(task, k, n_test, profile)``, it gives (train, test, description) of the data root's
    copy; :meth:`task` gives the whole :class:`TaskData` (what :func:`repro.data.load_task` returns for it)."""

    name: str
    splits: Splits

    def __call__(self, task: str, k: int, n_test: int, profile: "Profile") -> tuple[list[Example], list[Example], str]:
        _, train, _, test = self.splits(task, profile, None)
        return train, test, self.name

    def task(self, name: str, profile: "Profile", seed: int = 13, n_test: int | None = None, test_seed: int = 0,
             data_dir: str | Path | None = None) -> TaskData:
        """One family task's train / dev (= validation) / test splits; its spec is registered in ``TASKS``."""
        n_test = int(profile.n_test if n_test is None else n_test)
        spec, train, dev, test = self.splits(name, profile, data_dir)
        TASKS[name] = spec
        available = len(test)
        test = fixed_subset(test, n_test, seed=test_seed)
        meta = {"task": name, "seed": seed, "source": self.name, "n_train": len(train), "n_dev": len(dev),
                "n_test": len(test), "test_available": available, "short_labels": {}}
        return TaskData(spec, train, dev, test, meta)


#: P2's family sources, registered in :data:`repro.data.SOURCES` by :mod:`repro.data.loaders` (so a profile's
#: ``data_source`` has one registry, whatever kind of source it names)
FAMILY_SOURCES: dict[str, FamilySource] = {
    "hub-vision": FamilySource("hub-vision", _hub_vision),
    "hub-nlp": FamilySource("hub-nlp", _hub_nlp),
    "synthetic-images": FamilySource("synthetic-images", _synthetic_images),
    "packaged-images": FamilySource("packaged-images", _packaged_images),
}


def dev_size(name: str, profile: "Profile") -> int | None:
    """How many examples the dev (= validation) split of a family task holds, known without reading its data (for
    the plan's cost): the packaged images' fixed splits; for the hub images the official hold-out, 10 % of the
    train split up to 5,000; None where it is not known."""
    if profile.data_source == "packaged-images":
        from repro.data.packaged_images import VAL_SIZES  # heavy: numpy / PIL, as _packaged_images above
        return VAL_SIZES.get(name)
    if profile.data_source == "hub-vision":
        shape = DATASET_SHAPES.get(name)
        if shape is not None and "train" in shape.splits:
            return min(int(shape.total("train") * VAL_FRACTION), MAX_VAL)
    return None


def load_family_task(name: str, profile: "Profile", seed: int = 13, n_test: int | None = None,
                     test_seed: int = 0, data_dir: str | Path | None = None) -> TaskData:
    """One P2 family task's train / dev (= validation) / test splits from ``profile.data_source``."""
    if profile.data_source not in FAMILY_SOURCES:
        raise ValueError(f"unknown P2 family data source {profile.data_source!r}; choose one of "
                         f"{tuple(FAMILY_SOURCES)}")
    return FAMILY_SOURCES[profile.data_source].task(name, profile, seed=seed, n_test=n_test, test_seed=test_seed,
                                                    data_dir=data_dir)
