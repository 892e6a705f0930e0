"""Real images read from installed packages (repro.data.packaged_images): sizes, deterministic disjoint splits,
head-fitting examples, one-line errors."""

from __future__ import annotations

import hashlib
from collections import Counter

import numpy as np
import pytest

from repro.data import packaged_images as P

#: the stated sizes (module docstring): train, val, test
SIZES = {"mnist5k": (3500, 500, 1000), "digits": (1259, 179, 359), "faces": (50, 70, 80),
         "textures": (2304, 384, 384)}
SHAPES = {"mnist5k": (28, 28), "digits": (8, 8), "faces": (25, 25), "textures": (16, 16)}


def _available(name):
    try:
        P.package_files(name)
    except (ModuleNotFoundError, FileNotFoundError) as e:
        pytest.skip(str(e))


def _digest(e) -> str:
    return hashlib.sha256(e.image.tobytes()).hexdigest()


@pytest.mark.parametrize("name", sorted(SIZES))
def test_sizes_shapes_and_classes(name):
    _available(name)
    splits = P.load_images(name)
    assert tuple(len(splits[s]) for s in P.SPLITS) == SIZES[name]
    spec = P.task_spec(name)
    for s in P.SPLITS:
        assert {e.label for e in splits[s]} == set(range(spec.num_labels))
        e = splits[s][0]
        assert e.image.dtype == np.uint8 and e.image.shape == SHAPES[name]
    assert max(int(e.image.max()) for e in splits["train"]) > 200  # scaled to 0-255


@pytest.mark.parametrize("name", sorted(SIZES))
def test_splits_are_deterministic_and_disjoint(name):
    _available(name)
    a = P.load_images(name)
    P._splits.cache_clear()
    b = P.load_images(name)
    for s in P.SPLITS:
        assert [(_digest(e), e.label) for e in a[s]] == [(_digest(e), e.label) for e in b[s]]
    if name == "textures":
        return  # split by position in the photographs (flat patches may repeat by content)
    train = {_digest(e) for e in a["train"]}
    assert not train & {_digest(e) for e in a["test"]}
    assert not train & {_digest(e) for e in a["val"]}


def test_balanced_fixed_splits():
    _available("mnist5k")
    for s, n in zip(P.SPLITS, (350, 50, 100)):
        assert set(Counter(e.label for e in P.load_images("mnist5k")[s]).values()) == {n}
    _available("faces")
    assert Counter(e.label for e in P.load_images("faces")["test"]) == {0: 40, 1: 40}


def test_val_sizes_are_the_splits_sizes():
    """The plan's cost reads VAL_SIZES without loading images; they are the validation splits' real sizes."""
    for name, n in P.VAL_SIZES.items():
        _available(name)
        assert P.split_sizes(name)["val"] == n, name
    assert set(P.VAL_SIZES) == set(P.IMAGE_SOURCES)


def test_texture_split_is_spatial():
    _available("textures")
    patches = P.texture_patches(patch=64)  # 8 rows of patches per photograph: 6 train, 1 val, 1 test
    assert [len(patches[s]) for s in P.SPLITS] == [3 * 48, 3 * 8, 3 * 8]


def test_head_examples_come_from_train_and_are_seeded():
    _available("digits")
    train = {_digest(e) for e in P.load_images("digits")["train"]}
    head = P.head_examples("digits", shots=5, seed=0)
    assert Counter(e.label for e in head) == {c: 5 for c in range(10)}
    assert {_digest(e) for e in head} <= train
    assert [_digest(e) for e in head] == [_digest(e) for e in P.head_examples("digits", shots=5, seed=0)]
    assert [_digest(e) for e in head] != [_digest(e) for e in P.head_examples("digits", shots=5, seed=1)]
    k = P.k_shot(P.load_images("digits")["train"], 3, seed=0, exclude=head)
    assert Counter(e.label for e in k) == {c: 3 for c in range(10)}
    assert not {id(e) for e in k} & {id(e) for e in head}


def test_task_data_and_digest():
    _available("faces")
    td = P.load_image_task("faces")
    assert td.spec.labels == ("non-face", "face") and len(td.dev) == 70 and len(td.test) == 80
    assert P.source_digest("faces").count(":") == 1 and P.source_digest("faces") != "absent"


def test_unknown_and_missing_sources_fail_naming_the_fix(monkeypatch):
    with pytest.raises(ValueError, match="mnist5k"):
        P.get_source("cifar")
    monkeypatch.setitem(P.IMAGE_SOURCES, "ghost", P.ImageSource(
        "ghost", "ghost-package", "ghost_package_not_installed", ("x.npy",), ("a",), "", "", "", "", ""))
    with pytest.raises(ModuleNotFoundError, match="pip install ghost-package"):
        P.package_files("ghost")
    assert P.source_digest("ghost") == "absent"


def test_every_source_states_its_licence():
    for src in P.IMAGE_SOURCES.values():
        assert src.licence and src.origin and src.citation and src.label_rule
