"""Fixture folders shaped like the paper profile's real datasets, in the fetched layout (:mod:`repro.data.layout`).

``make_fixture_tree(dest, family)`` writes, for every task of ``family`` ("text", "nlp", "vision" or "all"), the
folder ``repro fetch`` would write, with the real task names, label names and splits, tiny texts (a few words) and
tiny images (8 × 8 PNG, one colour per class), and per-label counts = the real counts of
:data:`repro.data.shapes.DATASET_SHAPES` divided by ``scale`` (:data:`FIXTURE_SCALE`, floor division, at least 1,
at most ``cap``).  Pass the returned folder as ``data_dir`` (``load_task(..., data_dir=root)``, or
``load_family_task(..., data_dir=root)``) and divide the profile's k-shot sizes by the same ``scale``
(:func:`fixture_k`).

Why floor division: for every k that is a multiple of ``scale`` (the paper's 64 and 4096 at scale 64, and 2k), a
real label holds at least k examples exactly when its fixture label holds at least k / scale.  So a task that is
short of data at 4096-shot (RTE's ~1,250 per class, TREC, CR, MPQA, Subj, MRPC) is short in the fixture at
4096 / scale, and one that is not (AGNews, MNLI, ...) is not.  Exceptions, all where k does not apply: a label with
fewer than ``scale`` real examples keeps 1 (TREC's 9 ABBR test questions, 40-image DTD classes), a text task's train
label at least 2 (one train and one dev example at the paper's 64-shot, as TREC's 86 ABBR questions give); ``cap`` (default
:data:`FIXTURE_CAP` = 4 × 4096 / 64, above every threshold of the paper plans) trims the big splits; the held-out
split of a T5 task keeps at least 32 + 8 examples, since the official protocol takes an absolute 32 of them for
validation (the vision hold-out's 5,000 cap and ImageNet's 5,000 val images are absolute sizes too: in a fixture
they never bind).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Iterable

from PIL import Image

from repro.data import layout
from repro.data.shapes import DATASET_SHAPES, label_names
from repro.data.hub_nlp import NLP_SOURCES, N_VAL
from repro.data.tasks import get_spec

FIXTURE_SCALE = 64  # the paper's 64-shot becomes 1-shot, its 4096-shot 64-shot
FIXTURE_CAP = 256
FAMILIES: tuple[str, ...] = ("text", "nlp", "vision")
_IMAGE_SIDE = 8


def fixture_k(k: int, scale: int = FIXTURE_SCALE) -> int:
    """The k-shot size to use on a fixture tree written with ``scale`` for the paper's ``k``."""
    if k % scale:
        raise ValueError(f"k = {k} is not a multiple of the fixture scale {scale}: its thresholds would not carry over")
    return k // scale


def fixture_counts(task: str, scale: int = FIXTURE_SCALE, cap: int = FIXTURE_CAP) -> dict[str, tuple[int, ...]]:
    """Per-split per-label counts of ``task``'s fixture (see the module doc)."""
    shape = DATASET_SHAPES[task]
    # a text task's train label keeps at least 2, so it can still give a train and a dev example at 1-shot (the
    # paper's 64-shot): TREC's 86 ABBR questions split at 64-shot, a single fixture example could not
    least = {"train": 2} if shape.family == "text" else {}
    out = {split: tuple(min(cap, max(least.get(split, 1), c // scale)) for c in counts)
           for split, counts in shape.splits.items()}
    if shape.family == "nlp":  # the T5 protocol's 32 validation examples are an absolute size (spec D5)
        held = NLP_SOURCES[task].eval_split
        floor = -(-(N_VAL + 8) // shape.num_labels)  # 32 validation examples and at least 8 test ones
        out[held] = tuple(max(floor, c) for c in out[held])
    return out


def _nlp_row(task: str, y: int, i: int) -> dict[str, Any]:
    """A hub-shaped row of T5 task ``task`` whose answer is label ``y`` (the fields our renderers read)."""
    w = f"w{i}"
    if task == "qasc":
        return {"question": f"what is {w}?", "choices": {"text": [f"c{j}" for j in range(8)], "label": list("ABCDEFGH")},
                "answerKey": "ABCDEFGH"[y]}
    if task == "quartz":
        return {"para": f"p {w}", "question": f"q {w}?", "choices": {"text": ["more", "less"], "label": ["A", "B"]},
                "answerKey": "AB"[y]}
    if task == "wiki_qa":
        return {"question": f"q {w}?", "answer": f"a {w}", "label": y}
    if task == "paws":
        return {"sentence1": f"s {w}", "sentence2": f"t {w}", "label": y}
    if task == "story_cloze":
        return {**{f"input_sentence_{k}": f"s{k} {w}" for k in range(1, 5)}, "sentence_quiz1": "e1",
                "sentence_quiz2": "e2", "answer_right_ending": y + 1}
    if task == "winogrande":
        return {"sentence": f"_ {w}", "option1": "a", "option2": "b", "answer": str(y + 1)}
    if task == "wsc":
        return {"text": f"t {w} it", "span1_text": "t", "span2_text": "it", "label": y}
    if task == "rte":
        return {"premise": f"p {w}", "hypothesis": f"h {w}", "label": y}
    raise KeyError(f"no fixture rows for T5 task {task!r}")


def _labels_in_order(counts: tuple[int, ...], seed: int) -> list[int]:
    labels = [y for y, n in enumerate(counts) for _ in range(n)]
    random.Random(seed).shuffle(labels)  # a natural order: not grouped by label
    return labels


def _text_rows(task: str, labels: Iterable[int], pair: bool) -> Iterable[dict[str, Any]]:
    for i, y in enumerate(labels):
        if pair:
            yield {"text_a": f"{task} premise {i}", "text_b": f"label {y} hypothesis {i}", "label": y}
        else:
            yield {"text": f"{task} label {y} sentence {i}", "label": y}


def _write_images(split_dir: Path, labels: list[int], n_classes: int) -> None:
    for n, y in enumerate(labels):
        colour = ((37 * y) % 256, (91 * y + 40) % 256, (53 * y + 90) % 256)
        path = layout.image_path(split_dir, y, n, "png")
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (_IMAGE_SIDE, _IMAGE_SIDE), colour).save(path, format="PNG")


def write_fixture_task(dest: Path, task: str, scale: int = FIXTURE_SCALE, cap: int = FIXTURE_CAP) -> Path:
    """Write one task's fixture folder under the data root ``dest``; returns the task folder."""
    shape = DATASET_SHAPES[task]
    folder = layout.task_dir(dest, shape.family, task)
    tmp = layout.staging(folder)
    names = label_names(task)
    layout.write_labels(tmp, names)
    counts = fixture_counts(task, scale, cap)
    for s, (split, per_label) in enumerate(counts.items()):
        labels = _labels_in_order(per_label, seed=s)
        if shape.family == "vision":
            _write_images(tmp / split, labels, len(names))
        elif shape.family == "nlp":
            layout.write_jsonl(tmp / f"{split}.jsonl", (_nlp_row(task, y, i) for i, y in enumerate(labels)))
        else:
            layout.write_jsonl(tmp / f"{split}.jsonl", _text_rows(task, labels, get_spec(task).pair))
    layout.commit(tmp, folder, {"task": task, "family": shape.family, "fixture": True, "scale": scale, "cap": cap,
                                "splits": {k: sum(v) for k, v in counts.items()}})
    return folder


def make_fixture_tree(dest: Path, family: str = "all", scale: int = FIXTURE_SCALE, cap: int = FIXTURE_CAP,
                      tasks: Iterable[str] | None = None) -> Path:
    """Write fixture folders for every task of ``family`` ("text", "nlp", "vision", "all"; or only ``tasks``) under
    ``dest``, in the fetched layout; returns ``dest`` (the data root to pass as ``data_dir``)."""
    if family != "all" and family not in FAMILIES:
        raise ValueError(f"unknown fixture family {family!r}; choose one of {', '.join(FAMILIES)} or all")
    chosen = [t for t, s in DATASET_SHAPES.items() if family in ("all", s.family)]
    if tasks is not None:
        wanted = list(tasks)
        unknown = [t for t in wanted if t not in chosen]
        if unknown:
            raise ValueError(f"no {family} fixture for {unknown}; choose among {', '.join(chosen)}")
        chosen = wanted
    dest = Path(dest)
    for task in chosen:
        write_fixture_task(dest, task, scale, cap)
    return dest
