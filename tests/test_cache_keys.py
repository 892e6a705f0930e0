"""Golden artifact cache keys: refactors must not silently change what a cached artifact is keyed by.

Each entry pins ``config_hash`` of the config one cached computation builds on the smoke workbench. If a key
builder changes on purpose, every user's cpu artifact store retrains that kind: update the hash here in the same
commit and say so in its message.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from repro.artifacts import ArtifactStore

# Key scheme 2 (issue 25): every key below changed once, on purpose.  The graft key holds tensor_digest(Δ), which
# now hashes Δ's whole content, dtype and shape (the old digest read only the first 4096 bytes and sum |t|, so two
# vectors differing past the prefix collided); every key holds the data tag, which now names the data's content
# (generated: the source and its data seed; a --data folder: the digest of its files, no longer its path).
GOLDEN = {
    "finetune": ("taskvec", "18974ee99fce9a10"),
    "graft": ("graft", "1e44cf381b82a341"),
    "talos_mask": ("mask", "9a35d93d98520d44"),
    "lora_run": ("taskvec", "3bc2603a1b5d9468"),
    "low_sensitivity_mask": ("mask", "e47e64b340c096b4"),
}


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    """Run each cached computation once on the smoke workbench and record the first key it asks the store for."""
    from repro.workbench import Workbench
    from repro.p1.peft_baselines import lora_run
    from repro.p2.methods import talos_mask
    from repro.p2.sensitivity.runs import low_sensitivity_mask

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
                                      recipe=replace(wb.profile.graft, steps=1)),
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
