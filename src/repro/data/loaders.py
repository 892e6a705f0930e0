"""Where examples come from: local folders (:func:`load_local`), the HF hub (:func:`load_hub`, paper profile), the
generated tasks (:mod:`repro.data.generated`, cpu/smoke profiles), and :func:`load_task`, the one entry point the
notebooks and :class:`repro.workbench.Workbench` use.

**Sources.**  A profile's ``data_source`` names an entry of :data:`SOURCES`: a function ``(task, k, n_test,
profile) -> (train pool, test, description)``.  A new source of text registers itself with
``@register_source("name")`` in its own module, imported by :mod:`repro.data`.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from repro.data import generated
from repro.data.tasks import OOD_ONLY, Example, TaskData, TaskSpec, balanced_sample, get_spec, kshot_split

if TYPE_CHECKING:  # pragma: no cover
    from repro.profiles import Profile


# ==============================================================================================================
# local files
# ==============================================================================================================
def _read_jsonl(path: Path, spec: TaskSpec) -> list[Example]:
    out: list[Example] = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            where = f"{path}:{lineno}"
            text_a = row.get("text_a", row.get("text"))
            if not isinstance(text_a, str):
                raise ValueError(f"{where}: need a string field 'text' (single-sentence) or 'text_a' (pair)")
            text_b = row.get("text_b")
            if spec.pair and not isinstance(text_b, str):
                raise ValueError(f"{where}: {spec.name} is a sentence-pair task; need a string field 'text_b'")
            label = row.get("label")
            if isinstance(label, str) and label in spec.labels:
                label = spec.labels.index(label)
            if isinstance(label, bool) or not isinstance(label, int) or not 0 <= label < spec.num_labels:
                raise ValueError(f"{where}: label {label!r} is not an index in 0..{spec.num_labels - 1} "
                                 f"(labels of {spec.name}: {list(spec.labels)})")
            out.append(Example(text_a, label, text_b if spec.pair else None))
    return out


def load_local(task: str, data_dir: str | Path) -> tuple[list[Example], list[Example]]:
    """``(train, test)`` from ``<data_dir>/<task>/{train,test}.jsonl``, checked against ``LABELS.json``.

    Rows are ``{"text": ..., "label": i}`` or ``{"text_a": ..., "text_b": ..., "label": i}``; ``LABELS.json`` is
    the list of label names in index order and must equal the registry's order (else ValueError naming both).
    OOD-only tasks (IMDb, Yelp) may have no ``train.jsonl`` (train is then empty).
    """
    spec = get_spec(task)
    root = Path(data_dir) / task
    if not root.is_dir():
        raise FileNotFoundError(f"no directory {root} (expected <data_dir>/<TASK>/ with train.jsonl, test.jsonl, "
                                "LABELS.json)")
    labels_path = root / "LABELS.json"
    if not labels_path.exists():
        raise FileNotFoundError(f"{labels_path} is missing; it must list the label names in index order: "
                                f"{json.dumps(list(spec.labels))}")
    found = tuple(json.loads(labels_path.read_text(encoding="utf-8")))
    if found != spec.labels:
        raise ValueError(f"{labels_path} lists labels {list(found)} but repro's order for {task} is "
                         f"{list(spec.labels)}; relabel the files to repro's order")
    test_path, train_path = root / "test.jsonl", root / "train.jsonl"
    if not test_path.exists():
        raise FileNotFoundError(f"{test_path} is missing")
    if not train_path.exists() and task not in OOD_ONLY:
        raise FileNotFoundError(f"{train_path} is missing (only the OOD-only tasks {OOD_ONLY} may lack one)")
    train = _read_jsonl(train_path, spec) if train_path.exists() else []
    return train, _read_jsonl(test_path, spec)


# ==============================================================================================================
# the HF hub (paper profile)
# ==============================================================================================================
@dataclass(frozen=True)
class HubSource:
    """Where one task lives on the HF hub and how its labels map onto ours.

    ``hub_labels[i]`` is *our* label name of the hub's integer label i; rows whose label is not in
    ``hub_labels`` (SNLI's -1 "no gold label") are dropped.  With ``label_text_field`` the row's label name is
    read from that column instead (matched case-insensitively to our names, then to ``hub_labels``' index).
    ``splits`` maps our logical split ("train", "test") to the hub split name.
    """

    path: str
    config: str | None
    text_fields: tuple[str, ...]
    label_field: str
    splits: dict[str, str]
    hub_labels: tuple[str, ...]
    label_text_field: str | None = None
    note: str = ""


_TT = {"train": "train", "test": "test"}
_TV = {"train": "train", "test": "validation"}

#: hub copies used by the paper profile (test = GLUE dev, as LM-BFF; ids and label orders as published on their
#: dataset cards; the community copies of MR/CR/MPQA/Subj were not verifiable offline: check before a paper run)
HUB_SOURCES: dict[str, HubSource] = {
    "SST-2": HubSource("nyu-mll/glue", "sst2", ("sentence",), "label", _TV, ("negative", "positive")),
    "QNLI": HubSource("nyu-mll/glue", "qnli", ("question", "sentence"), "label", _TV,
                      ("entailment", "not_entailment")),
    "RTE": HubSource("nyu-mll/glue", "rte", ("sentence1", "sentence2"), "label", _TV,
                     ("entailment", "not_entailment")),
    "MNLI": HubSource("nyu-mll/glue", "mnli", ("premise", "hypothesis"), "label",
                      {"train": "train", "test": "validation_matched"}, ("entailment", "neutral", "contradiction")),
    "MRPC": HubSource("nyu-mll/glue", "mrpc", ("sentence1", "sentence2"), "label", _TV,
                      ("not_equivalent", "equivalent")),
    "QQP": HubSource("nyu-mll/glue", "qqp", ("question1", "question2"), "label", _TV,
                     ("not_duplicate", "duplicate")),
    "SNLI": HubSource("stanfordnlp/snli", None, ("premise", "hypothesis"), "label", _TT,
                      ("entailment", "neutral", "contradiction"), note="label -1 (no gold label) dropped"),
    "AGNews": HubSource("fancyzhx/ag_news", None, ("text",), "label", _TT, ("World", "Sports", "Business", "Sci/Tech"),
                        note="title + description in one field"),
    "IMDb": HubSource("stanfordnlp/imdb", None, ("text",), "label", _TT, ("negative", "positive")),
    "Yelp": HubSource("fancyzhx/yelp_polarity", None, ("text",), "label", _TT, ("negative", "positive"),
                      note="hub label 0 = original class 1 (negative)"),
    "MR": HubSource("jxm/mr", None, ("sentence",), "label", _TT, ("negative", "positive"),
                    note="LM-BFF's MR split (2,000 test); label ints as LM-BFF (unverified offline)"),
    "MPQA": HubSource("jxm/mpqa", None, ("sentence",), "label", _TT, ("negative", "positive"),
                      note="LM-BFF's MPQA split (2,000 test); label ints as LM-BFF (unverified offline)"),
    "CR": HubSource("SetFit/SentEval-CR", None, ("text",), "label", _TT, ("negative", "positive"),
                    label_text_field="label_text"),
    "Subj": HubSource("SetFit/subj", None, ("text",), "label", _TT, ("subjective", "objective"),
                      label_text_field="label_text", note="labels mapped by the label_text column"),
    "TREC": HubSource("CogComp/trec", None, ("text",), "coarse_label", _TT, ("ABBR", "ENTY", "DESC", "HUM", "LOC", "NUM"),
                      note="HF coarse order ABBR, ENTY, DESC, HUM, LOC, NUM, remapped to LM-BFF's"),
}


def _hub_label_index(spec: TaskSpec, src: HubSource, row: dict[str, Any]) -> int | None:
    if src.label_text_field and src.label_text_field in row and row[src.label_text_field] is not None:
        text = str(row[src.label_text_field]).strip().lower()
        names = {lab.lower(): i for i, lab in enumerate(spec.labels)}
        if text in names:
            return names[text]
        raise ValueError(f"{src.path}: label text {text!r} of {spec.name} matches none of {list(spec.labels)}")
    raw = row[src.label_field]
    if not isinstance(raw, (int, np.integer)) or not 0 <= int(raw) < len(src.hub_labels):
        return None  # e.g. SNLI -1 (no gold label)
    return spec.labels.index(src.hub_labels[int(raw)])


def load_hub(task: str, split: str) -> list[Example]:
    """Examples of ``task``'s ``split`` ("train" or "test") from its :data:`HUB_SOURCES` copy, in our label order.

    Needs ``pip install datasets`` and hub access (or a populated HF cache); "test" is the GLUE dev set for GLUE
    tasks (MNLI: validation_matched), as in LM-BFF.
    """
    spec = get_spec(task)
    if task not in HUB_SOURCES:
        raise KeyError(f"no hub source for {task!r}; tasks with one: {', '.join(HUB_SOURCES)}")
    src = HUB_SOURCES[task]
    if split not in src.splits:
        raise ValueError(f"unknown split {split!r} for {task}; choose one of {sorted(src.splits)}")
    try:
        import datasets
    except ImportError as err:  # pragma: no cover - install problem
        raise ImportError("hub data needs `pip install datasets` (the `hub` extra of repro)") from err
    args = (src.path, src.config) if src.config else (src.path,)
    ds = datasets.load_dataset(*args, split=src.splits[split])
    # older TREC copies call the coarse column "label-coarse"
    label_field = src.label_field
    if label_field not in ds.column_names and task == "TREC" and "label-coarse" in ds.column_names:
        label_field = "label-coarse"
    missing = [f for f in (*src.text_fields, label_field) if f not in ds.column_names]
    if missing:
        raise ValueError(f"{src.path}: columns {missing} not found; the dataset has {ds.column_names}")
    if label_field != src.label_field:
        src = HubSource(src.path, src.config, src.text_fields, label_field, src.splits, src.hub_labels,
                        src.label_text_field, src.note)
    out: list[Example] = []
    for row in ds:
        lab = _hub_label_index(spec, src, row)
        if lab is None:
            continue
        a = str(row[src.text_fields[0]]).strip()
        b = str(row[src.text_fields[1]]).strip() if spec.pair else None
        out.append(Example(a, lab, b))
    return out


# ==============================================================================================================
# the registry of sources, and the entry point
# ==============================================================================================================
#: ``fn(task, k, n_test, profile) -> (train pool, test, description of the source)``
Source = Callable[[str, int, int, "Profile"], "tuple[list[Example], list[Example], str]"]
#: a profile's ``data_source`` → where its examples come from ("local" is the ``data_dir`` folder)
SOURCES: dict[str, Source] = {}


def register_source(name: str) -> Callable[[Source], Source]:
    """Register ``fn`` as the data source ``name`` (what a profile's ``data_source`` names)."""
    def register(fn: Source) -> Source:
        if name in SOURCES or name == "local":
            raise KeyError(f"data source {name!r} is registered twice")
        SOURCES[name] = fn
        return fn
    return register


@register_source("generated")
def _generated_source(name: str, k: int, n_test: int, profile: "Profile") -> tuple[list[Example], list[Example], str]:
    """The generated tasks (cpu/smoke): a pool of :func:`generated.pool_size` examples, data seed
    ``profile.extra["generated_seed"]`` (default 0)."""
    gen_seed = int(profile.extra.get("generated_seed", 0))
    pool, test = generated.train_test(name, n_train=generated.pool_size(name, k),
                                      n_test=n_test if n_test > 0 else generated.DEFAULT_TEST_SIZE, seed=gen_seed)
    return pool, test, f"generated:seed={gen_seed}"


@register_source("hub")
def _hub_source(name: str, k: int, n_test: int, profile: "Profile") -> tuple[list[Example], list[Example], str]:
    """The HF hub copies of :data:`HUB_SOURCES` (paper profile)."""
    pool = load_hub(name, "train") if name in HUB_SOURCES else []
    test = load_hub(name, "test")
    src = HUB_SOURCES[name]
    return pool, test, f"hub:{src.path}" + (f"/{src.config}" if src.config else "")


def load_task(name: str, profile: "Profile", seed: int = 13, k: int | None = None,
              data_dir: str | Path | None = None, n_test: int | None = None, allow_short: bool = True,
              test_seed: int = 0) -> TaskData:
    """One task's k-shot train/dev and (capped) test splits for a profile.

    Source: ``data_dir`` given → :func:`load_local`; else ``profile.data_source``, an entry of :data:`SOURCES`
    ("generated" → :mod:`repro.data.generated`, "hub" → :func:`load_hub`).  train/dev = :func:`kshot_split` of the source's train
    split with ``k`` per label (default ``profile.k_shot``) and the data ``seed``; test = a label-balanced
    :func:`balanced_sample` of ``n_test`` examples (default ``profile.n_test``; 0 = all) drawn with
    ``test_seed``, so every k-shot seed sees the same test set (as in LM-BFF).  Labels with fewer than 2k
    examples are allowed by default and listed in ``meta["short_labels"]`` (with a warning).  Generated tasks use
    the data seed ``profile.extra["generated_seed"]`` (default 0) and a train pool of
    :func:`repro.data.generated.pool_size` examples, so the k-shot ``seed`` only changes which examples are drawn.
    """
    spec = get_spec(name)
    k = int(profile.k_shot if k is None else k)
    n_test = int(profile.n_test if n_test is None else n_test)
    meta: dict[str, Any] = {"task": name, "k": k, "seed": seed}
    if data_dir is not None:
        pool, test = load_local(name, data_dir)
        meta["source"] = f"local:{Path(data_dir).resolve()}"
    elif profile.data_source == "local":
        raise ValueError(f"profile {profile.name!r} has data_source 'local': pass data_dir=<dir with {name}/>")
    elif profile.data_source in SOURCES:
        pool, test, meta["source"] = SOURCES[profile.data_source](name, k, n_test, profile)
    else:
        raise ValueError(f"unknown data_source {profile.data_source!r}; choose one of "
                         f"{', '.join([*SOURCES, 'local'])}")
    meta["pool_size"] = len(pool)
    if pool:
        report: dict[str, Any] = {}
        train, dev = kshot_split(pool, k, seed, allow_short=allow_short, report=report)
        meta["short_labels"] = {spec.labels[lab]: n for lab, n in report["short_labels"].items()}
        if meta["short_labels"]:
            warnings.warn(f"{name}: labels {meta['short_labels']} have fewer than 2k = {2 * k} training examples; "
                          "their train/dev splits are short", stacklevel=2)
    else:
        train, dev = [], []
        meta["short_labels"] = {}
        meta["note"] = "test-only task (no train split)"
    meta["test_available"] = len(test)
    test = balanced_sample(test, n_test, seed=test_seed)
    meta.update({"n_train": len(train), "n_dev": len(dev), "n_test": len(test),
                 "test_label_counts": [sum(e.label == i for e in test) for i in range(spec.num_labels)]})
    return TaskData(spec, train, dev, test, meta)
