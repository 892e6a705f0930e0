"""P2's vision tasks for the paper profile: the 8 task-vectors datasets and ImageNet (the negation control).

**Reading** (:func:`load_vision`): the fetched layout only, ``<data root>/vision/<Task>/LABELS.json`` (the source's
own class names, in label order) and ``<split>/<label:04d>/<n:07d>.<ext>``, one file per image in its label's folder,
``n`` = its position in the source split (:mod:`repro.data.layout`).  The stored splits are the source's
(:data:`FETCHED_SPLITS`): ``train`` / ``test`` (MNIST, SVHN, GTSRB, Cars), ``train`` / ``val`` / ``test`` (DTD;
RESISC45 with torchgeo's split files), ``all`` (EuroSAT, SUN397: one split), ``val`` / ``test`` (ImageNet: 5,000
train images drawn with seed 0, and the official val set).  A missing folder is a one-line error naming
``repro fetch --profile paper --family vision``.

**Fetching** (:func:`fetch_vision`, run by ``repro fetch``): through ``torchvision.datasets`` into a source folder
(``--vision-sources DIR``, else ``$REPRO_VISION_ROOT``, else ``~/.cache/repro/vision``), except RESISC45 (the
archive and split files of the HF hub repository ``torchgeo/resisc45``, at the revision torchgeo pins).  MNIST,
SVHN, GTSRB, DTD and EuroSAT download themselves; Stanford Cars (official URLs dead), SUN397 (no longer officially
downloadable) and ImageNet (licence) must be placed in the source folder by hand, in torchvision's layout; a
missing one fails naming the folder.  Files are copied as they are (JPEG stays JPEG); in-memory images (MNIST,
SVHN) are written as PNG.

Splits, as the official code: ``train`` = the task's train split minus a held-out ``val`` of 10 % (at most 5,000,
seed 0; the official ``<Task>Val``), ``test`` = the test split.  DTD: train + val merged (official val = test);
RESISC45: torchgeo's train split (18,900) minus the same 10 % held out (1,890; torchgeo's val split of 6,300 is
stored but not read), as the official code holds out 10 % of its train split.  EuroSAT and SUN397 (one split): a
seeded 80/10/10 split.  ImageNet: test = the official val set, ``val`` = 5,000
train images.  Class names are mapped from the stored source names when read (:func:`display_names`; GTSRB and
EuroSAT: the official code's lists, :data:`GTSRB_NAMES` and :data:`EUROSAT_NAMES`); the zero-shot head templates
are :data:`VISION_TEMPLATES` (CLIP-style prompts written for each dataset; ImageNet: open_clip's OpenAI
templates).  Images stay lazy (file paths), so a dataset is never decoded at once.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence
import shutil
import zipfile

from repro.data import layout
from repro.data.tasks import DataError

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
        # optional heavy dependency (open_clip): vision models only
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
        raise FileNotFoundError(f"{task}: {path} not found; {how} (source folder: --vision-sources DIR, else "
                                "$REPRO_VISION_ROOT, else ~/.cache/repro/vision)")
    return path


def _classes(ds: Any) -> list[str]:
    names = list(getattr(ds, "classes", []) or [])
    if not names:
        raise ValueError(f"{type(ds).__name__} has no class names")
    return [str(c) for c in names]


#: the splits the fetched layout holds per task (the source's own; see the module doc)
FETCHED_SPLITS: dict[str, tuple[str, ...]] = {
    "MNIST": ("train", "test"), "SVHN": ("train", "test"), "GTSRB": ("train", "test"), "Cars": ("train", "test"),
    "DTD": ("train", "val", "test"), "RESISC45": ("train", "val", "test"), "EuroSAT": ("all",), "SUN397": ("all",),
    "ImageNet": ("val", "test"),
}


def display_names(task: str, raw: Sequence[str]) -> list[str]:
    """The class names the zero-shot head embeds, from the source's names stored in ``LABELS.json``."""
    if task == "ImageNet":
        # optional heavy dependency (open_clip): vision models only
        from open_clip.zero_shot_metadata import IMAGENET_CLASSNAMES

        return list(IMAGENET_CLASSNAMES)
    if task == "GTSRB":
        return _gtsrb_names()
    if task == "EuroSAT":
        return [EUROSAT_NAMES.get(c, c) for c in raw]
    return [str(c).replace("_", " ") for c in raw]


def load_vision(task: str, root: str | Path | None = None) -> VisionSplits:
    """The splits of vision ``task`` (one of :data:`VISION_TASKS`) from the fetched layout under ``root`` (default:
    the data root), split as the official code (see the module doc)."""
    if task not in FETCHED_SPLITS:
        raise KeyError(f"unknown vision task {task!r}; choose one of {', '.join(VISION_TASKS)}")
    folder = layout.task_dir(root, "vision", task)
    layout.verify(folder, "vision", root)  # every file as `repro fetch` wrote it
    raw = layout.read_labels(folder, "vision", root)
    stored = {split: layout.read_image_split(layout.require(folder / split, "vision", root, f"the {split} images"))
              for split in FETCHED_SPLITS[task]}
    classes = display_names(task, raw)
    if len(classes) != len(raw):
        raise DataError(f"{folder / 'LABELS.json'} lists {len(raw)} classes, {task} has {len(classes)}; run "
                        f"`{layout.fetch_command('vision', root)}` again")
    return VisionSplits(classes, *official_splits(task, stored))


def official_splits(task: str, stored: Mapping[str, Sequence[Any]]) -> tuple[list, list, list]:
    """``(train, val, test)`` of vision ``task`` from its stored source splits (:data:`FETCHED_SPLITS`), split as
    the official code (see the module doc).  Works on any items, so the paper-plan check
    (:func:`repro.inventory.check_plan`) splits per-class count pools through this same function."""
    if task == "ImageNet":
        return [], list(stored["val"]), list(stored["test"])
    if task in ("EuroSAT", "SUN397"):
        return _three_way(stored["all"])
    if task == "DTD":
        train, val = _hold_out(list(stored["train"]) + list(stored["val"]))
        return train, val, list(stored["test"])
    train, val = _hold_out(stored["train"])
    return train, val, list(stored["test"])


# ==============================================================================================================
# fetch adapters (repro fetch): torchvision / the hub -> the fetched layout
# ==============================================================================================================
#: RESISC45's files in the HF hub repository torchgeo/resisc45, at the revision torchgeo's RESISC45 dataset pins
RESISC45_REPO, RESISC45_REVISION = "torchgeo/resisc45", "a826b44d938a883185f11ebe3d512d38b464312f"
RESISC45_FILES = {"archive": "NWPU-RESISC45.zip", "train": "resisc45-train.txt", "val": "resisc45-val.txt",
                  "test": "resisc45-test.txt"}


def source_splits(task: str, source_root: str | Path | None = None) -> tuple[list[str], dict[str, list]]:
    """``(source class names, {stored split: [(image, label)]})`` of vision ``task`` from its source (torchvision,
    or the hub for RESISC45), an image being a file path or a callable returning a PIL image."""
    import torchvision.datasets as tvd  # heavy: fetching only

    root = Path(source_root).expanduser() if source_root else vision_root()
    if task == "MNIST":
        return [str(i) for i in range(10)], {s: _items(tvd.MNIST(root, train=s == "train", download=True))
                                             for s in ("train", "test")}
    if task == "SVHN":
        return [str(i) for i in range(10)], {s: _items(tvd.SVHN(root, split=s, download=True)) for s in ("train", "test")}
    if task == "GTSRB":
        return [str(i) for i in range(43)], {s: _items(tvd.GTSRB(root, split=s, download=True))
                                             for s in ("train", "test")}
    if task == "DTD":
        parts = {s: tvd.DTD(root, split=s, download=True) for s in ("train", "val", "test")}
        return _classes(parts["train"]), {s: _items(d) for s, d in parts.items()}
    if task == "EuroSAT":
        ds = tvd.EuroSAT(root, download=True)
        return _classes(ds), {"all": _items(ds)}
    if task == "SUN397":
        _need(root / "SUN397", task, "download SUN397 by hand into <source folder>/SUN397 (torchvision layout)")
        ds = tvd.SUN397(root, download=False)
        return _classes(ds), {"all": _items(ds)}
    if task == "Cars":
        _need(root / "stanford_cars", task, "place Stanford Cars (e.g. the Kaggle mirror) in <source folder>/stanford_cars")
        parts = {s: tvd.StanfordCars(root, split=s) for s in ("train", "test")}
        return _classes(parts["train"]), {s: _items(d) for s, d in parts.items()}
    if task == "ImageNet":
        _need(root / "imagenet", task, "place the ImageNet tar files in <source folder>/imagenet (torchvision ImageNet)")
        train = _items(tvd.ImageNet(root / "imagenet", split="train"))
        val_ds = tvd.ImageNet(root / "imagenet", split="val")
        idx = list(range(len(train)))
        random.Random(0).shuffle(idx)
        return list(val_ds.wnids), {"val": [train[i] for i in sorted(idx[:MAX_VAL])], "test": _items(val_ds)}
    if task == "RESISC45":
        return _resisc45(root)
    raise KeyError(f"unknown vision task {task!r}; choose one of {', '.join(VISION_TASKS)}")


def _resisc45(root: Path) -> tuple[list[str], dict[str, list]]:
    """RESISC45 from the hub repository torchgeo/resisc45: the image archive (one folder per class) and the
    train / val / test file lists of torchgeo (the splits of Neumann et al. 2019)."""
    from huggingface_hub import hf_hub_download  # heavy: fetching only

    got = {k: Path(hf_hub_download(RESISC45_REPO, f, repo_type="dataset", revision=RESISC45_REVISION))
           for k, f in RESISC45_FILES.items()}
    out_dir = root / "NWPU-RESISC45"
    if not out_dir.is_dir():
        with zipfile.ZipFile(got["archive"]) as z:
            z.extractall(root)
    classes = sorted(d.name for d in out_dir.iterdir() if d.is_dir())
    by_name = {f.name: (str(f), classes.index(d.name)) for d in out_dir.iterdir() if d.is_dir() for f in d.iterdir()}
    splits = {}
    for split in ("train", "val", "test"):
        names = [line.strip() for line in got[split].read_text().splitlines() if line.strip()]
        lost = [n for n in names if n not in by_name]
        if lost:
            raise FileNotFoundError(f"RESISC45: {len(lost)} files of {RESISC45_FILES[split]} are not in the archive "
                                    f"(first: {lost[0]}); delete {out_dir} and fetch again")
        splits[split] = [by_name[n] for n in names]
    return classes, splits


def write_images(split_dir: Path, items: Sequence[tuple[Any, int]]) -> int:
    """Write ``(image, label)`` items into ``split_dir/<label>/<n>.<ext>`` (files copied, PIL images as PNG)."""
    made: set[Path] = set()
    for n, (img, label) in enumerate(items):
        if isinstance(img, (str, Path)):
            ext = Path(img).suffix.lstrip(".") or "img"
            dest = split_dir / f"{int(label):04d}" / f"{n:07d}.{ext.lower()}"
        else:
            dest = split_dir / f"{int(label):04d}" / f"{n:07d}.png"
        if dest.parent not in made:
            dest.parent.mkdir(parents=True, exist_ok=True)
            made.add(dest.parent)
        if isinstance(img, (str, Path)):
            shutil.copyfile(img, dest)
        else:
            image = img() if callable(img) else img
            image.save(dest, format="PNG")
    return len(items)


def fetch_vision(task: str, root: str | Path | None = None, source_root: str | Path | None = None) -> dict[str, Any]:
    """Write vision ``task`` into the fetched layout (``vision/<Task>/``).  Returns the ``FETCHED.json`` record."""
    names, splits = source_splits(task, source_root)
    missing = [s for s in FETCHED_SPLITS[task] if not splits.get(s)]
    if missing:
        raise ValueError(f"{task}: the source gave no images for split(s) {missing}")
    folder = layout.task_dir(root, "vision", task)
    tmp = layout.staging(folder)
    layout.write_labels(tmp, names)
    counts = {split: write_images(tmp / split, splits[split]) for split in FETCHED_SPLITS[task]}
    record = {"task": task, "family": "vision", "splits": counts,
              "source": f"hub:{RESISC45_REPO}@{RESISC45_REVISION}" if task == "RESISC45" else "torchvision"}
    layout.commit(tmp, folder, record)
    return record


def _gtsrb_names() -> list[str]:
    """The 43 GTSRB class names by class id: :data:`GTSRB_NAMES`, the official code's."""
    return list(GTSRB_NAMES)
