"""The one evaluation loop: logits of a classifier on a task's examples, optionally under parameter overrides.

Overrides are ``{parameter name: tensor}`` applied with :func:`torch.func.functional_call`, so a grafted,
merged or interpolated model is evaluated without materializing a second copy of the network.

:func:`batches` is the one way the training loop and the evaluation loop turn examples into model batches: for a
model that builds its batches in worker processes (``Classifier.COLLATE_IN_WORKERS``: CLIP decodes and augments
images there) it is a :class:`torch.utils.data.DataLoader` with ``num_workers`` workers and pinned memory on CUDA,
every batch augmented under its own seed, so the batches are the same for any number of workers.
"""

from __future__ import annotations

import functools
import warnings
from collections import OrderedDict
from dataclasses import dataclass
from typing import Iterator, Mapping, Sequence

import numpy as np
import torch
from torch.func import functional_call, jvp

from repro.artifacts import tensor_digest
from repro.data import Example, chunks
from repro.core.metrics import accuracy, expected_calibration_error, f1_binary
from repro.models.base import Classifier
from repro.device import autocast, loader_workers


@dataclass
class Predictions:
    logits: torch.Tensor  # [N, C]
    labels: torch.Tensor  # [N]

    @property
    def probs(self) -> torch.Tensor:
        return self.logits.float().softmax(-1)

    @property
    def preds(self) -> torch.Tensor:
        return self.logits.argmax(-1)

    def correct(self) -> np.ndarray:
        """Per-example 0/1 correctness (argmax = label) as a uint8 array on the CPU; the one definition every
        paired bootstrap and stored ``*_correct`` list uses (for an F1 task it is the accuracy correctness)."""
        return (self.preds == self.labels).to(torch.uint8).cpu().numpy()


@functools.cache
def _load_jvp_decompositions() -> None:
    """Import torch's forward-mode decompositions once, quietly: torch builds them with its own deprecated
    ``torch.jit.script`` and warns about it on the first ``jvp`` (a FutureWarning printed into every notebook)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*torch\.jit\.script.* is deprecated", category=FutureWarning)
        import torch._decomp.decompositions_for_jvp  # noqa: F401 - once, under the warnings filter above


def forward(model: Classifier, batch: dict[str, torch.Tensor], task: str,
            overrides: Mapping[str, torch.Tensor] | None = None,
            linear_base: Mapping[str, torch.Tensor] | None = None) -> torch.Tensor:
    """Logits of ``model`` on ``batch``; parameters in ``overrides`` replace the model's own.

    With ``linear_base`` = θ0 (a dict over some parameters) the model is evaluated *linearized* around θ0:
    f(x; θ0) + J_θ0(x)·(θ − θ0) (Ortiz-Jiménez et al. 2023, Eq. 3), θ being ``overrides`` or the model's own
    parameters.  Gradients flow through θ, so the same call trains linearized models.
    """
    return _forward(model, batch, task, overrides, linear_base)


class _Batches(torch.utils.data.Dataset):
    """Item i = the collated batch of ``plan[i]`` = (task, examples); a training batch is augmented under the seed
    ``seed`` + i (a forked CPU generator), so it is the same in any worker process or in the main one."""

    def __init__(self, model: Classifier, plan: Sequence[tuple[str, Sequence[Example]]], train: bool,
                 seed: int) -> None:
        self.model, self.plan, self.train, self.seed = model, plan, train, seed

    def __len__(self) -> int:
        return len(self.plan)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        task, examples = self.plan[i]
        if not self.train:
            return self.model.collate(task, examples, train=False)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed * 1_000_003 + i)
            return self.model.collate(task, examples, train=True)


def batches(model: Classifier, plan: Sequence[tuple[str, Sequence[Example]]], *, train: bool = False,
            seed: int = 0, num_workers: int | None = None) -> Iterator[tuple[str, dict[str, torch.Tensor]]]:
    """(task, batch on the model's device) for each (task, examples) of ``plan``, in order: the training and the
    evaluation loop's one batch path.  ``num_workers`` None = the model's configured count
    (:func:`repro.device.loader_workers`); workers are used only by models with ``COLLATE_IN_WORKERS``."""
    if not getattr(model, "COLLATE_IN_WORKERS", False):
        for task, examples in plan:
            yield task, model.collate(task, examples, train=train)
        return
    workers = loader_workers(model) if num_workers is None else int(num_workers)
    workers = min(workers, len(plan)) if len(plan) > 1 else 0  # one batch: no worker start-up for nothing
    device = model.device
    loader = torch.utils.data.DataLoader(
        _Batches(model, plan, train, seed), batch_size=None, shuffle=False, num_workers=workers,
        pin_memory=device.type == "cuda", **({"prefetch_factor": 4, "persistent_workers": False} if workers else {}))
    for (task, _), batch in zip(plan, loader):
        yield task, {k: v.to(device, non_blocking=True) for k, v in batch.items()}


def _forward(model: Classifier, batch: dict[str, torch.Tensor], task: str,
             overrides: Mapping[str, torch.Tensor] | None, linear_base: Mapping[str, torch.Tensor] | None
             ) -> torch.Tensor:
    if linear_base is None:
        if overrides:
            return functional_call(model, dict(overrides), (batch,), {"task": task}, strict=False)
        return model(batch, task)
    names = list(linear_base)
    current = dict(model.named_parameters())
    if overrides:
        current.update(overrides)
    others = {n: v for n, v in (overrides or {}).items() if n not in linear_base}

    def f(*ps: torch.Tensor) -> torch.Tensor:
        return functional_call(model, {**others, **dict(zip(names, ps))}, (batch,), {"task": task}, strict=False)

    _load_jvp_decompositions()
    out, dout = jvp(f, tuple(linear_base[n] for n in names), tuple(current[n] - linear_base[n] for n in names))
    return out + dout


@dataclass
class EvalSet:
    """A fixed evaluation set in the batches :func:`predict` runs (examples ordered by :func:`length_order`), for a
    set that is scored many times (an α grid).  ``collated`` holds the batches built once, on the CPU, for a model
    that builds them in the main process; a model that builds them in worker processes (CLIP) rebuilds them per
    call, since its decoded images would not fit in memory at the paper's sizes."""

    task: str
    order: list[int]
    plan: list[tuple[str, Sequence[Example]]]
    collated: list[dict[str, torch.Tensor]] | None = None

    def __len__(self) -> int:
        return len(self.order)


def eval_set(model: Classifier, examples: Sequence[Example], task: str, batch_size: int = 64,
             collate: bool = True) -> EvalSet:
    """``examples`` prepared for repeated :func:`predict` calls: ordered and batched once, and (``collate``)
    collated once unless the model collates in workers (the vision family's 32-px images: 12 % of a forward
    pass, measured 2026-11-28)."""
    order = length_order(examples)
    plan = [(task, chunk) for chunk in chunks([examples[i] for i in order], batch_size)]
    collated = None if not collate or getattr(model, "COLLATE_IN_WORKERS", False) else \
        [model.collate(t, chunk, train=False) for t, chunk in plan]
    return EvalSet(task, order, plan, collated)


@torch.no_grad()
def predict(model: Classifier, examples: Sequence[Example] | EvalSet, task: str,
            overrides: Mapping[str, torch.Tensor] | None = None, batch_size: int = 64,
            linear_base: Mapping[str, torch.Tensor] | None = None, num_workers: int | None = None) -> Predictions:
    """Eval-mode logits for every example (no dropout), optionally with overrides / linearized around θ0.

    Batches come from :func:`batches` (``num_workers``: its DataLoader workers), or from an :class:`EvalSet`
    prepared once (``batch_size`` is then the set's); the forward passes run under the evaluation precision
    (:func:`repro.device.autocast` with ``phase="eval"``)."""
    prepared = examples if isinstance(examples, EvalSet) else eval_set(model, examples, task, batch_size, False)
    if prepared.task != task:
        raise ValueError(f"the evaluation set was prepared for task {prepared.task!r}, not {task!r}")
    was_training = model.training
    model.eval()
    order = prepared.order
    logits, labels = [], []
    if prepared.collated is not None:
        device = model.device
        stream = ((t, {k: v.to(device, non_blocking=True) for k, v in b.items()})
                  for (t, _), b in zip(prepared.plan, prepared.collated))
    else:
        stream = batches(model, prepared.plan, train=False, num_workers=num_workers)
    for _, batch in stream:
        with autocast(model, "eval"):
            out = forward(model, batch, task, overrides, linear_base)
        logits.append(out.float().cpu())
        labels.append(batch["labels"].cpu())
    model.train(was_training)
    if not logits:
        raise ValueError(f"no examples to evaluate for task {task!r}")
    inverse = torch.empty(len(order), dtype=torch.long)
    inverse[torch.tensor(order, dtype=torch.long)] = torch.arange(len(order))
    return Predictions(torch.cat(logits)[inverse], torch.cat(labels)[inverse])


class PredictionMemo:
    """The logits a model state already gave on text examples in this process, so that scoring the same model on
    the same examples again (or on some of them: a chapter's 200-example subset of a 500-example test split) runs
    only the examples not yet seen.

    A model state is everything that decides a logit: the task, every parameter and buffer with the overrides
    applied (sha256 of the content: :func:`repro.artifacts.tensor_digest`, about 0.1 s for MiniLM), the
    linearization point, and the model's training and evaluation precisions.  An example is its text(s) and
    label.  The examples run in other batches than a direct call would put them in, so the logits are the same up
    to float summation order (as :func:`length_order`'s batches).  Only plain :class:`~repro.data.Example` lists
    are kept (a prepared :class:`EvalSet` is its caller's own repeated set; images are cheap at the cpu profile's
    32 px); the ``max_states`` most recent states are kept.
    """

    def __init__(self, max_states: int = 512) -> None:
        self.max_states = max_states
        self._rows: OrderedDict[str, dict[tuple, tuple[torch.Tensor, int]]] = OrderedDict()
        #: examples answered from the memo / run, over this memo's life
        self.reused = self.run = 0

    @staticmethod
    def applies(examples: Sequence[Example] | EvalSet) -> bool:
        return not isinstance(examples, EvalSet) and bool(examples) and all(type(e) is Example for e in examples)

    @staticmethod
    def state(model: Classifier, task: str, overrides: Mapping[str, torch.Tensor] | None,
              linear_base: Mapping[str, torch.Tensor] | None) -> str:
        effective = {f"p:{n}": t for n, t in model.named_parameters()}
        effective.update({f"p:{n}": t for n, t in (overrides or {}).items()})
        effective.update({f"b:{n}": t for n, t in model.named_buffers()})
        effective.update({f"l:{n}": t for n, t in (linear_base or {}).items()})
        precision = f"{getattr(model, 'precision', 'fp32')}/{getattr(model, 'eval_precision', None)}"
        return f"{task}\0{precision}\0{tensor_digest(effective)}"

    def predict(self, model: Classifier, examples: Sequence[Example], task: str,
                overrides: Mapping[str, torch.Tensor] | None = None, batch_size: int = 64,
                linear_base: Mapping[str, torch.Tensor] | None = None) -> Predictions:
        """:func:`predict` of ``examples`` (plain text examples: :meth:`applies`), running only the unseen ones."""
        key = self.state(model, task, overrides, linear_base)
        rows = self._rows.setdefault(key, {})
        self._rows.move_to_end(key)
        while len(self._rows) > self.max_states:
            self._rows.popitem(last=False)
        ids = [(e.text_a, e.text_b, e.label) for e in examples]
        todo: dict[tuple, Example] = {}  # each unseen example once
        for i, e in zip(ids, examples):
            if i not in rows:
                todo.setdefault(i, e)
        if todo:
            pred = predict(model, list(todo.values()), task, overrides, batch_size, linear_base)
            for i, logit, label in zip(todo, pred.logits, pred.labels):
                rows[i] = (logit, int(label))
        self.run += len(todo)
        self.reused += len(ids) - len(todo)
        return Predictions(torch.stack([rows[i][0] for i in ids]),
                           torch.tensor([rows[i][1] for i in ids], dtype=torch.long))


def length_order(examples: Sequence[Example]) -> list[int]:
    """Indices of ``examples`` by text length, so each padded batch holds similar lengths.

    Evaluation batches pad to their longest member; sorting first cuts the padded tokens (measured on MiniLM,
    2 cores: 1.2-1.8x more examples per second).  The logits are returned in the original order, so the result
    is the same up to float summation order.  Examples without text (images) keep their order.
    """
    def text_length(example: Example) -> int:
        return len(getattr(example, "text_a", "") or "") + len(getattr(example, "text_b", "") or "")

    return sorted(range(len(examples)), key=lambda i: text_length(examples[i]))


def score(pred: Predictions, metric: str = "acc", n_bins: int = 10) -> dict[str, float]:
    """Task metric (``acc`` or ``f1``) as ``value`` plus accuracy, F1 and ECE, all as fractions."""
    acc = accuracy(pred.preds, pred.labels)
    out = {"acc": acc, "ece": expected_calibration_error(pred.probs, pred.labels, n_bins=n_bins)}
    if pred.logits.shape[1] == 2:
        out["f1"] = f1_binary(pred.preds, pred.labels)
    if metric not in ("acc", "f1"):
        raise ValueError(f"unknown metric {metric!r}; choose acc or f1")
    out["value"] = out[metric] if metric in out else acc
    return out


def evaluate(model: Classifier, examples: Sequence[Example], task: str,
             overrides: Mapping[str, torch.Tensor] | None = None, batch_size: int = 64,
             n_bins: int = 10, linear_base: Mapping[str, torch.Tensor] | None = None,
             num_workers: int | None = None) -> dict[str, float]:
    """predict + score with the task's own metric."""
    pred = predict(model, examples, task, overrides, batch_size, linear_base, num_workers=num_workers)
    return score(pred, model.specs[task].metric, n_bins=n_bins)
