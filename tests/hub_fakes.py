"""The hub mocked at its boundary, for the ``repro fetch`` tests: ``datasets.load_dataset`` (in-memory
``datasets.Dataset`` of hub-shaped rows), the ``torchvision.datasets`` classes, ``huggingface_hub.hf_hub_download``
(RESISC45's archive and split files), ``huggingface_hub.snapshot_download`` and ``open_clip.download_pretrained``.
Import the ``fake_hub`` fixture into a test module (``from hub_fakes import fake_hub``); it returns a log of every
call and the folders the fetch reads from."""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

N_PER_LABEL = 6  # rows per label of every fake text split
N_IMAGES = 12  # images of every fake torchvision split
STORY_CLOZE_HEADER = ("InputStoryid,InputSentence1,InputSentence2,InputSentence3,InputSentence4,"
                      "RandomFifthSentenceQuiz1,RandomFifthSentenceQuiz2,AnswerRightEnding")


@dataclass
class HubLog:
    datasets: list[tuple] = field(default_factory=list)
    torchvision: list[tuple] = field(default_factory=list)
    files: list[tuple] = field(default_factory=list)
    snapshots: list[tuple] = field(default_factory=list)
    open_clip: list[tuple] = field(default_factory=list)
    # (path, config) pairs that answer like a loading-script repository (its parquet export still loads; (path, "*"):
    # every load of path fails)
    script_repos: set = field(default_factory=set)
    sources: Path = Path()
    story_cloze: Path = Path()

    def count(self) -> int:
        return len(self.datasets) + len(self.torchvision) + len(self.files) + len(self.snapshots) + len(self.open_clip)


def _p1_rows(task: str) -> list[dict]:
    from repro.data import HUB_SOURCES, get_spec

    spec, src = get_spec(task), HUB_SOURCES[task]
    rows = []
    for i in range(N_PER_LABEL * len(src.hub_labels)):
        hub_label = i % len(src.hub_labels)
        row = {f: f"{task} {f} {i}" for f in src.text_fields}
        row[src.label_field] = hub_label
        if src.label_text_field:
            row[src.label_text_field] = src.hub_labels[hub_label]
        rows.append(row)
    if task == "SNLI":
        rows.append({"premise": "p", "hypothesis": "h", "label": -1})  # no gold label: dropped
    assert spec.labels
    return rows


def _nlp_task(path: str, config: str | None) -> str | None:
    from repro.data.hub_nlp import NLP_SOURCES

    for task, src in NLP_SOURCES.items():
        if any(ref.path == path and ref.config == config for ref in src.hub):
            return task
        if any(ref.path == path and ref.data_dir == config and ref.revision for ref in src.hub):
            return task
    return None


class _FakeVision:
    """A torchvision-style dataset: ``classes``, ``targets`` and PIL images from ``__getitem__``."""

    log: list = []
    n_classes = 3

    def __init__(self, root, *args, **kwargs) -> None:
        type(self).log.append((type(self).__name__, args, kwargs))
        self.classes = [f"class_{i}" for i in range(self.n_classes)]
        self.wnids = [f"n{i:08d}" for i in range(self.n_classes)]
        self.targets = [i % self.n_classes for i in range(N_IMAGES)]

    def __len__(self) -> int:
        return len(self.targets)

    def __getitem__(self, i):
        from PIL import Image

        return Image.new("RGB", (8, 8), color=(20 * i % 255, 0, 0)), self.targets[i]


def _resisc_zip(path: Path) -> None:
    from PIL import Image

    with zipfile.ZipFile(path, "w") as z:
        for c in ("airplane", "beach", "sea_ice"):
            for i in range(1, 6):
                buf = io.BytesIO()
                Image.new("RGB", (8, 8), color=(i * 30, 0, 0)).save(buf, format="JPEG")
                z.writestr(f"NWPU-RESISC45/{c}/{c}_{i:03d}.jpg", buf.getvalue())


@pytest.fixture
def fake_hub(monkeypatch, tmp_path):
    import huggingface_hub
    import open_clip
    import torchvision.datasets as tvd

    import datasets
    from repro.data.fixtures import _nlp_row
    from repro.data.hub_nlp import NLP_SOURCES

    log = HubLog(sources=tmp_path / "sources", story_cloze=tmp_path / "story_cloze")
    for sub in ("SUN397", "stanford_cars", "imagenet"):
        (log.sources / sub).mkdir(parents=True)
    log.story_cloze.mkdir()
    for split, name in (("val", "cloze_test_val__spring2016 - cloze_test_ALL_val.csv"),
                        ("test", "cloze_test_test__spring2016 - cloze_test_ALL_test.csv")):
        lines = [STORY_CLOZE_HEADER] + [f"id{i},a {i},b,c,d,end one,end two,{1 + i % 2}" for i in range(40)]
        (log.story_cloze / name).write_text("\n".join(lines) + "\n", encoding="utf-8")

    def load_dataset(path, config=None, split=None, revision=None, data_dir=None, **kw):
        log.datasets.append((path, config, split, revision, data_dir))
        if ((path, config) in log.script_repos and revision is None) or (path, "*") in log.script_repos:
            raise RuntimeError(f"Dataset scripts are no longer supported, but found {path.split('/')[-1]}.py")
        task = _nlp_task(path, config if config else data_dir)
        if task is not None:
            answers = NLP_SOURCES[task].answers
            n = 40 if split == NLP_SOURCES[task].eval_split else N_PER_LABEL * len(answers)
            return datasets.Dataset.from_list([_nlp_row(task, i % len(answers), i) for i in range(n)])
        from repro.data import HUB_SOURCES

        for t, src in HUB_SOURCES.items():
            if src.path == path and src.config == config and split in src.splits.values():
                return datasets.Dataset.from_list(_p1_rows(t))
        raise FileNotFoundError(f"no fake hub dataset {path}/{config} split {split}")

    def hf_hub_download(repo_id, filename, repo_type=None, revision=None, **kw):
        log.files.append((repo_id, filename, revision))
        out = tmp_path / "hub_files" / filename
        out.parent.mkdir(parents=True, exist_ok=True)
        if filename.endswith(".zip"):
            _resisc_zip(out)
        else:
            split = filename.split("-")[1].split(".")[0]
            idx = {"train": (1, 2, 3), "val": (4,), "test": (5,)}[split]
            out.write_text("".join(f"{c}_{i:03d}.jpg\n" for c in ("airplane", "beach", "sea_ice") for i in idx))
        return str(out)

    def snapshot_download(repo_id, local_dir=None, allow_patterns=None, **kw):
        log.snapshots.append((repo_id, local_dir, tuple(allow_patterns or ())))
        Path(local_dir).mkdir(parents=True, exist_ok=True)
        (Path(local_dir) / "config.json").write_text("{}")
        return local_dir

    def download_pretrained(cfg, cache_dir=None, **kw):
        log.open_clip.append((cfg.get("hf_hub") or cfg.get("url"), cache_dir))
        out = Path(cache_dir) / "open_clip_model.safetensors"
        out.write_bytes(b"weights")
        return str(out)

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", hf_hub_download)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    monkeypatch.setattr(open_clip, "download_pretrained", download_pretrained)
    _FakeVision.log = log.torchvision
    for name in ("MNIST", "SVHN", "GTSRB", "DTD", "EuroSAT", "SUN397", "StanfordCars", "ImageNet"):
        monkeypatch.setattr(tvd, name, type(name, (_FakeVision,), {}))
    return log
