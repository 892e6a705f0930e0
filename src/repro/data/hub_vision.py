"""P2's vision tasks for the paper profile: the 8 task-vectors datasets and ImageNet (the negation control).

Sources (spec Part F, task_vectors issue #1), all through ``torchvision.datasets`` except RESISC45 (the HF hub
copy ``torchgeo/resisc45`` with its train/val/test split files).  Root: ``$REPRO_VISION_ROOT`` (default
``~/.cache/repro/vision``).  MNIST, SVHN, GTSRB, DTD and EuroSAT download themselves; Stanford Cars (official URLs
dead), SUN397 (no longer officially downloadable) and ImageNet (licence) must be placed under the root by hand,
in torchvision's layout; a missing one fails naming the folder.

Splits, as the official code: ``train`` = the task's train split minus a held-out ``val`` of 10 % (at most 5,000,
seed 0; the official ``<Task>Val``), ``test`` = the test split.  DTD: train + val merged (official val = test);
EuroSAT and SUN397 (one split): a seeded 80/10/10 split.  ImageNet: test = the official val set, ``val`` = 5,000
train images.  Class names come from the dataset (GTSRB and EuroSAT: the official code's lists,
:data:`GTSRB_NAMES` and :data:`EUROSAT_NAMES`); the zero-shot head templates are
:data:`VISION_TEMPLATES` (CLIP-style prompts written for each dataset; ImageNet: open_clip's OpenAI templates).
Images stay lazy (file paths, or a callable returning a PIL image), so a dataset is never decoded at once.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

#: zero-shot head templates per task ("{}" = the class name)
VISION_TEMPLATES: dict[str, tuple[str, ...]] = {
    "Cars": ("a photo of a {}.", "a photo of my {}.", "a photo of the {}, a type of car."),
    "DTD": ("a photo of a {} texture.", "a photo of a {} pattern.", "a close-up photo of a {} surface."),
    "EuroSAT": ("a centered satellite photo of {}.", "a satellite photo of {}.", "an aerial view of {}."),
    "GTSRB": ('a photo of a "{}" traffic sign.', 'a zoomed in photo of a "{}" traffic sign.',
              'a centered photo of a "{}" traffic sign.'),
    "MNIST": ('a photo of the number: "{}".', 'a handwritten digit: "{}".'),
    "RESISC45": ("satellite imagery of {}.", "aerial imagery of {}.", "a satellite photo of the {}."),
    "SUN397": ("a photo of a {}.", "a photo of the {}, a type of scene."),
    "SVHN": ('a photo of the number: "{}".', 'a house number sign showing "{}".'),
}

#: EuroSAT's folder names → the class names the zero-shot head embeds: the official code's names (task_vectors'
#: ``eurosat.py``, which takes them from the CLIP paper's prompt list)
EUROSAT_NAMES: dict[str, str] = {
    "AnnualCrop": "annual crop land", "Forest": "forest", "HerbaceousVegetation": "brushland or shrubland",
    "Highway": "highway or road", "Industrial": "industrial buildings or commercial buildings",
    "Pasture": "pasture land", "PermanentCrop": "permanent crop land",
    "Residential": "residential buildings or homes or apartments", "River": "river", "SeaLake": "lake or sea",
}

#: the 43 GTSRB class names by class id, as the official code has them (task_vectors' ``gtsrb.py``, from the CLIP
#: paper's prompt list; its spellings "horizonal" and "bicyle" kept, since the text encoder sees these strings)
GTSRB_NAMES: tuple[str, ...] = (
    "red and white circle 20 kph speed limit",
    "red and white circle 30 kph speed limit",
    "red and white circle 50 kph speed limit",
    "red and white circle 60 kph speed limit",
    "red and white circle 70 kph speed limit",
    "red and white circle 80 kph speed limit",
    "end / de-restriction of 80 kph speed limit",
    "red and white circle 100 kph speed limit",
    "red and white circle 120 kph speed limit",
    "red and white circle red car and black car no passing",
    "red and white circle red truck and black car no passing",
    "red and white triangle road intersection warning",
    "white and yellow diamond priority road",
    "red and white upside down triangle yield right-of-way",
    "stop",
    "empty red and white circle",
    "red and white circle no truck entry",
    "red circle with white horizonal stripe no entry",
    "red and white triangle with exclamation mark warning",
    "red and white triangle with black left curve approaching warning",
    "red and white triangle with black right curve approaching warning",
    "red and white triangle with black double curve approaching warning",
    "red and white triangle rough / bumpy road warning",
    "red and white triangle car skidding / slipping warning",
    "red and white triangle with merging / narrow lanes warning",
    "red and white triangle with person digging / construction / road work warning",
    "red and white triangle with traffic light approaching warning",
    "red and white triangle with person walking warning",
    "red and white triangle with child and person walking warning",
    "red and white triangle with bicyle warning",
    "red and white triangle with snowflake / ice warning",
    "red and white triangle with deer warning",
    "white circle with gray strike bar no speed limit",
    "blue circle with white right turn arrow mandatory",
    "blue circle with white left turn arrow mandatory",
    "blue circle with white forward arrow mandatory",
    "blue circle with white forward or right turn arrow mandatory",
    "blue circle with white forward or left turn arrow mandatory",
    "blue circle with white keep right arrow mandatory",
    "blue circle with white keep left arrow mandatory",
    "blue circle with white arrows indicating a traffic circle",
    "white circle with gray strike bar indicating no passing for cars has ended",
    "white circle with gray strike bar indicating no passing for trucks has ended",
)

VISION_TASKS: tuple[str, ...] = ("Cars", "DTD", "EuroSAT", "GTSRB", "MNIST", "RESISC45", "SUN397", "SVHN",
                                 "ImageNet")
VAL_FRACTION, MAX_VAL = 0.1, 5000


def vision_root() -> Path:
    return Path(os.environ.get("REPRO_VISION_ROOT", "~/.cache/repro/vision")).expanduser()


def templates_for(task: str) -> tuple[str, ...]:
    if task == "ImageNet":
        from open_clip.zero_shot_metadata import OPENAI_IMAGENET_TEMPLATES

        return tuple(OPENAI_IMAGENET_TEMPLATES)
    return VISION_TEMPLATES.get(task, ("a photo of a {}.",))


@dataclass
class VisionSplits:
    """A loaded vision task: class names and (image, label) pairs per split; images are lazy."""

    classnames: list[str]
    train: list[tuple[Any, int]]
    val: list[tuple[Any, int]]
    test: list[tuple[Any, int]]


def _lazy(ds: Any, i: int) -> Callable[[], Any]:
    return lambda: ds[i][0]


def _items(ds: Any) -> list[tuple[Any, int]]:
    """(path or lazy image, label) of every item of a torchvision dataset, without decoding images."""
    for attr in ("samples", "_samples", "imgs"):
        samples = getattr(ds, attr, None)
        if samples:
            return [(str(p), int(y)) for p, y in samples]
    files, labels = getattr(ds, "_image_files", None), getattr(ds, "_labels", None)
    if files is not None and labels is not None:
        return [(str(p), int(y)) for p, y in zip(files, labels)]
    targets = getattr(ds, "targets", None)
    if targets is None:
        targets = getattr(ds, "labels", None)
    if targets is None:
        raise ValueError(f"cannot list the items of {type(ds).__name__}")
    return [(_lazy(ds, i), int(y)) for i, y in enumerate(targets)]


def _hold_out(items: Sequence[tuple[Any, int]], fraction: float = VAL_FRACTION, cap: int = MAX_VAL,
              seed: int = 0) -> tuple[list, list]:
    """The official ``split_train_into_train_val``: a seeded random ``fraction`` (≤ ``cap``) held out as val."""
    idx = list(range(len(items)))
    random.Random(seed).shuffle(idx)
    n_val = min(int(len(items) * fraction), cap)
    val = sorted(idx[:n_val])
    train = sorted(idx[n_val:])
    return [items[i] for i in train], [items[i] for i in val]


def _three_way(items: Sequence[tuple[Any, int]], seed: int = 0) -> tuple[list, list, list]:
    idx = list(range(len(items)))
    random.Random(seed).shuffle(idx)
    a, b = int(0.8 * len(idx)), int(0.9 * len(idx))
    return [items[i] for i in sorted(idx[:a])], [items[i] for i in sorted(idx[a:b])], \
        [items[i] for i in sorted(idx[b:])]


def _need(path: Path, task: str, how: str) -> Path:
    if not path.exists():
        raise FileNotFoundError(f"{task}: {path} not found; {how} (root: $REPRO_VISION_ROOT, default "
                                "~/.cache/repro/vision)")
    return path


def _classes(ds: Any) -> list[str]:
    names = list(getattr(ds, "classes", []) or [])
    if not names:
        raise ValueError(f"{type(ds).__name__} has no class names")
    return [str(c).replace("_", " ") for c in names]


def load_vision(task: str, root: str | Path | None = None) -> VisionSplits:
    """The splits of vision ``task`` (one of :data:`VISION_TASKS`) from its torchvision / HF hub source."""
    import torchvision.datasets as tvd

    root = Path(root) if root else vision_root()
    if task == "MNIST":
        tr, te = tvd.MNIST(root, train=True, download=True), tvd.MNIST(root, train=False, download=True)
        classes = [str(i) for i in range(10)]
    elif task == "SVHN":
        tr, te = tvd.SVHN(root, split="train", download=True), tvd.SVHN(root, split="test", download=True)
        classes = [str(i) for i in range(10)]
    elif task == "GTSRB":
        tr, te = tvd.GTSRB(root, split="train", download=True), tvd.GTSRB(root, split="test", download=True)
        classes = _gtsrb_names()
    elif task == "DTD":
        parts = [tvd.DTD(root, split=s, download=True) for s in ("train", "val", "test")]
        classes = _classes(parts[0])
        train, val = _hold_out(_items(parts[0]) + _items(parts[1]))
        return VisionSplits(classes, train, val, _items(parts[2]))
    elif task == "EuroSAT":
        ds = tvd.EuroSAT(root, download=True)
        classes = [EUROSAT_NAMES.get(c, c) for c in ds.classes]
        train, val, test = _three_way(_items(ds))
        return VisionSplits(classes, train, val, test)
    elif task == "SUN397":
        _need(root / "SUN397", task, "download SUN397 by hand into <root>/SUN397 (torchvision layout)")
        ds = tvd.SUN397(root, download=False)
        train, val, test = _three_way(_items(ds))
        return VisionSplits(_classes(ds), train, val, test)
    elif task == "Cars":
        _need(root / "stanford_cars", task, "place Stanford Cars (e.g. the Kaggle mirror) in <root>/stanford_cars")
        tr, te = tvd.StanfordCars(root, split="train"), tvd.StanfordCars(root, split="test")
        classes = _classes(tr)
    elif task == "ImageNet":
        _need(root / "imagenet", task, "place the ImageNet tar files in <root>/imagenet (torchvision ImageNet)")
        tr, te = tvd.ImageNet(root / "imagenet", split="train"), tvd.ImageNet(root / "imagenet", split="val")
        from open_clip.zero_shot_metadata import IMAGENET_CLASSNAMES

        train = _items(tr)
        idx = list(range(len(train)))
        random.Random(0).shuffle(idx)
        return VisionSplits(list(IMAGENET_CLASSNAMES), [], [train[i] for i in sorted(idx[:MAX_VAL])], _items(te))
    elif task == "RESISC45":
        return _resisc45()
    else:
        raise KeyError(f"unknown vision task {task!r}; choose one of {', '.join(VISION_TASKS)}")
    train, val = _hold_out(_items(tr))
    return VisionSplits(classes, train, val, _items(te))


def _resisc45() -> VisionSplits:
    """RESISC45 from the HF hub copy ``torchgeo/resisc45`` (train / validation / test), images lazy."""
    import datasets

    dsd = datasets.load_dataset("torchgeo/resisc45")
    first = dsd["train"]
    label_col = "label" if "label" in first.column_names else first.column_names[-1]
    image_col = "image" if "image" in first.column_names else first.column_names[0]
    names = [n.replace("_", " ") for n in first.features[label_col].names]

    def items(split: str) -> list[tuple[Any, int]]:
        ds = dsd[split]
        labels = ds[label_col]
        return [((lambda d=ds, i=i: d[i][image_col]), int(y)) for i, y in enumerate(labels)]

    val_split = "validation" if "validation" in dsd else "val"
    return VisionSplits(names, items("train"), items(val_split), items("test"))


def _gtsrb_names() -> list[str]:
    """The 43 GTSRB class names by class id: :data:`GTSRB_NAMES`, the official code's."""
    return list(GTSRB_NAMES)
