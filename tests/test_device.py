"""repro.device: one place decides the device; profiles, --device and notebook parameters override it."""

from __future__ import annotations

import warnings

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


def test_cli_device_flag_becomes_a_notebook_parameter(monkeypatch):
    from repro.runner import build, cli, execute

    seen = {}
    monkeypatch.setattr(execute, "run_notebook", lambda name, **kw: seen.update(kw) or _Done())
    assert cli.main(["run", "p2_task_arithmetic", "--profile", "smoke", "--device", "cpu"]) == 0
    assert seen["params"]["device"] == "cpu"
    captured = {}
    monkeypatch.setattr(build, "build_book", lambda **kw: captured.update(kw))
    assert cli.main(["book", "--profile", "smoke", "--device", "cuda"]) == 0
    assert captured["device"] == "cuda"


class _Done:
    notebook, status, seconds, executed, results = "x", "ok", 0.0, "x", "x"
