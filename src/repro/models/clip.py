"""CLIP ViT image classifier with frozen zero-shot heads (P2's vision model: open_clip ViT-B/32, OpenAI weights).

**Images.**  Examples are :class:`ImageExample` ``(image, label)`` where ``image`` is a PIL image, a path to an
image file, or an already-preprocessed float tensor ``[3, H, W]``.  ``collate`` turns a list of them into CPU
tensors ``{"pixel_values": [B, 3, H, W], "labels": [B]}``: PIL images and paths go through open_clip's preprocessing
(the *eval* transform; the *train* transform with augmentation for a training batch when ``augment`` is on, as the
task-vectors / TaLoS fine-tuning does), tensors are used as they are.  A ``repro.data.Example`` whose ``text_a`` is
an image path is accepted too.  Image tasks reuse ``TaskSpec`` (its ``labels`` are the class names) and the shared
evaluation / training loops, which build their batches with ``collate`` in DataLoader workers
(:func:`repro.core.evaluation.batches`, pinned memory on CUDA); ``tokenize`` (the same batch on the model's device,
augmented in train mode) serves the other callers.

**Head** (D5): for each class c, every template t (a ``"{}"`` format string or a callable ``c -> str``) is
embedded by the CLIP text encoder, the embeddings are L2-normalized, averaged and re-normalized; the stacked class
vectors times ``exp(logit_scale)`` form a frozen, bias-free linear head applied to the L2-normalized image
features.  Templates come from ``add_task(..., templates=...)``, else :data:`CLIP_TEMPLATES` keyed by task name
(register per-dataset templates there), else ``("a photo of a {}.",)``.  ``linear_head=True`` gives a trainable
``nn.Linear`` on the normalized image features instead.

**Parameter sets.**  Maskable (P2, D2): the visual ``conv1``, every visual attention ``in_proj_weight`` /
``in_proj_bias`` / ``out_proj``, every visual MLP ``c_fc`` / ``c_proj``, and every visual LayerNorm (``ln_pre``,
``ln_1``, ``ln_2``, ``ln_post``).  ``visual.class_embedding``, ``visual.positional_embedding`` and
``visual.proj`` are **frozen** here (outside the maskable set): the official TaLoS code leaves them unmasked but
trainable (about 432k densely-updated parameters for ViT-B/32, not counted in its density), which contradicts its
stated intent; we follow the intent and say so.  The text tower is frozen and only builds heads.  Graftable:
the visual transformer blocks ``visual.transformer.resblocks.*``.
"""

from __future__ import annotations

from contextlib import contextmanager
import hashlib
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence, Union
import warnings

import torch
import torch.nn.functional as F
from torch import nn
from PIL import Image
from torch.nn.attention import SDPBackend, sdpa_kernel

from repro.data.tasks import Example, ImageExample, TaskSpec
from repro.models.base import Classifier
from repro.models.sentence import ZeroShotHead
from repro.data.hub_vision import VISION_TEMPLATES, templates_for

Template = Union[str, Callable[[str], str]]

#: per-task CLIP prompt templates (task name → templates); tasks not listed use DEFAULT_TEMPLATES
CLIP_TEMPLATES: dict[str, tuple[Template, ...]] = {}
DEFAULT_TEMPLATES: tuple[Template, ...] = ("a photo of a {}.",)


def fill_template(template: Template, classname: str) -> str:
    return template(classname) if callable(template) else template.format(classname)


@contextmanager
def math_attention():
    """Plain (math) attention: no fused MHA fast path, SDPA math backend.

    Forward-mode AD (linearized fine-tuning, ``torch.func.jvp``) and ``vmap`` (per-example gradients) are not
    implemented for the fused kernels; the official linearized code disables them the same way.
    """
    prev = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        with sdpa_kernel(SDPBackend.MATH):
            yield
    finally:
        torch.backends.mha.set_fastpath_enabled(prev)


class NormalizedLinearHead(nn.Module):
    """Trainable linear head on L2-normalized image features (the ``linear_head=True`` variant)."""

    def __init__(self, dim: int, num_labels: int) -> None:
        super().__init__()
        self.linear = nn.Linear(dim, num_labels)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.linear(F.normalize(z, dim=-1))


#: prompts per text-tower call when a zero-shot head is built
TEXT_BATCH = 1024
#: zero-shot class vectors already computed in this process (at most :data:`_CLASS_VECTORS_MAX`, oldest out first)
_CLASS_VECTORS: dict[tuple, torch.Tensor] = {}
_CLASS_VECTORS_MAX = 32


def _text_tower_digest(backbone: nn.Module) -> str:
    """sha256 of every parameter and buffer of an open_clip model outside its image tower (``visual.``): the
    weights a zero-shot head depends on (a task vector added to the image tower leaves it unchanged)."""
    h = hashlib.sha256()
    for name, t in [*backbone.named_parameters(), *backbone.named_buffers()]:
        if not name.startswith("visual."):
            h.update(name.encode())
            h.update(t.detach().to("cpu", torch.float32).contiguous().numpy().tobytes())
    return h.hexdigest()


class CLIPImageClassifier(Classifier):
    """open_clip ``CLIP`` model → image features → per-task zero-shot (or linear) head."""

    #: LoRA targets: packed Q/V of the visual attention (repro.core.adapters.PackedQVLoRA)
    LORA_TARGETS = ("in_proj_weight",)

    def __init__(self, backbone: nn.Module, preprocess: Callable, text_tokenizer: Callable,
                 train_preprocess: Callable | None = None, augment: bool = True,
                 templates: Mapping[str, Sequence[Template]] | None = None) -> None:
        super().__init__()
        self.backbone = backbone
        self.preprocess = preprocess
        self.train_preprocess = train_preprocess
        self.augment = bool(augment)
        self.text_tokenizer = text_tokenizer
        self.templates = {**CLIP_TEMPLATES, **dict(templates or {})}
        #: run the image tower with plain attention (see :func:`math_attention`); False = fused kernels (faster,
        #: but no jvp / vmap through the model)
        self.plain_attention = True

    # -- heads -------------------------------------------------------------------------------------------
    @torch.no_grad()
    def class_vectors(self, classnames: Sequence[str], templates: Sequence[Template]) -> torch.Tensor:
        """D5: per class, the normalized mean of the normalized text embeddings of its templates ([C, D]).

        The class × template prompts are encoded in batches of :data:`TEXT_BATCH` (one call per class left a GPU
        idle: 80 prompts per call for ImageNet's 1,000 classes).  The result is kept per process, keyed by the
        prompts and a digest of the text tower's weights (:func:`_text_tower_digest`), since every job of a P2 plan
        builds the same zero-shot heads again (ImageNet's 80,000 prompts per task-arithmetic job)."""
        if not templates:
            raise ValueError("need at least one template")
        prompts = [fill_template(t, c) for c in classnames for t in templates]
        key = (_text_tower_digest(self.backbone), tuple(prompts), len(templates))
        cached = _CLASS_VECTORS.get(key)
        if cached is not None:
            return cached.to(self.device)
        was_training = self.training
        self.eval()
        emb = torch.cat([F.normalize(self.backbone.encode_text(self.text_tokenizer(prompts[i:i + TEXT_BATCH])
                                                               .to(self.device)).float(), dim=-1)
                         for i in range(0, len(prompts), TEXT_BATCH)])
        self.train(was_training)
        out = F.normalize(emb.view(len(classnames), len(templates), -1).mean(1), dim=-1)
        if len(_CLASS_VECTORS) >= _CLASS_VECTORS_MAX:
            _CLASS_VECTORS.pop(next(iter(_CLASS_VECTORS)))
        _CLASS_VECTORS[key] = out.cpu()
        return out

    def add_task(self, spec: TaskSpec, linear_head: bool = False,
                 templates: Sequence[Template] | None = None, classnames: Sequence[str] | None = None) -> None:
        """Zero-shot head from ``classnames`` (default ``spec.labels``) × templates, or a trainable linear head."""
        if spec.name in self.specs:
            raise ValueError(f"task {spec.name!r} already registered")
        names = list(classnames) if classnames is not None else list(spec.labels)
        if len(names) != spec.num_labels:
            raise ValueError(f"task {spec.name!r}: {len(names)} class names for {spec.num_labels} labels")
        if linear_head:
            head: nn.Module = NormalizedLinearHead(self.embed_dim, spec.num_labels)
        else:
            temps = tuple(templates) if templates is not None else tuple(
                self.templates.get(spec.name) or _dataset_templates(spec.name))
            scale = float(self.backbone.logit_scale.detach().exp())
            head = ZeroShotHead(self.class_vectors(names, temps), scale)
        self.specs[spec.name] = spec
        self.heads[spec.name] = head.to(self.device)

    @property
    def embed_dim(self) -> int:
        """Dimension of the image features (the joint image-text space)."""
        return int(self.backbone.visual.output_dim)

    @property
    def image_size(self) -> tuple[int, int]:
        s = self.backbone.visual.image_size
        return (s, s) if isinstance(s, int) else tuple(s)

    # -- batches -----------------------------------------------------------------------------------------
    def _pixels(self, image: Any, augment: bool = False) -> torch.Tensor:
        if isinstance(image, torch.Tensor):
            if image.dim() != 3:
                raise ValueError(f"image tensors must be preprocessed [3, H, W], got shape {tuple(image.shape)}")
            return image.float()
        if callable(image):  # a lazy dataset item (repro.data.hub_vision): a callable returning a PIL image
            image = image()
        if isinstance(image, (str, Path)):
            with Image.open(image) as im:
                image = im.convert("RGB")
        augment = augment and self.augment and self.train_preprocess is not None
        transform = self.train_preprocess if augment else self.preprocess
        return transform(image)

    #: image decoding and augmentation run in DataLoader workers (repro.core.evaluation.batches)
    COLLATE_IN_WORKERS = True

    def collate(self, task: str, examples: Sequence[ImageExample | Example], train: bool = False
                ) -> dict[str, torch.Tensor]:
        """The batch as CPU tensors (safe in a DataLoader worker: it touches no model tensor), images through the
        train transform (augmentation) when ``train`` and ``augment``, else the eval transform."""
        self._check_task(task)
        pixels = []
        for e in examples:
            if isinstance(e, ImageExample):
                pixels.append(self._pixels(e.image, train))
            elif isinstance(e, Example):
                pixels.append(self._pixels(e.text_a, train))
            else:
                raise TypeError(f"CLIP examples must be ImageExample or Example(text_a=<image path>), got {type(e)}")
        return {"pixel_values": torch.stack(pixels), "labels": torch.tensor([e.label for e in examples])}

    def tokenize(self, task: str, examples: Sequence[ImageExample | Example]) -> dict[str, torch.Tensor]:
        """:meth:`collate` on the model's device, augmented when the model is in train mode."""
        return {k: v.to(self.device) for k, v in self.collate(task, examples, train=self.training).items()}

    def forward(self, batch: dict[str, torch.Tensor], task: str) -> torch.Tensor:
        self._check_task(task)
        if self.plain_attention:
            with math_attention():
                feats = self.backbone.encode_image(batch["pixel_values"])
        else:
            feats = self.backbone.encode_image(batch["pixel_values"])
        return self.heads[task](feats)

    # -- parameter sets ----------------------------------------------------------------------------------
    def graftable_names(self) -> list[str]:
        """The visual transformer blocks."""
        return [n for n, _ in self.named_parameters() if n.startswith("backbone.visual.transformer.resblocks.")]

    def full_names(self) -> list[str]:
        """P2's "all" scope: the whole image tower (``backbone.visual.*``: the maskable set plus ``class_embedding``,
        ``positional_embedding`` and the final projection ``proj``), what the official vision FT trains; the text
        tower (it only builds the frozen zero-shot heads) and ``logit_scale`` get no gradient there."""
        return [n for n, _ in self.named_parameters() if n.startswith("backbone.visual.")]

    def maskable_names(self) -> list[str]:
        """P2 (D2): visual conv1, attention in/out projections, MLP c_fc/c_proj, all visual LayerNorms."""
        keep: set[str] = set()
        for mname, mod in self.backbone.visual.named_modules():
            if isinstance(mod, (nn.Linear, nn.Conv2d, nn.LayerNorm, nn.MultiheadAttention)):
                prefix = f"backbone.visual.{mname}." if mname else "backbone.visual."
                keep.update(prefix + p for p, _ in mod.named_parameters(recurse=False))
        return [n for n, _ in self.named_parameters() if n in keep]


def _dataset_templates(task: str) -> tuple[Template, ...]:
    """The P2 dataset's zero-shot templates (:data:`repro.data.hub_vision.VISION_TEMPLATES`), else the default."""
    return templates_for(task) if task in VISION_TEMPLATES or task == "ImageNet" else DEFAULT_TEMPLATES


def pretrained_quick_gelu(arch: str, pretrained: str, quick_gelu: bool | None = None) -> bool:
    """Whether the network for ``pretrained`` weights must use QuickGELU (the activation they were trained with).

    A known open_clip tag (``"openai"``: QuickGELU) answers from open_clip's own table; ``quick_gelu`` must agree
    with it.  Anything else (a checkpoint file) needs ``quick_gelu`` given: the file alone cannot say."""
    import open_clip  # optional heavy dependency (open_clip): vision models only

    cfg = open_clip.get_pretrained_cfg(arch, pretrained) if pretrained else {}
    if cfg:
        tagged = bool(cfg.get("quick_gelu", False))
        if quick_gelu is not None and bool(quick_gelu) != tagged:
            raise ValueError(f"{arch} pretrained={pretrained!r} was trained with quick_gelu={tagged}; "
                             f"drop quick_gelu={quick_gelu} or pass quick_gelu={tagged}")
        return tagged
    if quick_gelu is None:
        raise ValueError(f"{arch} pretrained={pretrained!r} is not an open_clip tag, so its activation is unknown: "
                         f"pass quick_gelu=True for OpenAI weights (trained with QuickGELU), False otherwise")
    return bool(quick_gelu)


def visual_activations(model: nn.Module) -> set[str]:
    """The class names of the MLP activations of the image tower (``{"QuickGELU"}`` for the OpenAI network)."""
    return {type(block.mlp.gelu).__name__ for block in model.visual.transformer.resblocks}


def build_clip(arch: str = "ViT-B-32", pretrained: str = "openai", quick_gelu: bool | None = None,
               load_weights: bool = True, cache_dir: str | None = None) -> CLIPImageClassifier:
    """open_clip ``arch`` with ``pretrained`` weights, read from open_clip's download cache ``cache_dir`` (the
    fetched models folder; None: open_clip's default cache, downloading if needed).

    The network gets the activation the weights were trained with (:func:`pretrained_quick_gelu`): QuickGELU for
    the OpenAI weights, as open_clip 2.10.1 (the official code's pin) built them.  open_clip ≥ 3 builds
    ``ViT-B-32`` with ``nn.GELU`` and only warns ("QuickGELU mismatch"); here that warning is an error, and the
    built image tower's activation is checked.  ``load_weights=False`` builds the same network, random-init.
    """
    import open_clip  # optional heavy dependency (open_clip): vision models only

    quick = pretrained_quick_gelu(arch, pretrained, quick_gelu)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*QuickGELU mismatch.*")
        try:
            model, train_pre, val_pre = open_clip.create_model_and_transforms(
                arch, pretrained=pretrained, force_quick_gelu=quick, load_weights=load_weights,
                cache_dir=cache_dir)
        except UserWarning as err:
            raise RuntimeError(f"open_clip built {arch} with the wrong activation for pretrained={pretrained!r}: "
                               f"{err}") from err
    want = "QuickGELU" if quick else "GELU"
    if visual_activations(model) != {want}:
        raise RuntimeError(f"open_clip built {arch} with {sorted(visual_activations(model))} activations; "
                           f"pretrained={pretrained!r} needs {want}")
    return CLIPImageClassifier(model, val_pre, open_clip.get_tokenizer(arch), train_preprocess=train_pre)


def build_tiny_clip(seed: int = 0, width: int = 32, layers: int = 2, image_size: int = 32,
                    patch_size: int = 8, embed_dim: int = 32) -> CLIPImageClassifier:
    """Random-init tiny open_clip ``CLIP`` (same classes as ViT-B/32, QuickGELU) with the real CLIP BPE tokenizer."""
    import open_clip  # optional heavy dependency (open_clip): vision models only

    torch.manual_seed(seed)
    model = open_clip.CLIP(
        embed_dim,
        vision_cfg=dict(image_size=image_size, patch_size=patch_size, width=width, layers=layers,
                        head_width=width // 2, mlp_ratio=2.0),
        text_cfg=dict(context_length=77, vocab_size=49408, width=width, heads=2, layers=layers),
        quick_gelu=True,
    )
    val_pre = open_clip.image_transform(image_size, is_train=False)
    train_pre = open_clip.image_transform(image_size, is_train=True)
    return CLIPImageClassifier(model, val_pre, open_clip.get_tokenizer("ViT-B-32"), train_preprocess=train_pre)
