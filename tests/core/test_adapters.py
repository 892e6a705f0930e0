"""LoRA folded into a task vector reproduces the LoRA model; adapters train and leave no trace."""

from __future__ import annotations

import pytest
import torch

from repro.core.adapters import adapter_finetune, adapter_sites, bottleneck_adapters, lora_finetune
from repro.core.evaluation import predict
from repro.profiles import FinetuneRecipe

RECIPE = FinetuneRecipe(optimizer="adamw", lr=1e-2, batch_size=4, steps=5, weight_decay=0.0, eval_every=0)


def test_lora_task_vector_matches_lora_model(tiny_model, sent_examples):
    before = {n: p.detach().clone() for n, p in tiny_model.named_parameters()}
    tau, res = lora_finetune(tiny_model, {"sent": sent_examples}, RECIPE, rank=2, alpha=4, progress=False)
    assert res.trainable_count > 0 and tau
    assert all(".query." in n or ".value." in n for n in tau)
    # the model is untouched
    after = dict(tiny_model.named_parameters())
    assert set(after) == set(before) and all(torch.equal(after[n], before[n]) for n in before)
    # applying τ changes predictions (B was trained away from zero)
    own = {n: before[n] + v for n, v in tau.items()}
    assert any(float(v.abs().max()) > 0 for v in tau.values())
    a = predict(tiny_model, sent_examples, "sent").logits
    b = predict(tiny_model, sent_examples, "sent", overrides=own).logits
    assert not torch.equal(a, b)


def test_adapters_train_and_are_removed(tiny_model, sent_examples):
    assert len(adapter_sites(tiny_model, "houlsby")) == 2 * len(adapter_sites(tiny_model, "pfeiffer"))
    base = predict(tiny_model, sent_examples, "sent").logits
    with bottleneck_adapters(tiny_model, "pfeiffer", 4) as names:
        same = predict(tiny_model, sent_examples, "sent").logits
        assert torch.allclose(base, same, atol=1e-6)  # zero-init up-projection = identity
        adapter_finetune(tiny_model, {"sent": sent_examples}, RECIPE, names, progress=False)
        moved = predict(tiny_model, sent_examples, "sent").logits
        assert not torch.allclose(base, moved)
    assert not hasattr(tiny_model, "adapters")
    assert torch.equal(predict(tiny_model, sent_examples, "sent").logits, base)


# --- L-LoRA (P2 baseline) as the official code builds it (issue 22 S6) ---------------------------------------------
DECAY = FinetuneRecipe(optimizer="adamw", lr=1e-2, batch_size=4, steps=6, weight_decay=0.1, eval_every=0)


def test_llora_with_weight_decay_evaluates_exactly_the_trained_model(tiny_model, sent_examples, monkeypatch):
    """Independent check: the model the training loop ends with (adapters in) and the model evaluated from the folded
    τ (θ_0 + τ, adapters out) give the same logits, with AdamW weight decay on; A never moves."""
    from repro.core import adapters

    seen = {}
    real_train = adapters.train

    def spying_train(model, data, recipe, trainable, **kw):
        params = dict(model.named_parameters())
        a0 = {n: p.detach().clone() for n, p in params.items() if ".lora_A" in n}
        seen["trainable"] = list(trainable)
        res = real_train(model, data, recipe, trainable, **kw)
        seen["a_moved"] = max(float((params[n] - a0[n]).abs().max()) for n in a0)
        seen["trained_logits"] = predict(model, sent_examples, "sent").logits
        return res

    monkeypatch.setattr(adapters, "train", spying_train)
    before = {n: p.detach().clone() for n, p in tiny_model.named_parameters()}
    tau, _ = lora_finetune(tiny_model, {"sent": sent_examples}, DECAY, rank=2, alpha=4, linearized=True,
                           progress=False)
    assert seen["trainable"] and all(".lora_B" in n for n in seen["trainable"])  # A gets no gradient: not trained
    assert seen["a_moved"] == 0.0  # no weight decay on a factor without gradient
    evaluated = predict(tiny_model, sent_examples, "sent", overrides={n: before[n] + v for n, v in tau.items()}).logits
    assert not torch.allclose(evaluated, predict(tiny_model, sent_examples, "sent").logits)  # it did train
    assert torch.allclose(seen["trained_logits"], evaluated, atol=1e-5)


def test_branch_linearization_is_b_times_a0():
    """The official L-LoRA linearizes each branch s·B·A around (A_0, B_0 = 0): its first-order output is s·B·A_0,
    whatever A became, which is why only B trains (torch.func.jvp as the official LinearizedModel)."""
    from torch.func import functional_call, jvp

    from repro.core.adapters import LORA_STYLES, PackedQVLoRA

    torch.manual_seed(0)
    lora = PackedQVLoRA(8, 2, 32.0, LORA_STYLES["official-vision"])
    p0 = {n: p.detach().clone() for n, p in lora.named_parameters()}
    p1 = {n: p0[n] + 0.1 * torch.randn_like(p0[n]) for n in p0}  # A and B both moved
    zero = torch.zeros(24, 8)
    f = lambda params: functional_call(lora, params, (zero,))  # noqa: E731  (the branch: ΔW = s·[B_q A_q; 0; B_v A_v])
    base, tangent = jvp(f, (p0,), ({n: p1[n] - p0[n] for n in p0},))
    with_a0 = f({**p1, "lora_A_q": p0["lora_A_q"], "lora_A_v": p0["lora_A_v"]})
    assert torch.equal(base, torch.zeros_like(base)) and torch.allclose(base + tangent, with_a0, atol=1e-6)


def test_lora_styles_scale_and_init():
    """Official vision: s = α, A = xavier_uniform / √r; peft (NLP code, plain LoRA): s = α / r, kaiming A."""
    from repro.core.adapters import LORA_STYLES, LoraStyle, PackedQVLoRA

    d, r, alpha = 64, 16, 32.0
    vis, peft = (PackedQVLoRA(d, r, alpha, LORA_STYLES[k]) for k in ("official-vision", "peft"))
    assert vis.scale == alpha and peft.scale == alpha / r  # the official vision update is r = 16 x ours before
    assert float(vis.lora_A_q.abs().max()) <= (6 / (r + d)) ** 0.5 / r ** 0.5 + 1e-7
    assert float(peft.lora_A_q.abs().max()) <= 1 / d ** 0.5 + 1e-7
    assert all(float(b.abs().max()) == 0 for b in (vis.lora_B_q, vis.lora_B_v, peft.lora_B_q, peft.lora_B_v))
    with pytest.raises(ValueError, match="choose 'alpha' or 'alpha/r'"):
        LoraStyle(scale="alpha*r")


def test_peft_lora_official_vision_style_scales_by_alpha(tiny_model):
    """The peft path (BERT / T5) honours a style too: s = α means peft scaling α (lora_alpha = α·r)."""
    from repro.core.adapters import _lora_modules, inject_lora

    names, fold, remove = inject_lora(tiny_model, 2, 4.0, style="official-vision")
    try:
        mods = list(_lora_modules(tiny_model).values())
        assert mods and all(m.scaling["default"] == 4.0 for m in mods)
    finally:
        remove()
    names, fold, remove = inject_lora(tiny_model, 2, 4.0)
    try:
        assert all(m.scaling["default"] == 2.0 for m in _lora_modules(tiny_model).values())
    finally:
        remove()
