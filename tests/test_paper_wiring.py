"""`repro fetch` then `repro run p2_task_arithmetic --profile paper`, with the hub mocked at its boundary.

``repro fetch --profile paper --family <family>`` runs against the fakes of ``tests/hub_fakes.py`` (in-memory
``datasets``, ``torchvision.datasets`` classes, ``huggingface_hub`` and ``open_clip`` downloads) into temporary
data and models folders.  The notebook's own parameter and set-up cells are then executed in-process for
``profile="paper"`` and each model family, with ``open_clip.create_model_and_transforms`` and ``transformers``
``from_pretrained`` replaced by fakes that record what was asked for and hand back tiny random-init models.
Checked: CLIP ViT-B/32 with OpenAI weights (vision) / t5-small (nlp) is built from the fetched models folder, every
dataset was fetched from the spec's source, the run itself asks the hub nothing, and the model, θ_pre and the
loaded task vectors sit on the device ``repro.device`` resolves for the paper profile ("auto": cuda when available).
"""

from __future__ import annotations

import pytest
import torch
from hub_fakes import fake_hub  # noqa: F401 - the fixture

from repro.profiles import NLP_TASKS, VISION_TASKS, get_profile


@pytest.fixture
def hub(fake_hub, monkeypatch, tmp_path):  # noqa: F811
    """Fetch with the hub mocked, then replace the model loaders; returns the fetch log and what runs asked for."""
    import huggingface_hub.constants as hc
    import open_clip
    import open_clip.zero_shot_metadata
    import transformers

    from repro.models.clip import build_tiny_clip
    from repro.models.t5 import build_tiny_t5

    monkeypatch.setenv("REPRO_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("REPRO_MODELS", str(tmp_path / "models"))
    monkeypatch.setattr(hc, "HF_HUB_OFFLINE", hc.HF_HUB_OFFLINE)
    for key in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(key, raising=False)
    runs: dict[str, list] = {"open_clip": [], "hf_models": []}

    def create_model_and_transforms(arch, pretrained=None, cache_dir=None, **kw):
        runs["open_clip"].append((arch, pretrained, cache_dir))
        tiny = build_tiny_clip(seed=0)
        return tiny.backbone, tiny.train_preprocess, tiny.preprocess

    monkeypatch.setattr(open_clip, "create_model_and_transforms", create_model_and_transforms)
    # the fake ImageNet has 3 classes (the real 1000 × 80 templates would embed 80k prompts on the CPU)
    monkeypatch.setattr(open_clip.zero_shot_metadata, "IMAGENET_CLASSNAMES", ("tench", "goldfish", "shark"))
    tiny_t5 = build_tiny_t5(seed=0, max_length=64)

    def tok_from_pretrained(name, *a, **kw):
        runs["hf_models"].append(("tokenizer", name))
        return tiny_t5.tokenizer

    def t5_from_pretrained(name, *a, **kw):
        runs["hf_models"].append(("model", name))
        return build_tiny_t5(seed=0, max_length=64).backbone

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", tok_from_pretrained)
    monkeypatch.setattr(transformers.T5ForConditionalGeneration, "from_pretrained", t5_from_pretrained)
    return fake_hub, runs, tmp_path


def _setup_cells(notebook: str, n: int = 2) -> list[str]:
    """The notebook's first ``n`` code cells (parameters, then its set-up)."""
    import jupytext

    from repro.paths import project_root

    nb = jupytext.read(project_root() / "notebooks" / f"{notebook}.md")
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    return code[:n]


@pytest.mark.parametrize("family", ["vision", "nlp"])
def test_p2_task_arithmetic_paper_builds_the_family_model_on_fetched_data(hub, family, monkeypatch):
    from repro.fetch import fetch
    from repro.device import resolve_device

    fake, runs, tmp_path = hub
    fetch("paper", family, story_cloze=fake.story_cloze, vision_sources=fake.sources, log=lambda _: None)
    fetched = fake.count()
    monkeypatch.setenv("REPRO_ARTIFACTS", str(tmp_path / "artifacts"))
    ns: dict = {}
    from repro.p2.evaluator import Evaluator
    from repro.workbench import Workbench

    params, imports, setup = _setup_cells("p2_task_arithmetic", 3)
    exec(params, ns)  # noqa: S102 - the notebook's own code
    ns.update(profile="paper", model_family=family, output_dir=str(tmp_path))
    exec(imports, ns)  # noqa: S102
    exec(setup, ns)  # noqa: S102
    prof = ns["PROFILE"]  # the first seed's workbench and evaluation sets, as the notebook's first seed has them
    wb = Workbench(prof, seed=ns["SEEDS"][0])
    ns["ev"] = Evaluator(wb, ns["TASKS"], ns["CONTROL"], ns["SETTINGS"]["n_val"], ns["SETTINGS"]["n_test"],
                         seed=ns["SEEDS"][0])
    assert fake.count() == fetched  # the run read fetched files only
    assert prof.device == "auto" and wb.device == resolve_device("auto")
    assert {p.device.type for p in wb.model.parameters()} == {wb.device.type}
    assert {t.device.type for t in wb.pre.values()} == {wb.device.type}
    models = tmp_path / "models"
    if family == "vision":
        assert type(wb.model).__name__ == "CLIPImageClassifier"
        assert runs["open_clip"] == [("ViT-B-32", "openai", str(models / "clip-vit-b32"))]
        assert ns["TASKS"] == list(VISION_TASKS) and ns["CONTROL"] == "ImageNet"
        asked = {name for name, _, _ in fake.torchvision}
        assert asked == {"MNIST", "SVHN", "GTSRB", "DTD", "EuroSAT", "SUN397", "StanfordCars", "ImageNet"}
        assert {f for _, f, _ in fake.files} == {"NWPU-RESISC45.zip", "resisc45-train.txt", "resisc45-val.txt",
                                                 "resisc45-test.txt"}
        assert ns["paper_model"] == "ViT-B/32" and prof.talos.target == "logit"
    else:
        assert type(wb.model).__name__ == "T5RankClassifier"
        assert ("model", str(models / "t5-small")) in runs["hf_models"]
        assert ns["TASKS"] == list(NLP_TASKS) and ns["CONTROL"] == "rte"
        names = {(p, c) for p, c, _, _, _ in fake.datasets}
        assert names == {("allenai/qasc", None), ("microsoft/wiki_qa", None), ("allenai/quartz", None),
                         ("google-research-datasets/paws", "labeled_final"), ("allenai/winogrande", "winogrande_xl"),
                         ("aps/super_glue", "wsc.fixed"), ("aps/super_glue", "rte")}  # StoryCloze: the CSV files
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
