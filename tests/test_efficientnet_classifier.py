"""The vision family's classifier (repro.models.efficientnet_classifier): images in, fitted frozen heads, parameter
sets, frozen BatchNorm statistics, linearization (jvp), per-example gradients (vmap), LoRA on the 1×1 convs."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from repro.core.evaluation import forward, predict
from repro.data.tasks import ImageExample, TaskSpec
from repro.models import efficientnet_lite as E
from repro.models.efficientnet_classifier import (EfficientNetLiteClassifier, build_tiny_efficientnet_lite,
                                                  fit_linear_head, to_pixels)

torch.set_num_threads(1)

STRIPES = TaskSpec("stripes", ("horizontal", "vertical", "blank"))


def _stripes(n_per_class: int, size: int = 12, seed: int = 0) -> list[ImageExample]:
    """Our own grey images: horizontal stripes, vertical stripes, or flat, with noise (uint8)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n_per_class):
        for label in range(3):
            base = np.full((size, size), 0.5)
            if label == 0:
                base[::3, :] = 1.0
            elif label == 1:
                base[:, ::3] = 1.0
            img = np.clip(base + 0.1 * rng.standard_normal((size, size)), 0, 1)
            out.append(ImageExample((img * 255).astype(np.uint8), label))
    return out


@pytest.fixture
def tiny():
    m = build_tiny_efficientnet_lite(seed=0)
    m.add_task(STRIPES, examples=_stripes(4))
    return m


def test_images_become_normalized_three_channel_inputs():
    grey = np.zeros((8, 8), dtype=np.uint8)
    rgb = np.full((10, 6, 3), 255, dtype=np.uint8)
    assert to_pixels(grey, 16).shape == (3, 16, 16)
    torch.testing.assert_close(to_pixels(grey, 16), torch.full((3, 16, 16), -127 / 128))
    torch.testing.assert_close(to_pixels(rgb, 4), torch.full((3, 4, 4), 1.0))  # (255 - 127) / 128
    ready = torch.randn(3, 5, 5)
    assert to_pixels(ready, 16) is not None and torch.equal(to_pixels(ready, 16), ready)
    with pytest.raises(TypeError, match="uint8"):
        to_pixels(np.zeros((8, 8), dtype=np.float64), 16)


def test_fitted_head_is_frozen_and_classifies_its_examples(tiny):
    head = tiny.heads["stripes"]
    assert not head.weight.requires_grad and not head.bias.requires_grad
    rec = tiny.head_records["stripes"]
    assert rec["per_class"] == [4, 4, 4] and rec["train_accuracy"] == 1.0
    batch = tiny.collate("stripes", _stripes(2, seed=1))
    assert batch["pixel_values"].shape == (6, 3, 16, 16)
    assert tiny(batch, "stripes").shape == (6, 3)
    with pytest.raises(ValueError, match="examples"):
        tiny.add_task(TaskSpec("other", ("a", "b")))  # no examples and no head_examples source
    with pytest.raises(ValueError, match="class"):
        tiny.add_task(TaskSpec("thin", ("a", "b", "c", "d")), examples=_stripes(1))


def test_fit_linear_head_is_deterministic_and_separates():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(30, 8, generator=g) + 3 * torch.eye(8)[torch.arange(30) % 3]
    y = torch.arange(30) % 3
    w1, b1 = fit_linear_head(x, y, 3)
    w2, b2 = fit_linear_head(x, y, 3)
    assert torch.equal(w1, w2) and torch.equal(b1, b2)
    assert ((F.normalize(x, dim=-1) @ w1.T + b1).argmax(-1) == y).all()


def test_parameter_sets(tiny):
    names = [n for n, _ in tiny.named_parameters()]
    backbone = tiny.backbone_names()
    assert not any(n.startswith("heads.") for n in backbone)
    assert set(tiny.head_names("stripes")) == {"heads.stripes.weight", "heads.stripes.bias"}
    assert tiny.maskable_names() == backbone  # every conv weight and BN scale / shift
    assert set(tiny.graftable_names()) == {n for n in backbone if n.startswith("backbone._blocks.")}
    assert "backbone._conv_stem.weight" in backbone and "backbone._conv_stem.weight" not in tiny.graftable_names()
    assert tiny.bias_names(backbone) == [n for n in tiny.bn_names() if n.endswith("bias")]
    assert not any("running" in n for n in names)


def test_batchnorm_statistics_stay_frozen_in_a_training_step(tiny):
    from repro.core.finetune import train
    from repro.profiles import FinetuneRecipe

    stats = {n: b.detach().clone() for n, b in tiny.named_buffers()}
    before = {n: p.detach().clone() for n, p in tiny.named_parameters()}
    tiny.train()
    assert tiny.training and all(not m.training for m in tiny.modules() if isinstance(m, torch.nn.BatchNorm2d))
    recipe = FinetuneRecipe(optimizer="adamw", lr=1e-2, batch_size=6, steps=2, weight_decay=0.0, eval_every=0)
    train(tiny, {"stripes": _stripes(2, seed=3)}, recipe, tiny.backbone_names(), progress=False)
    for n, b in tiny.named_buffers():
        assert torch.equal(b, stats[n]), f"{n} changed in training"
    moved = [n for n in tiny.bn_names() if not torch.equal(dict(tiny.named_parameters())[n], before[n])]
    assert moved, "BatchNorm scale / shift must be trainable"
    assert torch.equal(tiny.heads["stripes"].weight, before["heads.stripes.weight"])  # the head stays frozen


def test_linearization_equals_the_model_at_zero_tangent(tiny):
    batch = tiny.collate("stripes", _stripes(2, seed=5))
    names = tiny.maskable_names()
    theta0 = {n: p.detach().clone() for n, p in tiny.named_parameters() if n in names}
    tiny.eval()
    with torch.no_grad():
        torch.testing.assert_close(forward(tiny, batch, "stripes", linear_base=theta0), tiny(batch, "stripes"))
        # a small step: the linearized model is the first-order Taylor expansion of the model
        g = torch.Generator().manual_seed(0)
        step = {n: 1e-3 * torch.randn(p.shape, generator=g) for n, p in theta0.items()}
        moved = {n: theta0[n] + step[n] for n in names}
        lin = forward(tiny, batch, "stripes", overrides=moved, linear_base=theta0)
        full = forward(tiny, batch, "stripes", overrides=moved)
        base = tiny(batch, "stripes")
    assert (lin - full).abs().max() < 0.05 * (full - base).abs().max()
    assert not torch.allclose(lin, base)


def test_per_example_gradients_with_vmap(tiny):
    from torch.func import functional_call, grad, vmap

    tiny.eval()
    batch = tiny.collate("stripes", _stripes(1, seed=6))
    theta = {n: p.detach() for n, p in tiny.named_parameters() if n in tiny.maskable_names()}

    def loss(params, one):
        b1 = {k: v[None] for k, v in one.items()}
        return F.cross_entropy(functional_call(tiny, params, (b1,), {"task": "stripes"}, strict=False), b1["labels"])

    per_ex = vmap(grad(loss), in_dims=(None, 0))(theta, batch)
    n0 = tiny.maskable_names()[0]
    one = grad(loss)(theta, {k: v[2] for k, v in batch.items()})
    torch.testing.assert_close(per_ex[n0][2], one[n0], atol=1e-5, rtol=1e-4)


def test_lora_on_the_pointwise_convolutions(tiny):
    pytest.importorskip("peft")
    from repro.core.adapters import inject_lora

    batch = tiny.collate("stripes", _stripes(1, seed=7))
    with torch.no_grad():
        before = tiny(batch, "stripes")
    names, fold, remove = inject_lora(tiny, rank=2, alpha=4.0)
    assert names and all(any(t in n for t in tiny.LORA_TARGETS) for n in names)
    with torch.no_grad():  # B = 0 at the start: the model is unchanged
        torch.testing.assert_close(tiny(batch, "stripes"), before)
        for n, p in tiny.named_parameters():
            if ".lora_B" in n:
                p.add_(0.1)
        after = tiny(batch, "stripes")
    delta = fold()
    remove()
    params = dict(tiny.named_parameters())
    assert set(delta) <= set(params) and all(delta[n].shape == params[n].shape for n in delta)
    with torch.no_grad():
        merged = forward(tiny, batch, "stripes", overrides={n: params[n] + d for n, d in delta.items()})
    torch.testing.assert_close(merged, after, atol=1e-4, rtol=1e-4)


def test_registered_in_the_builder():
    from repro.models.build import MODEL_KEYS, build_model
    from repro.profiles import get_profile

    assert {"efficientnet-lite0", "tiny-efficientnet-lite"} <= set(MODEL_KEYS)
    m = build_model(get_profile("smoke"), model="tiny-efficientnet-lite")
    assert isinstance(m, EfficientNetLiteClassifier)


def test_pretrained_classifier():
    if not E.weights_available():
        pytest.skip("the EfficientNet-Lite0 weights are not converted; run "
                    "repro.models.efficientnet_lite.fetch_weights()")
    from repro.models.efficientnet_classifier import build_efficientnet_lite0

    m = build_efficientnet_lite0(image_size=32)
    assert sum(p.numel() for p in m.parameters()) == E.BACKBONE_PARAMETERS
    state = E.EfficientNetLite().state_dict()
    want = {f"backbone.{k}" for k, v in state.items() if not k.startswith("_fc.")}
    assert {n for n, _ in m.named_parameters()} | {n for n, _ in m.named_buffers()} == want
    m.add_task(STRIPES, examples=_stripes(3, size=32))
    batch = m.collate("stripes", _stripes(1, size=32, seed=8))
    theta0 = {n: p.detach().clone() for n, p in m.named_parameters() if n in m.maskable_names()}
    with torch.no_grad():
        torch.testing.assert_close(forward(m, batch, "stripes", linear_base=theta0), m(batch, "stripes"))
    assert predict(m, _stripes(1, size=32, seed=9), "stripes").logits.shape == (3, 3)
