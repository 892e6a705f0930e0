"""S1 (issue 22): the CLIP builder gives the OpenAI weights the activation they were trained with (QuickGELU).

open_clip >= 3 builds ``ViT-B-32`` with ``nn.GELU`` and only warns ("QuickGELU mismatch") when the OpenAI weights
are loaded into it.  These tests run open_clip's real factory on a tiny random-init config (the weights download is
stubbed out), so they need no network.
"""

from __future__ import annotations

import copy
import warnings

import pytest
import torch

open_clip = pytest.importorskip("open_clip")

TINY = {"embed_dim": 32,
        "vision_cfg": {"image_size": 32, "layers": 2, "width": 32, "patch_size": 8, "head_width": 16},
        "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 2}}


@pytest.fixture
def tiny_factory(monkeypatch):
    """open_clip's factory with a tiny architecture config and no download (random init, load_weights=False)."""
    import open_clip.factory as factory

    cfg = {"value": TINY}
    monkeypatch.setattr(factory, "get_model_config", lambda name: copy.deepcopy(cfg["value"]))
    monkeypatch.setattr(factory, "download_pretrained", lambda *a, **k: "")
    return cfg


def test_paper_path_builds_quickgelu_for_openai_weights(tiny_factory):
    from repro.models.clip import build_clip, visual_activations

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not even open_clip's mismatch warning
        model = build_clip("ViT-B-32", pretrained="openai", load_weights=False)
    assert visual_activations(model.backbone) == {"QuickGELU"}
    assert {type(b.mlp.gelu).__name__ for b in model.backbone.transformer.resblocks} == {"QuickGELU"}  # text tower


def test_bare_open_clip_builds_gelu_and_only_warns(tiny_factory):
    """What the builder guards against, on the installed open_clip: the ViT-B-32 config has no quick_gelu."""
    from repro.models.clip import visual_activations

    with pytest.warns(UserWarning, match="QuickGELU mismatch"):
        model = open_clip.create_model("ViT-B-32", pretrained="openai", load_weights=False)
    assert visual_activations(model) == {"GELU"}


def test_mismatch_warning_is_an_error(tiny_factory):
    from repro.models.clip import build_clip

    tiny_factory["value"] = {**TINY, "quick_gelu": True}  # a QuickGELU config with weights trained with GELU
    with pytest.raises(RuntimeError, match="QuickGELU mismatch"):
        build_clip("ViT-B-32", pretrained="laion2b_s34b_b79k", load_weights=False)


def test_activation_must_be_known():
    from repro.models.clip import pretrained_quick_gelu

    assert pretrained_quick_gelu("ViT-B-32", "openai") is True
    assert pretrained_quick_gelu("ViT-B-32", "laion2b_s34b_b79k") is False
    with pytest.raises(ValueError, match="pass quick_gelu=True for OpenAI weights"):
        pretrained_quick_gelu("ViT-B-32", "/models/ViT-B-32.pt")  # a checkpoint file cannot say
    assert pretrained_quick_gelu("ViT-B-32", "/models/ViT-B-32.pt", quick_gelu=True) is True
    with pytest.raises(ValueError, match="trained with quick_gelu=True"):
        pretrained_quick_gelu("ViT-B-32", "openai", quick_gelu=False)


def test_tiny_and_random_init_clips_use_quickgelu(tiny_factory):
    """The CLIP stand-ins (tiny-clip; random-clip-vit-b32, here on the tiny config) are the QuickGELU network too."""
    from repro.models.build import build_model
    from repro.models.clip import build_tiny_clip, visual_activations
    from repro.profiles import get_profile

    assert visual_activations(build_tiny_clip(seed=0).backbone) == {"QuickGELU"}
    random_init = build_model(get_profile("gpu-check"), model="random-clip-vit-b32")
    assert visual_activations(random_init.backbone) == {"QuickGELU"}


def test_gelu_and_quickgelu_differ_on_the_same_weights():
    """The activation is not cosmetic: the same tiny random weights give different image features."""
    from repro.models.clip import build_tiny_clip

    a, b = build_tiny_clip(seed=0), build_tiny_clip(seed=0)
    for block in b.backbone.visual.transformer.resblocks:
        block.mlp.gelu = torch.nn.GELU()
    x = torch.randn(4, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        fa, fb = a.backbone.encode_image(x), b.backbone.encode_image(x)
    assert not torch.allclose(fa, fb, atol=1e-4)
