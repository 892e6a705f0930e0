"""`repro run p2_task_arithmetic --profile paper` wiring, with the hub mocked at its boundary.

The notebook's own parameter and set-up cells are executed in-process for ``profile="paper"`` and each model
family, with ``open_clip.create_model_and_transforms``, ``transformers`` ``from_pretrained``, the
``torchvision.datasets`` classes and ``datasets.load_dataset`` replaced by fakes that record what was asked
for and hand back tiny random-init models and tiny datasets.  Checked: CLIP ViT-B/32 with OpenAI weights (vision) /
google-t5 (nlp) is built, every dataset is asked for by the spec's name, and the model, θ_pre and the loaded task
vectors sit on the device ``repro.device`` resolves for the paper profile ("auto": cuda when available).
"""

from __future__ import annotations

import types

import pytest
import torch

from repro.profiles import NLP_TASKS, VISION_TASKS, get_profile

N_PER_SPLIT = 12


class _FakeVisionDataset:
    """A torchvision-style dataset: ``classes``, ``targets`` and PIL images from ``__getitem__``."""

    calls: list[tuple[str, tuple, dict]] = []
    n_classes = 3

    def __init__(self, root, *args, **kwargs) -> None:
        type(self).calls.append((type(self).__name__, args, kwargs))
        self.classes = [f"class {i}" for i in range(self.n_classes)]
        self.targets = [i % self.n_classes for i in range(N_PER_SPLIT)]

    def __len__(self) -> int:
        return len(self.targets)

    def __getitem__(self, i):
        from PIL import Image

        return Image.new("RGB", (8, 8), color=(20 * i % 255, 0, 0)), self.targets[i]


def _fake_vision_classes():
    return {name: type(name, (_FakeVisionDataset,), {}) for name in
            ("MNIST", "SVHN", "GTSRB", "DTD", "EuroSAT", "SUN397", "StanfordCars", "ImageNet")}


class _FakeHFDataset(list):
    def __init__(self, rows, column_names):
        super().__init__(rows)
        self.column_names = column_names


def _nlp_rows(path, config):
    rows = []
    for i in range(40):  # the T5 code's held-out split: 32 validation examples, the rest test
        if path == "qasc":
            rows.append({"question": f"q{i}", "choices": {"text": list("abcdefgh"), "label": list("ABCDEFGH")},
                         "answerKey": "ABCDEFGH"[i % 8]})
        elif path == "quartz":
            rows.append({"question": f"q{i}", "para": "p", "choices": {"text": ["x", "y"], "label": ["A", "B"]},
                         "answerKey": "AB"[i % 2]})
        elif path == "wiki_qa":
            rows.append({"question": f"q{i}", "answer": "a", "label": i % 2})
        elif path == "paws":
            rows.append({"sentence1": "s", "sentence2": "t", "label": i % 2})
        elif path == "story_cloze":
            rows.append({**{f"input_sentence_{k}": "s" for k in range(1, 5)}, "sentence_quiz1": "a",
                         "sentence_quiz2": "b", "answer_right_ending": 1 + i % 2})
        elif path == "winogrande":
            rows.append({"sentence": "_ is", "option1": "a", "option2": "b", "answer": str(1 + i % 2)})
        elif (path, config) == ("super_glue", "wsc.fixed"):
            rows.append({"text": "t", "span1_text": "a", "span2_text": "it", "label": i % 2})
        elif (path, config) == ("super_glue", "rte"):
            rows.append({"premise": "p", "hypothesis": "h", "label": i % 2})
        else:
            raise AssertionError(f"unexpected dataset {path}/{config}")
    return rows


@pytest.fixture
def hub(monkeypatch, tmp_path):
    """Replace every hub entry point; returns the log of what was requested."""
    import open_clip
    import open_clip.zero_shot_metadata
    import torchvision.datasets as tvd
    import transformers

    import datasets
    from repro.models.clip import build_tiny_clip
    from repro.models.t5 import build_tiny_t5

    log: dict[str, list] = {"open_clip": [], "hf_models": [], "hf_datasets": [], "torchvision": []}
    for sub in ("SUN397", "stanford_cars", "imagenet"):
        (tmp_path / sub).mkdir()
    monkeypatch.setenv("REPRO_VISION_ROOT", str(tmp_path))
    monkeypatch.setenv("REPRO_STORY_CLOZE_DIR", str(tmp_path))
    _FakeVisionDataset.calls = []
    for name, cls in _fake_vision_classes().items():
        monkeypatch.setattr(tvd, name, cls)

    def create_model_and_transforms(arch, pretrained=None, **kw):
        log["open_clip"].append((arch, pretrained))
        tiny = build_tiny_clip(seed=0)
        return tiny.backbone, tiny.train_preprocess, tiny.preprocess

    monkeypatch.setattr(open_clip, "create_model_and_transforms", create_model_and_transforms)
    # the fake ImageNet has 3 classes (the real 1000 × 80 templates would embed 80k prompts on the CPU)
    monkeypatch.setattr(open_clip.zero_shot_metadata, "IMAGENET_CLASSNAMES", ("tench", "goldfish", "shark"))
    tiny_t5 = build_tiny_t5(seed=0, max_length=64)

    def tok_from_pretrained(name, *a, **kw):
        log["hf_models"].append(("tokenizer", name))
        return tiny_t5.tokenizer

    def t5_from_pretrained(name, *a, **kw):
        log["hf_models"].append(("model", name))
        return build_tiny_t5(seed=0, max_length=64).backbone

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", tok_from_pretrained)
    monkeypatch.setattr(transformers.T5ForConditionalGeneration, "from_pretrained", t5_from_pretrained)

    def load_dataset(path, config=None, split=None, **kw):
        log["hf_datasets"].append((path, config, split))
        if path == "torchgeo/resisc45":
            feats = {"label": types.SimpleNamespace(names=["a_b", "c", "d"])}
            from PIL import Image

            ds = _FakeResisc([{"image": Image.new("RGB", (8, 8)), "label": i % 3} for i in range(N_PER_SPLIT)],
                             feats)
            return {"train": ds, "validation": ds, "test": ds}
        rows = _nlp_rows(path, config)
        return _FakeHFDataset(rows, list(rows[0]))

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    yield log
    log["torchvision"] = list(_FakeVisionDataset.calls)


class _FakeResisc(list):
    def __init__(self, rows, features):
        super().__init__(rows)
        self.features = features
        self.column_names = ["image", "label"]

    def __getitem__(self, key):
        if isinstance(key, str):
            return [r[key] for r in self]
        return list.__getitem__(self, key)


def _setup_cells(notebook: str, n: int = 2) -> list[str]:
    """The notebook's first ``n`` code cells (parameters, then its set-up)."""
    import jupytext

    from repro.paths import project_root

    nb = jupytext.read(project_root() / "notebooks" / f"{notebook}.md")
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    return code[:n]


@pytest.mark.parametrize("family", ["vision", "nlp"])
def test_p2_task_arithmetic_paper_builds_the_family_model_on_hub_data(hub, family, tmp_path, monkeypatch):
    from repro.device import resolve_device

    monkeypatch.setenv("REPRO_ARTIFACTS", str(tmp_path / "artifacts"))
    ns: dict = {}
    from repro.p2.arithmetic_seeds import seed_protocol

    params, imports, setup = _setup_cells("p2_task_arithmetic", 3)
    exec(params, ns)  # noqa: S102 - the notebook's own code
    ns.update(profile="paper", model_family=family, output_dir=str(tmp_path))
    exec(imports, ns)  # noqa: S102
    exec(setup, ns)  # noqa: S102
    prof = ns["PROFILE"]  # the first seed's workbench and evaluation sets, as run_seeds builds them
    wb, ns["ev"] = seed_protocol(prof, ns["TASKS"], ns["CONTROL"], ns["SETTINGS"], ns["SEEDS"][0])
    assert prof.device == "auto" and wb.device == resolve_device("auto")
    assert {p.device.type for p in wb.model.parameters()} == {wb.device.type}
    assert {t.device.type for t in wb.pre.values()} == {wb.device.type}
    if family == "vision":
        assert type(wb.model).__name__ == "CLIPImageClassifier"
        assert hub["open_clip"] == [("ViT-B-32", "openai")]
        assert ns["TASKS"] == list(VISION_TASKS) and ns["CONTROL"] == "ImageNet"
        asked = {name for name, _, _ in _FakeVisionDataset.calls}
        assert asked == {"MNIST", "SVHN", "GTSRB", "DTD", "EuroSAT", "SUN397", "StanfordCars", "ImageNet"}
        assert ("torchgeo/resisc45", None, None) in hub["hf_datasets"]
        assert ns["paper_model"] == "ViT-B/32" and prof.talos.target == "logit"
    else:
        assert type(wb.model).__name__ == "T5RankClassifier"
        assert ("model", "google-t5/t5-small") in hub["hf_models"]
        assert ns["TASKS"] == list(NLP_TASKS) and ns["CONTROL"] == "rte"
        names = {(p, c) for p, c, _ in hub["hf_datasets"]}
        assert names == {("qasc", None), ("wiki_qa", None), ("quartz", None), ("paws", "labeled_final"),
                         ("story_cloze", "2016"), ("winogrande", "winogrande_xl"), ("super_glue", "wsc.fixed"),
                         ("super_glue", "rte")}
        assert ns["paper_model"] == "T5-Small" and prof.talos.target == "sequence-loglik"
    # every task (and the control) has a head and validation / test examples
    for t in ns["TASKS"] + [ns["CONTROL"]]:
        assert wb.model.has_task(t) and ns["ev"].sets[t]["test"]
    # one fine-tuning step on the first task lands its task vector on the workbench device
    tau = wb.finetune(ns["TASKS"][0], prof.p2_finetune.__class__(optimizer="adamw", lr=1e-3, batch_size=2,
                                                                  steps=1, eval_every=0), trainable="maskable")
    assert tau and {t.device.type for t in tau.values()} == {wb.device.type}


def test_cli_run_paper_passes_family_and_device(monkeypatch):
    from repro.runner import cli, execute

    seen = {}
    monkeypatch.setattr(execute, "run_notebook", lambda name, **kw: seen.update(kw, name=name) or _Done())
    assert cli.main(["run", "p2_task_arithmetic", "--profile", "paper", "-p", "model_family", "nlp"]) == 0
    assert seen["profile"] == "paper" and seen["params"]["model_family"] == "nlp"
    assert get_profile("paper").for_p2(seen["params"]["model_family"]).model == "t5-small"


class _Done:
    notebook, status, seconds, executed, results = "x", "ok", 0.0, "x", "x"
