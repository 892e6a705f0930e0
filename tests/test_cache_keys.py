"""Golden artifact cache keys: refactors must not silently change what a cached artifact is keyed by.

Each entry pins ``config_hash`` of the config one cached computation builds on the smoke workbench. If a key
builder changes on purpose, every user's cpu artifact store retrains that kind: update the hash here in the same
commit and say so in its message.
"""

from __future__ import annotations

import pytest
import torch

from repro.artifacts import ArtifactStore

GOLDEN = {
    "finetune": ("taskvec", "96ca1577f4ad6a82"),
    "graft": ("graft", "6956f08718d7778a"),
    "talos_mask": ("mask", "7c7d6733650d72b2"),
    "lora_run": ("taskvec", "f1d809887283a756"),
    "low_sensitivity_mask": ("mask", "c89fc08803adfa62"),
}


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    """Run each cached computation once on the smoke workbench and record the first key it asks the store for."""
    from repro.workbench import Workbench
    from repro.p1.peft_baselines import lora_run
    from repro.p2.methods import talos_mask
    from repro.p2.sensitivity import low_sensitivity_mask

    seen: list[tuple[str, str]] = []
    original = ArtifactStore.path

    def recording(self, kind, config):
        p = original(self, kind, config)
        seen.append((kind, p.name))
        return p

    wb = Workbench("smoke", artifacts_dir=tmp_path_factory.mktemp("artifacts"))
    out = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ArtifactStore, "path", recording)
        calls = {
            "finetune": lambda: wb.finetune("SST-2"),
            "graft": lambda: wb.graft("SST-2", {n: torch.full_like(t, 1e-3) for n, t in wb.pre.items()}, 1e-2,
                                      steps=1),
            "talos_mask": lambda: talos_mask(wb, "SST-2"),
            "lora_run": lambda: lora_run(wb, "SST-2", 2, wb.profile.p1_finetune),
            "low_sensitivity_mask": lambda: low_sensitivity_mask(wb, "SST-2", 8),
        }
        for name, call in calls.items():
            seen.clear()
            call()
            out[name] = seen[0]
    return out


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_cache_key_is_pinned(keys, name):
    assert keys[name] == GOLDEN[name], f"{name}: artifact key changed to {keys[name]} (pinned {GOLDEN[name]})"


def test_data_key_is_the_inline_fields_it_replaced(tmp_path):
    """``Workbench.data_key`` gives exactly the fields the keys wrote inline before it (so no key value moved)."""
    from repro.workbench import Workbench

    wb = Workbench("smoke", artifacts_dir=tmp_path)
    p = wb.profile
    assert wb.data_key() == {"model": p.model, "max_length": p.max_length, "data": wb.data_tag}
    assert wb.data_key(max_length=False) == {"model": p.model, "data": wb.data_tag}  # P2 arithmetic sweeps
    assert wb.data_key(model=False, max_length=False) == {"data": wb.data_tag}  # P1 joint graft
