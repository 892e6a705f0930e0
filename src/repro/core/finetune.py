"""The one training loop, used by every fine-tuning method of both papers.

:func:`train` fine-tunes a :class:`~repro.models.base.Classifier` in place on one or several tasks with a
:class:`~repro.profiles.FinetuneRecipe` (P1: SGD, lr 1e-3, batch 2, wd 1e-4 not on bias/LayerNorm, clip 1.0,
best-dev checkpoint; P2: AdamW with cosine schedule and warmup, wd 0.1, clip 1.0).  Which entries may change is
given by ``trainable``: a list of parameter names (dense FT, BitFit) or a :class:`~repro.core.masks.Mask` (graft
re-training, FISH, LoTA, TaLoS, grafting-continual).

Sparse updates are exact: the :class:`MaskedOptimizer` keeps optimizer state only for trainable entries
(flat indices), updates and decays only those, and tensors with no trainable entry get ``requires_grad=False``
and no state at all, so every entry outside the mask stays bitwise unchanged and frozen tensors cost no
backward/optimizer work.  Variants: an l1 penalty on the movement ``λ Σ|θ − θ_init|`` (P1 Fig. 5), and a
linearized forward ``f(θ0) + J_θ0 (θ − θ0)`` via :func:`torch.func.jvp` (Ortiz-Jiménez et al. 2023; P2 baseline).
"""

from __future__ import annotations

import math
import random
import weakref
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence
import time

import torch
from repro.progress import progress_bar

from repro.data import Example
from repro.core.checks import NonFiniteError, check_finite
from repro.core.evaluation import batches, evaluate, forward
from repro.device import autocast
from repro.core.masks import Mask
from repro.models.base import Classifier
from repro.profiles import FinetuneRecipe


def is_no_decay(name: str) -> bool:
    """P1 recipe: no weight decay on biases and LayerNorm weights."""
    n = name.lower()
    return n.endswith("bias") or "layernorm" in n or "layer_norm" in n or ".ln" in n


def lr_at(step: int, recipe: FinetuneRecipe) -> float:
    """Learning rate at optimizer step ``step`` (0-based): constant, linear or cosine decay after linear warmup."""
    base, warm, total = recipe.lr, recipe.warmup_steps, max(recipe.steps, 1)
    if warm and step < warm:
        return base * (step + 1) / warm
    if recipe.schedule == "constant":
        return base
    progress = (step - warm) / max(total - warm, 1)
    if recipe.schedule == "cosine":
        return 0.5 * base * (1 + math.cos(math.pi * min(progress, 1.0)))
    if recipe.schedule == "linear":
        return base * max(0.0, 1 - progress)
    raise ValueError(f"unknown schedule {recipe.schedule!r}; choose constant, linear or cosine")


class MaskedOptimizer:
    """SGD (L2 weight decay in the gradient) or AdamW (decoupled decay) over selected entries only.

    ``entries[name]`` is None (whole tensor trainable) or a 1-D LongTensor of flat indices.  State is kept per
    selected entry; unselected entries are never read or written.  For a partially trainable tensor a
    post-accumulate-grad hook gathers the selected entries of its gradient as soon as backward has produced it and
    frees the dense gradient, so at most one dense gradient of such a tensor is alive at a time; :meth:`close`
    (also run when the optimizer is garbage-collected) removes the hooks.

    Gradient clipping (:meth:`clip_`) uses the norm of the *dense* gradient of every tensor with a trainable entry,
    as the official TaLoS code's ``clip_grad_norm_`` over the whole gradient (frozen entries included; tensors with
    no trainable entry get no gradient there either): the hook adds each partially trainable tensor's dense squared
    norm before it frees that gradient, so clipping costs one reduction per tensor and no dense gradient is kept.
    """

    def __init__(self, params: Mapping[str, torch.nn.Parameter], entries: Mapping[str, torch.Tensor | None],
                 recipe: FinetuneRecipe) -> None:
        if recipe.optimizer not in ("sgd", "adamw"):
            raise ValueError(f"unknown optimizer {recipe.optimizer!r}; choose sgd or adamw")
        self.params = dict(params)
        self.entries = dict(entries)
        self.recipe = recipe
        self.betas, self.eps = (0.9, 0.999), 1e-8
        self.wd = {n: (0.0 if recipe.no_decay_bias_ln and is_no_decay(n) else recipe.weight_decay) for n in self.params}
        self.state: dict[str, dict[str, torch.Tensor]] = {}
        self.t = 0
        self._gathered: dict[str, torch.Tensor] = {}  # partially trainable tensor → gradient of its entries
        self._dense_sq: dict[str, torch.Tensor] = {}  # partially trainable tensor → squared norm of its dense grad
        me = weakref.ref(self)  # the hooks must not keep the optimizer alive
        self._hooks = [p.register_post_accumulate_grad_hook(_gather_hook(me, n))
                       for n, p in self.params.items() if self.entries[n] is not None]

    def _gather(self, name: str, p: torch.Tensor) -> None:
        """Move the selected entries of ``p.grad`` into the compact gradient (summing over backward calls)."""
        dense = p.grad.reshape(-1)
        g = dense[self.entries[name]]
        sq = _squared_norm(dense)
        p.grad = None
        if name in self._gathered:  # (one backward per step in train(); after a second one the dense norm would
            self._gathered[name] += g  # be that of the summed gradient, which is gone: this keeps a bound on it)
            self._dense_sq[name] += sq
        else:
            self._gathered[name] = g
            self._dense_sq[name] = sq

    def _grad(self, name: str) -> torch.Tensor | None:
        if self.entries[name] is not None:
            return self._gathered.get(name)
        p = self.params[name]
        return None if p.grad is None else p.grad.reshape(-1)

    def grads(self) -> dict[str, torch.Tensor]:
        """The current gradient of the trainable entries of each tensor (flat), for checks and diagnostics."""
        return {n: g for n in self.params if (g := self._grad(n)) is not None}

    def close(self) -> None:
        """Remove the gradient hooks from the parameters (idempotent)."""
        for h in self._hooks:
            h.remove()
        self._hooks = []
        self._gathered.clear()
        self._dense_sq.clear()

    def __del__(self) -> None:
        self.close()

    def dense_grad_norm(self) -> torch.Tensor | None:
        """Global L2 norm of the dense gradient of every tensor with a trainable entry (None before backward)."""
        parts = []
        for n in self.params:
            if self.entries[n] is None:
                if self.params[n].grad is not None:
                    parts.append(_squared_norm(self.params[n].grad))
            elif n in self._dense_sq:
                parts.append(self._dense_sq[n])
        return torch.sqrt(sum(parts)) if parts else None

    def clip_(self, max_norm: float) -> float:
        """Clip the gradient to ``max_norm`` by the global L2 norm of the dense gradient (:meth:`dense_grad_norm`,
        the official ``clip_grad_norm_`` scope); only the trainable entries are scaled (the others are never
        applied).  Returns the pre-clip norm."""
        grads = [g for n in self.params if (g := self._grad(n)) is not None]
        norm = self.dense_grad_norm()
        if not grads or norm is None:
            return 0.0
        if max_norm > 0 and norm > max_norm:
            scale = max_norm / (norm + 1e-6)
            for g in grads:
                g.mul_(scale)
        return float(norm)

    #: SGD on whole tensors through ``torch._foreach_*`` (one kernel launch per operation for all tensors of one
    #: weight decay on a GPU instead of one per tensor; the same operations in the same order: bitwise equal on the
    #: CPU, tested).  Off until measured on a GPU: on 2 CPU cores it did not help (foreach is a per-tensor loop
    #: there); ``repro bench --device cuda`` times both (:func:`repro.bench.steady.foreach_ab`)
    foreach: bool = False

    @torch.no_grad()
    def _sgd_foreach(self, lr: float) -> set[str]:
        """w ← w − lr·(g + wd·w) for every whole trainable tensor with a gradient, grouped by weight decay; returns
        the names it updated."""
        groups: dict[float, list[str]] = {}
        for n in self.params:
            if self.entries[n] is None and self.params[n].grad is not None:
                groups.setdefault(self.wd[n], []).append(n)
        for wd, names in groups.items():
            ws = [self.params[n].data for n in names]
            step = torch._foreach_mul(ws, wd)
            torch._foreach_add_(step, [self.params[n].grad for n in names])  # g + wd·w (IEEE addition commutes)
            torch._foreach_mul_(step, lr)
            torch._foreach_sub_(ws, step)
        return {n for names in groups.values() for n in names}

    @torch.no_grad()
    def step(self, lr: float) -> None:
        self.t += 1
        b1, b2 = self.betas
        done = self._sgd_foreach(lr) if self.foreach and self.recipe.optimizer == "sgd" else set()
        for n, p in self.params.items():
            if n in done:
                continue
            g = self._grad(n)
            if g is None:
                continue
            idx = self.entries[n]
            flat = p.data.view(-1)
            w = flat if idx is None else flat[idx]
            if self.recipe.optimizer == "sgd":
                new = w - lr * (g + self.wd[n] * w)
            else:  # w·(1 − lr·wd) − lr·m̂ / (√v̂ + ε), in place, the same operations in the same order
                st = self.state.setdefault(n, {"m": torch.zeros_like(g), "v": torch.zeros_like(g)})
                st["m"].mul_(b1).add_(g, alpha=1 - b1)
                st["v"].mul_(b2).addcmul_(g, g, value=1 - b2)
                step = torch.div(st["m"], 1 - b1 ** self.t).mul_(lr)
                step.div_(torch.div(st["v"], 1 - b2 ** self.t).sqrt_().add_(self.eps))
                new = w.mul_(1 - lr * self.wd[n]).sub_(step)  # w is the parameter itself when idx is None
                del step
            if idx is None:
                if new is not flat:
                    flat.copy_(new)
            else:
                flat[idx] = new

    def zero_grad(self) -> None:
        for p in self.params.values():
            p.grad = None
        self._gathered.clear()
        self._dense_sq.clear()

    def state_numel(self) -> int:
        """Number of optimizer-state scalars held (for the P2 Table 3 memory accounting)."""
        return sum(t.numel() for st in self.state.values() for t in st.values())


def _squared_norm(t: torch.Tensor) -> torch.Tensor:
    """‖t‖² in float32, or in float64 for a float64 tensor (``vector_norm``: no temporary, ~6x faster than
    ``(t ** 2).sum()`` on an 85M-entry tensor; it refuses to narrow a double to float32)."""
    return torch.linalg.vector_norm(t, dtype=torch.promote_types(t.dtype, torch.float32)) ** 2


def _gather_hook(opt: "weakref.ReferenceType[MaskedOptimizer]", name: str) -> Callable[[torch.Tensor], None]:
    def hook(p: torch.Tensor) -> None:
        o = opt()
        if o is not None:
            o._gather(name, p)
    return hook


@dataclass
class TrainResult:
    history: list[dict] = field(default_factory=list)  # rows: step, loss, lr, dev (when evaluated)
    best_step: int = -1
    best_dev: float = float("nan")
    trainable_count: int = 0
    seconds: float = 0.0


def trainable_entries(model: Classifier, trainable: Sequence[str] | Mask) -> dict[str, torch.Tensor | None]:
    """The trainable entries of ``trainable`` (names or a Mask): name → None (the whole tensor) or its flat indices;
    tensors without any trainable entry are omitted."""
    params = dict(model.named_parameters())
    if isinstance(trainable, Mask):
        out: dict[str, torch.Tensor | None] = {}
        unknown = [n for n in trainable.tensors if n not in params]
        if unknown:
            raise KeyError(f"trainable mask: {len(unknown)} tensor(s) are not parameters of the model, e.g. "
                           f"{unknown[:3]}; build the mask from this model's parameters (Mask.shapes_of)")
        for n, t in trainable.tensors.items():
            if tuple(t.shape) != tuple(params[n].shape):
                raise ValueError(f"trainable mask: tensor {n!r} has shape {tuple(t.shape)} but the parameter has "
                                 f"{tuple(params[n].shape)}; a mask is never reshaped onto a parameter")
            cnt = int(t.sum())
            if cnt == 0:
                continue
            out[n] = None if cnt == t.numel() else t.reshape(-1).nonzero().reshape(-1).to(params[n].device)
        return out
    names = list(trainable)
    unknown = [n for n in names if n not in params]
    if unknown:
        raise KeyError(f"unknown parameter names {unknown[:5]}")
    return {n: None for n in names}


#: how a multi-task run picks the task of each batch (:func:`train`'s ``task_sampling``)
TASK_SAMPLING: tuple[str, ...] = ("uniform", "size")


def train(
    model: Classifier,
    train_data: Mapping[str, Sequence[Example]],
    recipe: FinetuneRecipe,
    trainable: Sequence[str] | Mask,
    dev_data: Mapping[str, Sequence[Example]] | None = None,
    seed: int = 0,
    l1_lambda: float = 0.0,
    linearized: bool = False,
    progress: bool = True,
    eval_batch_size: int = 64,
    callback: Callable[[int, Classifier], None] | None = None,
    num_workers: int | None = None,
    task_sampling: str = "uniform",
) -> TrainResult:
    """Fine-tune ``model`` in place on ``train_data`` (task → examples; several tasks = multi-task FT).

    Each step draws one batch of ``recipe.batch_size`` from one task: ``task_sampling`` "uniform" picks the task
    uniformly at random (P1 App. C.1: "batches being picked from a randomly chosen dataset"), "size" in proportion
    to its number of training examples.
    With ``recipe.eval_every > 0`` and dev data, the dev metric (mean over tasks) is computed every
    ``eval_every`` steps and the best checkpoint (ties: the later one, as the official P1 trainer) is restored.
    ``callback(step, model)``, if given, runs after every optimizer step (1-based ``step``, model holding the
    just-updated parameters; e.g. to snapshot checkpoints along training, P1 Fig. 15); it must not modify the model.

    The loss is the model's :meth:`~repro.models.base.Classifier.training_loss` (cross-entropy over the C logits;
    T5: the official token-level CE of the gold answer) on :meth:`~repro.models.base.Classifier.collate` batches,
    built by :func:`repro.core.evaluation.batches` (DataLoader workers for image models, ``num_workers``), under
    the training precision (:func:`repro.device.autocast`).  The order of the batches is drawn up front from
    ``seed`` (the same draws as drawing them step by step).
    """
    if not train_data:
        raise ValueError("train_data is empty: give at least one task's training examples")
    empty = [t for t, ex in train_data.items() if len(ex) == 0]
    if empty:
        raise ValueError(f"train_data: task(s) {empty} have no training examples; drop them or load their train split")
    if not (isinstance(recipe.batch_size, int) and recipe.batch_size >= 1):
        raise ValueError(f"FinetuneRecipe.batch_size must be an integer >= 1, got {recipe.batch_size!r}")
    if task_sampling not in TASK_SAMPLING:
        raise ValueError(f"task_sampling must be one of {TASK_SAMPLING}, got {task_sampling!r}")
    if recipe.steps < 1:
        raise ValueError("recipe.steps = 0 is the profile's P1 step budget: resolve it first "
                         "(repro.profiles.Profile.p1_recipe)")
    if not (math.isfinite(recipe.lr) and recipe.lr >= 0):
        raise ValueError(f"FinetuneRecipe.lr must be a finite number >= 0, got {recipe.lr!r}")
    for task in train_data:
        model._check_task(task)
    start = time.perf_counter()
    entries = trainable_entries(model, trainable)
    params = dict(model.named_parameters())
    for n, p in params.items():
        p.requires_grad_(n in entries)
    train_params = {n: params[n] for n in entries}
    opt = MaskedOptimizer(train_params, entries, recipe)
    init = {n: p.detach().clone() for n, p in train_params.items()} if (l1_lambda or linearized) else {}
    linear_base = init if linearized else None

    rng = random.Random(seed)
    torch.manual_seed(seed)
    tasks = list(train_data)
    weights = [len(train_data[t]) if task_sampling == "size" else 1 for t in tasks]
    orders = {t: [] for t in tasks}

    def next_batch(task: str) -> list[Example]:
        out = []
        while len(out) < recipe.batch_size:
            if not orders[task]:
                orders[task] = rng.sample(range(len(train_data[task])), len(train_data[task]))
            out.append(train_data[task][orders[task].pop()])
        return out

    result = TrainResult(trainable_count=sum(
        (params[n].numel() if idx is None else idx.numel()) for n, idx in entries.items()))
    best_state: dict[str, torch.Tensor] | None = None
    do_eval = bool(recipe.eval_every) and bool(dev_data)

    def dev_score() -> float:
        vals = [evaluate(model, ex, t, batch_size=eval_batch_size, linear_base=linear_base,
                         num_workers=num_workers)["value"] for t, ex in dev_data.items()]
        return sum(vals) / len(vals)

    plan = []
    for _ in range(recipe.steps):
        task = rng.choices(tasks, weights)[0]
        plan.append((task, next_batch(task)))
    model.train()
    bar = progress_bar(range(recipe.steps), enabled=progress, desc="fine-tune", leave=False)
    for step, (task, batch) in zip(bar, batches(model, plan, train=True, seed=seed, num_workers=num_workers)):
        with autocast(model, "train"):
            logits = forward(model, batch, task, linear_base=linear_base)
            loss = model.training_loss(logits, batch)
        if l1_lambda:
            loss = loss + l1_lambda * sum((train_params[n] - init[n]).abs().sum() for n in train_params)
        try:
            check_finite(loss.detach(), f"fine-tuning on {task}: the loss", step + 1)
            opt.zero_grad()
            loss.backward()
            if not math.isfinite(opt.clip_(recipe.grad_clip)):
                check_finite(opt.grads(), f"fine-tuning on {task}: gradient", step + 1)
            lr = lr_at(step, recipe)
            opt.step(lr)
        except NonFiniteError:
            opt.close()
            model.eval()
            for p in params.values():
                p.requires_grad_(False)
            raise
        if callback is not None:
            callback(step + 1, model)
        row = {"step": step + 1, "loss": loss.item(), "lr": lr, "task": task}
        if do_eval and ((step + 1) % recipe.eval_every == 0 or step + 1 == recipe.steps):
            dev = dev_score()
            model.train()
            row["dev"] = dev
            if best_state is None or dev >= result.best_dev:
                result.best_dev, result.best_step = dev, step + 1
                best_state = {n: p.detach().clone() for n, p in train_params.items()}
        result.history.append(row)
        bar.set_postfix(loss=f"{row['loss']:.3f}")
    if best_state is not None:
        with torch.no_grad():
            for n, p in train_params.items():
                p.copy_(best_state[n])
    opt.close()
    model.eval()
    for p in params.values():
        p.requires_grad_(False)
    check_finite({n: p.detach() for n, p in train_params.items()}, "fine-tuning: the trained parameters",
                 recipe.steps)
    result.seconds = time.perf_counter() - start
    return result
