"""repro.device: one place decides the device; profiles, --device and notebook parameters override it."""

from __future__ import annotations

import warnings

import numpy as np

import pytest
import torch

from repro import device as dev
from repro.profiles import get_profile


def test_resolve_device_auto_follows_cuda_availability(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert dev.resolve_device("auto") == torch.device("cpu")
    assert dev.resolve_device(None) == torch.device("cpu")
    with pytest.raises(RuntimeError, match="no CUDA GPU"):
        dev.resolve_device("cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert dev.resolve_device("auto") == torch.device("cuda")
    assert dev.resolve_device("cuda:1") == torch.device("cuda:1")
    assert dev.resolve_device("cpu") == torch.device("cpu")
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        dev.resolve_device("tpu")


def test_profile_defaults_and_overrides():
    assert get_profile("paper").device == "auto" and get_profile("paper-smoke").device == "auto"
    assert get_profile("cpu").device == "cpu" and get_profile("smoke").device == "cpu"
    assert get_profile("cpu").with_device("cuda").device == "cuda"  # the cpu profile runs on a GPU when asked
    assert get_profile("cpu").with_device(None).device == "cpu"
    assert get_profile("paper").for_p2("nlp", device="cpu").device == "cpu"


def test_precision_applies_on_cuda_only():
    assert dev.precision_used("bf16", "cpu") == "fp32"
    assert dev.precision_used("bf16", "cuda") == "bf16"
    with pytest.raises(ValueError, match="unknown precision"):
        dev.precision_used("fp8", "cpu")
    m = torch.nn.Linear(2, 2)
    m.precision = "bf16"
    with warnings.catch_warnings():  # "CUDA is not available ... Disabling autocast" on CPU-only machines
        warnings.simplefilter("ignore")
        assert isinstance(dev.autocast(m), torch.autocast)
    m.precision = "fp32"
    assert not isinstance(dev.autocast(m), torch.autocast)


def test_workbench_puts_model_theta_pre_and_task_vectors_on_its_device(tmp_path):
    from repro.workbench import Workbench

    wb = Workbench(get_profile("smoke").with_device("cpu"), artifacts_dir=tmp_path)
    assert wb.device == torch.device("cpu") and wb.precision == "fp32"
    assert {p.device for p in wb.model.parameters()} == {wb.device}
    assert {t.device for t in wb.pre.values()} == {wb.device}
    tau = wb.finetune("SST-2")  # trained, then read back from the store
    assert tau and {t.device for t in tau.values()} == {wb.device}


def test_results_meta_records_device_versions_models_and_commit(tmp_path):
    from repro.models.build import build_model
    from repro.report.results import Results

    dev.configure(build_model(get_profile("smoke")), torch.device("cpu"))
    res = Results("p2_task_arithmetic", "smoke")
    res.add_table("p2-table1", [{"task": "x", "method": "m", "sparsity": None, "metric": "acc", "value": 1.0,
                                 "std": None, "paper": None}])
    meta = res.to_dict()["meta"]
    assert meta["device"] == "cpu" and meta["precision"] == "fp32"
    assert meta["versions"]["torch"] == torch.__version__ and meta["versions"]["transformers"]
    assert any(m.startswith("SentenceEmbeddingClassifier") for m in meta["models"])
    assert "git_commit" in meta


class _Done:
    notebook, status, seconds, executed, results = "x", "ok", 0.0, "x", "x"


# --- S4: precision per phase, the --precision switch, the results meta --------------------------------------
def _dtype_spy(model):
    """Output dtypes of the first Linear layer, recorded by a forward hook."""
    seen: list[torch.dtype] = []
    layer = next(m for m in model.modules() if isinstance(m, torch.nn.Linear))
    return seen, layer.register_forward_hook(lambda mod, inp, out: seen.append(out.dtype))


@pytest.mark.parametrize("linearized", [False, True])
def test_precision_reaches_the_training_and_evaluation_autocast(tiny_model, sent_examples, linearized):
    from repro.core.evaluation import predict
    from repro.core.finetune import train
    from repro.profiles import FinetuneRecipe

    tiny_model.precision, tiny_model.eval_precision = "bf16", "fp32"  # by hand: honoured on the CPU too
    seen, hook = _dtype_spy(tiny_model)
    recipe = FinetuneRecipe(optimizer="adamw", lr=1e-3, batch_size=4, steps=2, eval_every=0)
    res = train(tiny_model, {"sent": sent_examples}, recipe, tiny_model.graftable_names(), progress=False,
                linearized=linearized)
    assert seen and set(seen) == {torch.bfloat16} and all(np.isfinite(r["loss"]) for r in res.history)
    seen.clear()
    predict(tiny_model, sent_examples, "sent", batch_size=8)
    assert seen and set(seen) == {torch.float32}  # evaluation runs at its own precision
    seen.clear()
    tiny_model.eval_precision = "bf16"
    predict(tiny_model, sent_examples, "sent", batch_size=8)
    assert set(seen) == {torch.bfloat16}
    tiny_model.precision = tiny_model.eval_precision = "fp32"
    seen.clear()
    train(tiny_model, {"sent": sent_examples}, recipe, tiny_model.graftable_names(), progress=False)
    assert set(seen) == {torch.float32}
    hook.remove()
    with pytest.raises(ValueError, match="unknown precision phase"):
        dev.autocast(tiny_model, "calibrate")


def test_configure_records_both_phases_in_the_results_meta(monkeypatch):
    from repro.models.build import build_model
    from repro.report.results import Results

    model = build_model(get_profile("smoke"))
    assert dev.configure(model, torch.device("cpu"), "bf16", "fp32") == "fp32"  # a profile's bf16: CUDA only
    assert model.precision == "fp32" and model.eval_precision == "fp32" and model.loader_workers == 0
    monkeypatch.setattr(dev, "precision_used", lambda precision, device: precision)  # as on a GPU
    assert dev.configure(model, torch.device("cpu"), "bf16", "fp32", workers=3) == "bf16"
    assert (model.precision, model.eval_precision, model.loader_workers) == ("bf16", "fp32", 3)
    res = Results("p2_task_arithmetic", "smoke")
    res.add_table("p2-table1", [{"task": "x", "method": "m", "sparsity": None, "metric": "acc", "value": 1.0,
                                 "std": None, "paper": None}])
    meta = res.to_dict()["meta"]
    assert meta["precision"] == "bf16" and meta["eval_precision"] == "fp32"
    dev.configure(model, torch.device("cpu"), "fp32")
    meta = res.to_dict()["meta"]
    assert meta["precision"] == "fp32" and meta["eval_precision"] == "fp32"


def test_profiles_follow_the_official_precision_per_family_and_the_switch_overrides():
    paper = get_profile("paper")
    assert paper.precision == "fp32" and paper.eval_precision is None  # P1: fp32, as the official code
    vision, nlp = paper.for_p2("vision"), paper.for_p2("nlp")
    assert (vision.precision, vision.eval_precision) == ("bf16", "fp32")  # bf16 training, fp32 evaluation
    assert (nlp.precision, nlp.eval_precision) == ("bf16", None)  # T5: bf16 training and evaluation
    forced = paper.for_p2("vision", precision="fp32")
    assert (forced.precision, forced.eval_precision) == ("fp32", None)
    assert paper.with_device(None, "tf32").precision == "tf32"
    assert get_profile("gpu-check").for_p2("vision").precision == "bf16"
    for name in ("cpu", "smoke"):
        assert get_profile(name).precision == "fp32" and get_profile(name).for_p2("text").precision == "fp32"
    with pytest.raises(ValueError, match="unknown precision 'fp16'; choose one of fp32, bf16, tf32"):
        paper.with_device(None, "fp16")


@pytest.mark.parametrize("flag,run_value,book_value", [("device", "cpu", "cuda"), ("precision", "bf16", "tf32")])
def test_cli_device_and_precision_flags_become_notebook_parameters(monkeypatch, flag, run_value, book_value):
    from repro.runner import build, cli, execute
    from repro.runner.notebooks import notebook_parameters

    seen = {}
    monkeypatch.setattr(execute, "run_notebook", lambda name, **kw: seen.update(kw) or _Done())
    assert cli.main(["run", "p2_task_arithmetic", "--profile", "smoke", f"--{flag}", run_value]) == 0
    assert seen["params"][flag] == run_value
    captured = {}
    monkeypatch.setattr(build, "build_book", lambda **kw: captured.update(kw))
    assert cli.main(["book", "--profile", "smoke", f"--{flag}", book_value]) == 0
    assert captured[flag] == book_value
    for name in ("p2_task_arithmetic", "p1_localization", "p2_sensitivity"):  # declared next to each other
        assert {"device", "precision"} <= set(notebook_parameters(name))
    with pytest.raises(SystemExit):
        cli.main(["run", "p2_task_arithmetic", "--precision", "fp16"])


def test_finetune_cache_key_names_a_non_fp32_precision(tmp_path, monkeypatch):
    from repro.workbench import Workbench

    wb = Workbench(get_profile("smoke"), artifacts_dir=tmp_path)
    assert wb.precision_key() == {}
    wb.precision = "bf16"
    assert wb.precision_key() == {"precision": "bf16"}
