"""Task loading for P2's model families (``Profile.data_source`` "hub-vision", "hub-nlp", "synthetic-images").

"hub-vision" and "hub-nlp" read the fetched layout (:mod:`repro.data.layout`) under ``data_dir`` (default: the data
root, ``$REPRO_DATA`` or ``data/``), which ``repro fetch --profile paper --family vision|nlp`` writes.
These sources come with their own splits (the official ``<Task>Val`` held-out split, the T5 code's 32 validation
examples), so no k-shot sampling: train = the source's train split, dev = its validation split (α selection, as
the official code), test = a label-balanced sample of ``n_test`` test examples (0 = all).  Each task's
:class:`TaskSpec` is built from the source (class names / answer strings) and registered in
:data:`repro.data.TASKS` so :func:`repro.data.get_spec` knows it afterwards.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from repro.data.tasks import TASKS, ImageExample, TaskData, TaskSpec, balanced_sample

if TYPE_CHECKING:  # pragma: no cover
    from repro.profiles import Profile

FAMILY_SOURCES: tuple[str, ...] = ("hub-vision", "hub-nlp", "synthetic-images")


def _images(rows: list[tuple[Any, int]]) -> list:
    return [ImageExample(img, int(y)) for img, y in rows]


def load_family_task(name: str, profile: "Profile", seed: int = 13, n_test: int | None = None,
                     test_seed: int = 0, data_dir: str | Path | None = None) -> TaskData:
    """One P2 family task's train / dev (= validation) / test splits from ``profile.data_source``."""
    source = profile.data_source
    n_test = int(profile.n_test if n_test is None else n_test)
    if source == "hub-vision":
        from repro.data.hub_vision import load_vision

        sp = load_vision(name, data_dir)
        spec = TaskSpec(name, tuple(sp.classnames), family="vision")
        train, dev, test = _images(sp.train), _images(sp.val), _images(sp.test)
    elif source == "synthetic-images":
        from repro.data.synthetic_images import synthetic_image_task

        classes, sp = synthetic_image_task(name, image_size=int(profile.image_size))
        spec = TaskSpec(name, classes, family="vision")
        train, dev, test = _images(sp["train"]), _images(sp["val"]), _images(sp["test"])
    elif source == "hub-nlp":
        from repro.data.hub_nlp import load_nlp

        spec, train, dev, test = load_nlp(name, data_dir)
    else:
        raise ValueError(f"unknown P2 family data source {source!r}; choose one of {FAMILY_SOURCES}")
    TASKS[name] = spec
    available = len(test)
    test = balanced_sample(test, n_test, seed=test_seed)
    meta = {"task": name, "seed": seed, "source": source, "n_train": len(train), "n_dev": len(dev),
            "n_test": len(test), "test_available": available, "short_labels": {}}
    return TaskData(spec, train, dev, test, meta)
