"""Small synthetic image tasks that repro makes itself (the paper-smoke profile's stand-ins for P2's vision tasks).

Each class of a task is a fixed random colour pattern (a low-resolution template upsampled to the image size);
an example is its class pattern plus Gaussian noise, already in model-input form (a ``[3, S, S]`` float tensor,
which :class:`repro.models.clip.CLIPImageClassifier` uses as is).  Deterministic per (task, seed); no download.
The class names are the real dataset's (digits for MNIST / SVHN, EuroSAT's land-cover classes, ten ImageNet
classes for the control), so the zero-shot heads are built from the same templates as in the paper profile.
"""

from __future__ import annotations

import zlib

import torch

SYNTHETIC_CLASSES: dict[str, tuple[str, ...]] = {
    "MNIST": tuple(str(i) for i in range(10)),
    "SVHN": tuple(str(i) for i in range(10)),
    "EuroSAT": ("annual crop land", "forest", "brushland or shrubland", "highway or road", "industrial buildings",
                "pasture land", "permanent crop land", "residential buildings", "river", "lake or sea"),
    "ImageNet": ("tench", "goldfish", "great white shark", "tiger shark", "hammerhead shark", "electric ray",
                 "stingray", "rooster", "hen", "ostrich"),
}
PER_CLASS = {"train": 24, "val": 4, "test": 8}


def synthetic_image_task(task: str, image_size: int = 32, seed: int = 0, noise: float = 0.6
                         ) -> tuple[tuple[str, ...], dict[str, list[tuple[torch.Tensor, int]]]]:
    """``(classnames, {"train"|"val"|"test": [(image [3, S, S], label)]})`` of synthetic ``task``."""
    if task not in SYNTHETIC_CLASSES:
        raise KeyError(f"no synthetic image task {task!r}; choose one of {', '.join(SYNTHETIC_CLASSES)}")
    classes = SYNTHETIC_CLASSES[task]
    gen = torch.Generator().manual_seed(zlib.crc32(task.encode()) + seed)
    coarse = torch.randn(len(classes), 3, 4, 4, generator=gen)
    patterns = torch.nn.functional.interpolate(coarse, size=(image_size, image_size), mode="nearest")
    splits: dict[str, list[tuple[torch.Tensor, int]]] = {}
    for split, n in PER_CLASS.items():
        rows = []
        for i in range(n):
            for c in range(len(classes)):
                rows.append((patterns[c] + noise * torch.randn(3, image_size, image_size, generator=gen), c))
        splits[split] = rows
    return classes, splits
