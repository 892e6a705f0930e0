"""The vision family's classifier: pretrained EfficientNet-Lite0 (:mod:`repro.models.efficientnet_lite`) with
frozen linear heads fitted on its frozen features.

**Images.**  Examples are :class:`~repro.data.tasks.ImageExample` ``(image, label)``; ``image`` is a uint8 array
(``[H, W]`` grey or ``[H, W, 3]`` RGB), a PIL image, or an already-preprocessed float tensor ``[3, S, S]`` (used as
it is).  :meth:`collate` turns arrays and PIL images into the network's input the same way for every task and
every method: scaled to [0, 1], grey replicated to three channels, resized to ``image_size`` × ``image_size``
(bilinear with antialiasing; the whole image, no crop), normalized (:func:`repro.models.efficientnet_lite.normalize`).
No augmentation.  Batches are built in the main process (``COLLATE_IN_WORKERS`` False: cheap at 64 px).

**Heads** (the analogue of CLIP's zero-shot heads, which need a text tower this model does not have): for each
task, a linear classifier ``W · normalize(z) + b`` on the L2-normalized pooled features ``z`` of the *pretrained*
network, fitted by full-batch L-BFGS on a multinomial logistic loss with an L2 penalty ``head_l2 · ‖W‖²``
(:func:`fit_linear_head`, deterministic), then frozen (``requires_grad=False``) for every method, as P2 freezes
its heads.  The fitting examples are passed to :meth:`add_task` (``examples=``), else asked of ``head_examples``
(task name → examples; the builder wires :func:`repro.data.packaged_images.head_examples`: a fixed few per class
from the task's *train* split, never dev / test).  ``linear_head=True`` gives P1's trainable head instead.

**BatchNorm** (the same for every method): the running statistics are the pretrained ones and never change:
every BatchNorm layer stays in eval mode, also when the classifier is put in train mode (:meth:`train`), so a
training batch is normalized with the ImageNet statistics, not its own.  The BN scale (``weight``) and shift
(``bias``) are ordinary parameters: part of the backbone, of task vectors and of the maskable set.  Eval-mode BN
also makes the forward a per-example function, which ``vmap`` (per-example Fisher) and ``torch.func.jvp``
(linearized fine-tuning) need.

**Parameter sets.**  The backbone is the body without the ImageNet ``_fc`` (4.01M parameters).  Graftable (P1's
"transformer blocks" analogue): the 16 MBConv blocks ``backbone._blocks.*`` (stem and head conv excluded).
Maskable (P2): every convolution weight (stem, expand / depthwise / project, head conv) and every BatchNorm scale
and shift, i.e. the whole backbone (there are no embeddings).  BitFit: the BN shifts (the convolutions have no
bias).  LoRA (:data:`EfficientNetLiteClassifier.LORA_TARGETS`): the 1×1 convolutions (expand, project, head),
which are linear maps per pixel; the depthwise and stem convolutions are not adapted.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from repro.data.tasks import Example, ImageExample, TaskSpec
from repro.models.base import Classifier
from repro.models import efficientnet_lite as E

#: the input size of the vision family (the issue's probe: 64 px)
DEFAULT_IMAGE_SIZE = 64
#: L2 penalty of the head fit (on ‖W‖², with unit-norm features)
HEAD_L2 = 1e-4

HeadSource = Callable[[str], Sequence[ImageExample]]


class FrozenLinearHead(nn.Module):
    """``weight · normalize(z) + bias``; frozen (the fitted head of a task), or trainable (``trainable=True``)."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor, trainable: bool = False) -> None:
        super().__init__()
        self.weight = nn.Parameter(weight.detach().clone(), requires_grad=trainable)
        self.bias = nn.Parameter(bias.detach().clone(), requires_grad=trainable)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return F.linear(F.normalize(z, dim=-1), self.weight, self.bias)


def fit_linear_head(features: torch.Tensor, labels: torch.Tensor, num_labels: int, l2: float = HEAD_L2,
                    max_iter: int = 200) -> tuple[torch.Tensor, torch.Tensor]:
    """Multinomial logistic regression on L2-normalized ``features`` ``[N, D]``: mean cross-entropy +
    ``l2 · ‖W‖²`` (the bias is not penalized), full-batch L-BFGS from zero (deterministic).  Returns (W, b)."""
    x = F.normalize(features.detach().double(), dim=-1)
    y = labels.long()
    if int(y.min()) < 0 or int(y.max()) >= num_labels:
        raise ValueError(f"labels must be in [0, {num_labels}), got [{int(y.min())}, {int(y.max())}]")
    w = torch.zeros(num_labels, x.shape[1], dtype=torch.float64, requires_grad=True)
    b = torch.zeros(num_labels, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], lr=1.0, max_iter=max_iter, tolerance_grad=1e-9, tolerance_change=1e-12,
                            history_size=20, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = F.cross_entropy(x @ w.T + b, y) + l2 * (w * w).sum()
        loss.backward()
        return loss

    with torch.enable_grad():
        opt.step(closure)
    return w.detach().float(), b.detach().float()


def to_pixels(image: Any, size: int) -> torch.Tensor:
    """One image → normalized ``[3, size, size]`` (see the module docstring); a 3-d tensor is used as it is."""
    if isinstance(image, torch.Tensor):
        if image.dim() != 3 or image.shape[0] != 3:
            raise ValueError(f"image tensors must be preprocessed [3, H, W], got shape {tuple(image.shape)}")
        return image.float()
    if callable(image):  # a lazy dataset item returning an image
        image = image()
    a = np.asarray(image)
    if a.dtype == np.uint8:
        x = torch.from_numpy(a.astype(np.float32) / 255.0)
    elif a.dtype == bool:
        x = torch.from_numpy(a.astype(np.float32))
    else:
        raise TypeError(f"images must be uint8 arrays, PIL images or preprocessed tensors; got dtype {a.dtype}")
    if x.dim() == 2:
        x = x[None].expand(3, -1, -1)
    elif x.dim() == 3 and x.shape[-1] in (3, 4):
        x = x[..., :3].permute(2, 0, 1)
    else:
        raise ValueError(f"images must be [H, W] or [H, W, 3], got shape {tuple(a.shape)}")
    if tuple(x.shape[-2:]) != (size, size):
        x = F.interpolate(x[None].contiguous(), size=(size, size), mode="bilinear", align_corners=False,
                          antialias=True)[0].clamp_(0.0, 1.0)
    return E.normalize(x)


class EfficientNetLiteClassifier(Classifier):
    """EfficientNet-Lite body → pooled features → per-task frozen linear head (see the module docstring)."""

    #: pointwise (1×1) convolutions: peft LoRA on Conv2d (a per-pixel linear map)
    LORA_TARGETS = ("_expand_conv", "_project_conv", "_conv_head")
    COLLATE_IN_WORKERS = False

    def __init__(self, backbone: E.EfficientNetLite, image_size: int = DEFAULT_IMAGE_SIZE,
                 head_examples: HeadSource | None = None, head_l2: float = HEAD_L2,
                 feature_batch_size: int = 128) -> None:
        super().__init__()
        if hasattr(backbone, "_fc"):
            raise ValueError("pass the body without the ImageNet classifier (load_pretrained(include_top=False))")
        self.backbone = backbone
        self.image_size = int(image_size)
        self.head_examples = head_examples
        self.head_l2 = float(head_l2)
        self.feature_batch_size = int(feature_batch_size)
        #: per task: how its head was fitted (examples, per-class counts, training accuracy of the head)
        self.head_records: dict[str, dict[str, Any]] = {}
        self.train(False)

    # -- BatchNorm: frozen statistics -------------------------------------------------------------------
    def train(self, mode: bool = True) -> "EfficientNetLiteClassifier":
        """Train mode for everything but BatchNorm, whose running statistics stay frozen (eval mode)."""
        super().train(mode)
        for m in self.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                m.eval()
        return self

    # -- heads ------------------------------------------------------------------------------------------
    @property
    def embed_dim(self) -> int:
        return int(self.backbone.feature_dim)

    @torch.no_grad()
    def features(self, examples: Sequence[ImageExample | Example]) -> torch.Tensor:
        """Pooled features ``[N, D]`` of the current backbone, in eval mode, in batches."""
        was = self.training
        self.train(False)
        out = []
        for i in range(0, len(examples), self.feature_batch_size):
            chunk = examples[i:i + self.feature_batch_size]
            pixels = torch.stack([to_pixels(_image(e), self.image_size) for e in chunk]).to(self.device)
            out.append(self.backbone.features(pixels).float().cpu())
        self.train(was)
        return torch.cat(out) if out else torch.zeros(0, self.embed_dim)

    def add_task(self, spec: TaskSpec, linear_head: bool = False,
                 examples: Sequence[ImageExample | Example] | None = None) -> None:
        """Fit ``spec``'s head on the pretrained features of ``examples`` (else ``head_examples(spec.name)``) and
        freeze it; ``linear_head=True``: a trainable head, fitted the same way as its start."""
        if spec.name in self.specs:
            raise ValueError(f"task {spec.name!r} already registered")
        if examples is None:
            if self.head_examples is None:
                raise ValueError(f"task {spec.name!r}: the head is fitted on examples; pass add_task(..., examples=) "
                                 f"or build the classifier with head_examples")
            examples = self.head_examples(spec.name)
        examples = list(examples)
        labels = torch.tensor([e.label for e in examples])
        missing = sorted(set(range(spec.num_labels)) - set(labels.tolist()))
        if missing:
            raise ValueError(f"task {spec.name!r}: no head-fitting example of class(es) {missing}")
        feats = self.features(examples)
        w, b = fit_linear_head(feats, labels, spec.num_labels, l2=self.head_l2)
        head = FrozenLinearHead(w, b, trainable=linear_head)
        train_acc = float((head(feats).argmax(-1) == labels).float().mean())
        self.specs[spec.name] = spec
        self.heads[spec.name] = head.to(self.device)
        self.head_records[spec.name] = {
            "examples": len(examples), "per_class": torch.bincount(labels, minlength=spec.num_labels).tolist(),
            "l2": self.head_l2, "train_accuracy": train_acc, "trainable": bool(linear_head)}

    # -- batches ----------------------------------------------------------------------------------------
    def collate(self, task: str, examples: Sequence[ImageExample | Example], train: bool = False
                ) -> dict[str, torch.Tensor]:
        self._check_task(task)
        pixels = torch.stack([to_pixels(_image(e), self.image_size) for e in examples])
        return {"pixel_values": pixels, "labels": torch.tensor([e.label for e in examples])}

    def tokenize(self, task: str, examples: Sequence[ImageExample | Example]) -> dict[str, torch.Tensor]:
        return {k: v.to(self.device) for k, v in self.collate(task, examples).items()}

    def forward(self, batch: dict[str, torch.Tensor], task: str) -> torch.Tensor:
        self._check_task(task)
        return self.heads[task](self.backbone.features(batch["pixel_values"]))

    # -- parameter sets ---------------------------------------------------------------------------------
    def graftable_names(self) -> list[str]:
        """The 16 MBConv blocks (stem and head convolution excluded)."""
        return [n for n, _ in self.named_parameters() if n.startswith("backbone._blocks.")]

    def maskable_names(self) -> list[str]:
        """Every convolution weight and BatchNorm scale / shift of the backbone (the whole backbone)."""
        keep: set[str] = set()
        for mname, mod in self.backbone.named_modules():
            if isinstance(mod, (nn.Conv2d, nn.Linear, nn.modules.batchnorm._BatchNorm)):
                prefix = f"backbone.{mname}." if mname else "backbone."
                keep.update(prefix + p for p, _ in mod.named_parameters(recurse=False))
        return [n for n, _ in self.named_parameters() if n in keep]

    def bn_names(self) -> list[str]:
        """The BatchNorm scales and shifts."""
        out = []
        for mname, mod in self.backbone.named_modules():
            if isinstance(mod, nn.modules.batchnorm._BatchNorm):
                out += [f"backbone.{mname}.weight", f"backbone.{mname}.bias"]
        return out


def _image(e: ImageExample | Example) -> Any:
    if isinstance(e, ImageExample):
        return e.image
    raise TypeError(f"EfficientNet-Lite examples must be ImageExample, got {type(e).__name__}")


def build_efficientnet_lite0(image_size: int = DEFAULT_IMAGE_SIZE, head_examples: HeadSource | None = None,
                             head_l2: float = HEAD_L2) -> EfficientNetLiteClassifier:
    """The pretrained EfficientNet-Lite0 body (converted weights; a one-line error naming the fix when absent)."""
    return EfficientNetLiteClassifier(E.load_pretrained(include_top=False), image_size=image_size,
                                      head_examples=head_examples, head_l2=head_l2)


TINY_STAGES = (E.Stage(1, 3, 1, 1, 8, 8), E.Stage(4, 3, 2, 1, 8, 16), E.Stage(4, 5, 1, 1, 16, 16))


def build_tiny_efficientnet_lite(seed: int = 0, image_size: int = 16, head_examples: HeadSource | None = None
                                 ) -> EfficientNetLiteClassifier:
    """Random-init EfficientNet-Lite of the same classes with three small stages (stem 8, head 32): tests, smoke.
    BatchNorm statistics are given non-trivial values so that freezing them is observable."""
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    body = E.EfficientNetLite(TINY_STAGES, num_classes=None, stem=8, head=32)
    with torch.no_grad():
        for m in body.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.copy_(0.1 * torch.randn(m.num_features, generator=gen))
                m.running_var.copy_(1.0 + 0.1 * torch.rand(m.num_features, generator=gen))
                m.weight.copy_(1.0 + 0.1 * torch.randn(m.num_features, generator=gen))
                m.bias.copy_(0.1 * torch.randn(m.num_features, generator=gen))
    return EfficientNetLiteClassifier(body.eval(), image_size=image_size, head_examples=head_examples)


__all__ = ["DEFAULT_IMAGE_SIZE", "EfficientNetLiteClassifier", "FrozenLinearHead", "HEAD_L2",
           "build_efficientnet_lite0", "build_tiny_efficientnet_lite", "fit_linear_head", "to_pixels"]
