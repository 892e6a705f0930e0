"""Contract suite (peft's TEST_CASES idea): every registered P2 fine-tuning method (:data:`repro.p2.methods.METHODS`)
and every post-hoc merger (:data:`repro.core.merging.MERGERS`) is run through the same checks.  A new method or
merger gets every contract by being registered.  Smoke profile, one task: seconds."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest
import torch

from repro.core.merging import MERGERS
from repro.core.taskvec import TaskVector
from repro.p2.methods import METHODS, finetune_method, method_sparsity
from repro.profiles import get_profile

TASK = "SST-2"


def _store_state(root) -> dict[str, int]:
    return {os.path.join(d, f): os.stat(os.path.join(d, f)).st_mtime_ns for d, _, fs in os.walk(root) for f in fs}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Each method trained once, then called again: ``{method: (wb, first τ, second τ, store before, after)}``."""
    from repro.workbench import Workbench

    root = tmp_path_factory.mktemp("artifacts")
    wb = Workbench(get_profile("smoke", p2_tasks=(TASK,)), artifacts_dir=root)
    out = {}
    for key in METHODS:
        first = TaskVector(dict(finetune_method(wb, TASK, key)))
        before = _store_state(root)
        second = TaskVector(dict(finetune_method(wb, TASK, key)))
        out[key] = (wb, first, second, before, _store_state(root))
    return out


@pytest.mark.parametrize("key", list(METHODS))
def test_method_changes_only_maskable_tensors(runs, key):
    wb, tau, *_ = runs[key]
    maskable = set(wb.names("maskable"))
    assert tau.names and set(tau.names) <= maskable, f"{key} changed {sorted(set(tau.names) - maskable)[:3]}"
    assert tau.count_nonzero() > 0, f"{key} did not change anything"
    assert all(tau[n].shape == wb.pre[n].shape for n in tau.names)


@pytest.mark.parametrize("key", list(METHODS))
def test_second_call_loads_the_same_artifact(runs, key):
    _, first, second, before, after = runs[key]
    assert after == before, f"{key}: the second call wrote to the artifact store"
    assert first.names == second.names and all(torch.equal(first[n], second[n]) for n in first.names)


@pytest.mark.parametrize("key", [k for k, spec in METHODS.items() if spec.sparse])
def test_sparse_method_respects_its_budget(runs, key):
    wb, tau, *_ = runs[key]
    total = sum(wb.pre[n].numel() for n in wb.names("maskable"))
    budget = round((1.0 - method_sparsity(wb, key)) * total)
    assert 0 < method_sparsity(wb, key) < 1
    assert tau.count_nonzero() <= budget + 1, f"{key}: {tau.count_nonzero()} entries changed, budget {budget}"


def _vectors(seed: int) -> list[TaskVector]:
    g = torch.Generator().manual_seed(seed)
    shapes = {"layer.w": (4, 5), "layer.b": (5,), "head": (3, 4)}
    vs = [TaskVector({n: torch.randn(s, generator=g) for n, s in shapes.items()}) for _ in range(3)]
    vs[2] = TaskVector({n: t for n, t in vs[2].items() if n != "head"})  # a vector lacking a tensor
    return vs


@pytest.mark.parametrize("key", list(MERGERS))
def test_merger_keeps_names_and_shapes_and_is_deterministic(key):
    merger, vs = MERGERS[key], _vectors(0)
    out = merger.merged(vs, seed=0)
    assert set(out.names) == {"layer.w", "layer.b", "head"}
    assert out.shapes == {"layer.w": (4, 5), "layer.b": (5,), "head": (3, 4)}
    again = merger.merged(_vectors(0), seed=0)
    assert all(torch.equal(out[n], again[n]) for n in out.names)
    for i, v in enumerate(vs):
        single = merger.single(vs, i, seed=0)
        assert single.shapes == v.shapes  # the task's own tensors, thinned (never denser)
        assert all(torch.equal(single[n], merger.single(vs, i, seed=0)[n]) for n in single.names)
        assert all(single[n].count_nonzero() <= v[n].count_nonzero() for n in v.names)


@pytest.mark.parametrize("key", list(MERGERS))
def test_merger_config_names_its_hyperparameters(key):
    merger = MERGERS[key]
    config = merger.config()
    assert config["merger"] == key and merger.label
    assert replace(merger).config() == config  # a dataclass: equal fields, equal key
    assert len(config) > 1 and all(isinstance(k, str) for k in config)
