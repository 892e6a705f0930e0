"""Per-family baseline settings of the official code (issue 22 S6, S7): TALL λ and the L-LoRA convention."""

from __future__ import annotations

import pytest
import torch

from repro.p2 import arithmetic as ar
from repro.p2 import methods
from repro.profiles import P2Family, get_profile


@pytest.mark.parametrize("profile, family, lam, style", [
    ("paper", "vision", 0.2, "official-vision"),  # vision/eval_tallmask_*: λ = 0.2; vision/lora.py
    ("paper", "nlp", 0.6, "peft"),  # nlp/eval_tallmask_*: λ = 0.6; nlp/lora_finetune.py (peft)
    ("paper", "nlp-base", 0.6, "peft"),
    ("paper-smoke", "vision", 0.2, "official-vision"),
    ("paper-smoke", "nlp", 0.6, "peft"),
    ("smoke", "", 0.6, "peft"),  # the "text" family takes the NLP code's values
    ("cpu", "", 0.6, "peft"),
])
def test_family_settings(profile, family, lam, style):
    prof = get_profile(profile).for_p2(family) if family else get_profile(profile)
    assert methods.family_setting(prof, "tall_lambda") == lam
    assert methods.family_setting(prof, "lora_style") == style
    tall = ar.for_profile(ar.arithmetic_method("tall"), prof)
    assert tall.merger.lam == lam and tall.merger.config()["lam"] == lam  # λ enters the cache key by name
    ties = ar.arithmetic_method("ties")
    assert ar.for_profile(ties, prof) is ties  # the other methods are untouched


def test_family_fields_are_checked():
    fam = get_profile("paper").family("vision")
    with pytest.raises(ValueError, match="choose 'official-vision' or 'peft'"):
        P2Family(**{**fam.__dict__, "lora_style": "alpha"})
    with pytest.raises(ValueError, match="tall_lambda must be >= 0"):
        P2Family(**{**fam.__dict__, "tall_lambda": -0.1})


def test_vision_l_lora_on_tiny_clip_is_official_scale_and_q_v_only(tmp_path):
    """paper-smoke's vision family: L-LoRA on the tiny CLIP with the official vision style; τ lives on the Q and V
    blocks of every packed in_proj_weight (K untouched) and equals s·B·A_0 (the trained update)."""
    from repro.workbench import Workbench

    prof = get_profile("paper-smoke").for_p2("vision")
    wb = Workbench(prof, artifacts_dir=tmp_path)
    task = prof.p2_tasks[0]
    tau = methods.finetune_method(wb, task, "l-lora")
    assert tau and all(n.endswith("attn.in_proj_weight") and n.startswith("backbone.visual.") for n in tau)
    for v in tau.values():
        d = v.shape[1]
        q, k, val = v[:d], v[d:2 * d], v[2 * d:]
        assert float(k.abs().max()) == 0.0 and float(q.abs().max()) > 0 and float(val.abs().max()) > 0
    assert methods.METHODS["l-lora"].linear is False
    for n, p in wb.model.named_parameters():  # the model is left at θ_0
        if n in wb.pre:
            assert torch.equal(p, wb.pre[n])


def test_nlp_l_lora_on_tiny_t5_is_peft_style_on_q_and_v(tmp_path):
    """paper-smoke's NLP family: L-LoRA on the tiny T5 (peft, s = α/r) changes only the q and v weights."""
    from repro.workbench import Workbench

    prof = get_profile("paper-smoke").for_p2("nlp")
    wb = Workbench(prof, artifacts_dir=tmp_path)
    tau = methods.finetune_method(wb, prof.p2_tasks[0], "l-lora")
    assert tau and all(n.endswith((".q.weight", ".v.weight")) for n in tau)
    assert any(float(v.abs().max()) > 0 for v in tau.values())
