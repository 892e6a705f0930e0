"""The fetched layout: the folders ``repro fetch`` writes and the paper profile reads (one place for both sides).

Under the data root (``--data DIR``, else ``$REPRO_DATA``, else ``data/`` in the repository;
:func:`repro.paths.data_root`)::

    <TASK>/LABELS.json, train.jsonl, test.jsonl          P1 text tasks (and P2's "text" family): the --data layout
    nlp/<task>/LABELS.json, <hub split>.jsonl            P2 T5 tasks: the hub rows as published, one per line
    vision/<Task>/LABELS.json, <split>/<label>/<n>.<ext>  P2 image tasks: one file per image, in a folder per label

``LABELS.json`` is the list of label names (text, T5 answers, class names) in index order.  An image's ``<label>``
folder is its label index written with 4 digits (``0007``), ``<n>`` its position in the source split (7 digits), so
reading a split back gives the source order; ``<ext>`` keeps the source's encoding (``.jpg``, ``.png``, ``.ppm``).
``FETCHED.json`` in a task folder records where it came from, its split sizes and the sha256 of every file
(``"files"``); a run checks the files it reads against that record (:func:`verify`).  ``repro fetch`` writes a task
into ``<folder>.partial`` and renames it when complete, so a task folder is never half written, and a task folder
that exists is not fetched again.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Iterable, Sequence

from repro.data.tasks import DataError
from repro.paths import data_root, file_sha256

MARKER = "FETCHED.json"
FAMILY_DIRS: dict[str, str] = {"text": "", "nlp": "nlp", "vision": "vision"}


def fetch_command(family: str, root: str | Path | None = None, profile: str = "paper") -> str:
    """The ``repro fetch`` command that writes ``family``'s files into ``root`` (``--dest`` only when not the
    default)."""
    cmd = f"repro fetch --profile {profile} --family {family}"
    if root is not None and Path(root).resolve() != data_root().resolve():
        cmd += f" --dest {root}"
    return cmd


def task_dir(root: str | Path | None, family: str, task: str) -> Path:
    """The folder of ``task`` of ``family`` ("text", "nlp", "vision") under the data root."""
    if family not in FAMILY_DIRS:
        raise ValueError(f"unknown data family {family!r}; choose one of {', '.join(FAMILY_DIRS)}")
    base = data_root(root)
    return base / FAMILY_DIRS[family] / task if FAMILY_DIRS[family] else base / task


def missing(path: Path, family: str, root: str | Path | None, what: str = "") -> DataError:
    """The one-line error for a file a run needs and the fetched layout lacks, naming the command to run."""
    return DataError(f"{path} is missing{' (' + what + ')' if what else ''}; run `{fetch_command(family, root)}`")


def require(path: Path, family: str, root: str | Path | None, what: str = "") -> Path:
    if not path.exists():
        raise missing(path, family, root, what)
    return path


def read_labels(folder: Path, family: str, root: str | Path | None) -> list[str]:
    path = require(folder / "LABELS.json", family, root, "the task's label names")
    names = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(names, list) or not all(isinstance(x, str) for x in names):
        raise DataError(f"{path}: not a JSON list of label names; run `{fetch_command(family, root)}` again")
    return names


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Every JSON object of a ``.jsonl`` file (blank lines skipped); a bad line names the file and the line."""
    out = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise DataError(f"{path}:{lineno}: not valid JSON ({e.msg}); fetch the task again") from None
        out.append(row)
    return out


def read_image_split(folder: Path) -> list[tuple[str, int]]:
    """``(image path, label)`` of every image under ``folder/<label>/<n>.<ext>``, in source order (by ``n``)."""
    items: list[tuple[int, str, int]] = []
    with os.scandir(folder) as labels:
        for lab in labels:
            if not lab.is_dir() or not lab.name.isdigit():
                continue
            with os.scandir(lab.path) as files:
                for f in files:
                    stem = f.name.split(".", 1)[0]
                    if stem.isdigit():
                        items.append((int(stem), f.path, int(lab.name)))
    items.sort()
    return [(path, label) for _, path, label in items]


# ---- writing (repro fetch, fixtures) ----------------------------------------------------------------------------
def image_path(split_dir: Path, label: int, n: int, ext: str) -> Path:
    return split_dir / f"{label:04d}" / f"{n:07d}.{ext.lstrip('.').lower()}"


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    return n


def write_labels(folder: Path, names: Sequence[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "LABELS.json").write_text(json.dumps(list(names), ensure_ascii=False) + "\n", encoding="utf-8")


def is_fetched(folder: Path) -> bool:
    return (folder / MARKER).is_file()


def staging(folder: Path) -> Path:
    """A fresh ``<folder>.partial`` to write a task into (a leftover of a killed fetch is removed)."""
    tmp = folder.with_name(folder.name + ".partial")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    return tmp


def commit(tmp: Path, folder: Path, record: dict[str, Any]) -> None:
    """Write the ``FETCHED.json`` record (with the sha256 of every file in ``tmp``: ``"files"``) into ``tmp`` and
    move it to ``folder`` (replacing an unfinished one)."""
    files = {p.relative_to(tmp).as_posix(): file_sha256(p) for p in sorted(tmp.rglob("*"))
             if p.is_file() and p.name != MARKER}
    record.update(files=files)
    (tmp / MARKER).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    if folder.exists():
        shutil.rmtree(folder)
    os.replace(tmp, folder)


_VERIFIED: set[tuple[str, int]] = set()  # (folder, hash of its files' sizes and mtimes) checked in this process


def verify(folder: Path, family: str, root: str | Path | None, source: str | None = None) -> None:
    """Check a fetched task folder against its ``FETCHED.json``: every recorded file present with the sha256 it was
    fetched with, and (``source``) fetched from the source the code reads now.  A difference is a one-line
    :class:`DataError` naming the file and the ``repro fetch`` command that repairs it.  Files are hashed again only
    when a size or mtime changed since this process last checked them.  A folder fetched before per-file checksums
    has nothing to check against and passes."""
    marker = folder / MARKER
    try:
        record = json.loads(marker.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return  # not a fetched folder (or a missing one: require() names it)
    fix = f"run `{fetch_command(family, root)} --force`"
    if source is not None and record.get("source") not in (None, source):
        raise DataError(f"{marker}: fetched from {record['source']}, but the code now reads {source} (the dataset "
                        f"moved to another revision or source); {fix}")
    files = sorted((record.get("files") or {}).items())
    for rel, _ in files:
        if not (folder / rel).is_file():
            raise DataError(f"{folder / rel} is missing, though `repro fetch` wrote it (deleted?); {fix}")
    key = (str(folder), hash(tuple((rel, (st := (folder / rel).stat()).st_size, st.st_mtime_ns) for rel, _ in files)))
    if key in _VERIFIED:
        return
    for rel, sha in files:
        now = file_sha256(folder / rel)
        if now != sha:
            raise DataError(f"{folder / rel} changed since `repro fetch` wrote it (sha256 {sha[:12]}, now {now[:12]}: "
                            f"truncated or edited); {fix}")
    _VERIFIED.add(key)
