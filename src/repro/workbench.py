"""Cached building blocks the notebooks call: one :class:`Workbench` per (profile, data) holds the model at θ_pre,
the loaded tasks, and the artifact store, and trains each fine-tuned model or graft region at most once.

Every fine-tuned model is stored as a (sparse) task vector τ = θ_ft − θ_pre and evaluated as the override
θ_pre + α τ; the model object itself never leaves θ_pre, so P1 and P2 notebooks share the same trained models.
Artifacts are keyed by the hash of everything that determines them (profile, task, method, recipe, seed, data).
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Generic, Mapping, Sequence, TypeVar

import torch

from repro.artifacts import (KEY_SCHEME, STORE_FIELD, ArtifactError, ArtifactStore, code_fingerprint,
                             load_json_artifact, load_tensors, read_json, save_json_artifact, save_tensors,
                             stale_reason, tensor_digest)
from repro.data import Example, TaskData, get_spec, load_task
from repro.jobs import finetune_fields, graft_fields
from repro.core.checks import check_finite, check_pair
from repro.core.evaluation import EvalSet, PredictionMemo, Predictions, predict, score
from repro.core.finetune import TrainResult, train
from repro.core.grafting import GraftResult, grafted_params, learn_graft
from repro.core.masks import Mask
from repro.core.taskvec import TaskVector
from repro.device import configure, resolve_device
from repro.models.base import Classifier
from repro.models.build import build_model
from repro.paths import STORE_READ_ONLY_ENV
from repro.paths import artifacts_dir as artifacts_dir_path, folder_digest, data_root
from repro.profiles import FinetuneRecipe, GraftRecipe, Profile, get_profile
from repro.data.layout import FAMILY_DIRS
from repro.data.packaged import package_digest
from repro.data.packaged_images import IMAGE_SOURCES, source_digest

FT_METHODS = ("ft", "bitfit", "l1", "linearized", "masked")
T = TypeVar("T")
# the code every cached computation depends on (plus the module that defines its compute function)
CODE_MODULES = ("repro.core", "repro.models", "repro.data")


class StoreMiss(RuntimeError):
    """A cached artifact this Workbench may not compute (a read-only store, or a kind outside ``compute_kinds``):
    ``kind``, ``path`` (its store path) and ``reason`` ("absent" or the stored entry's problem)."""

    def __init__(self, kind: str, path: Path, reason: str, why: str) -> None:
        self.kind, self.path, self.reason = kind, Path(path), reason
        super().__init__(f"{why}: would compute {kind} {Path(path).name} ({reason})")


class UndeclaredArtifact(RuntimeError):
    """A guarded Workbench (a notebook's, :class:`repro.jobcall.ChapterJobs`) was asked for a cached artifact outside
    the declared job that computes it: the notebook rebuilt a job's arguments instead of asking for its spec."""


@dataclass(frozen=True)
class Codec(Generic[T]):
    """How one kind of cached value is stored: ``save(path, value, meta)``, ``load(path) -> (value, meta)``
    (FileNotFoundError when absent, :class:`~repro.artifacts.ArtifactError` when unusable) and the tensors to
    check for non-finite values before anything is written."""

    name: str
    save: Callable[[Path, T, dict], None]
    load: Callable[[Path], tuple[T, dict]]
    tensors: Callable[[T], Mapping[str, torch.Tensor]]
    reload: bool = True  # False: a fresh computation is returned as computed (JSON turns float keys into strings)
    to: Callable[[T, torch.device], T] = lambda value, device: value  # place a value on the workbench's device


def _load_mask(path: Path) -> tuple[Mask, dict]:
    mask = Mask.load(path)
    return mask, read_json(path.with_suffix(".json"))


def save_sparse_vector(path: Path, vec: Mapping[str, torch.Tensor], meta: dict) -> None:
    """Store τ sparsely (only nonzero entries) through :class:`repro.core.taskvec.TaskVector`."""
    TaskVector(dict(vec)).save(path, meta)


def load_sparse_vector(path: Path) -> tuple[dict[str, torch.Tensor], dict]:
    """Dense τ dict and metadata of a stored task vector (FileNotFoundError when absent)."""
    tv = TaskVector.load(path)
    return dict(tv.tensors), dict(tv.meta)


MASK: Codec[Mask] = Codec("mask", lambda path, m, meta: m.save(path, meta), _load_mask, lambda m: {})
def _on_device(tensors: Mapping[str, torch.Tensor], device: torch.device) -> dict[str, torch.Tensor]:
    return {n: t.to(device) for n, t in tensors.items()}


VECTOR: Codec[dict] = Codec("sparse task vector", save_sparse_vector, load_sparse_vector, lambda v: v,
                            to=_on_device)
TENSORS: Codec[dict] = Codec("tensors", save_tensors, load_tensors, lambda v: v, to=_on_device)
JSON: Codec[Any] = Codec("json", save_json_artifact, load_json_artifact, lambda v: {}, reload=False)


def scope_fraction(wb: "Workbench", sparsity: float, scope: str) -> float:
    """The fraction of ``scope``'s own eligible set that holds ``sparsity`` × |graftable| entries (P1 counts every
    region size in graftable entries)."""
    own = sum(int(torch.Size(s).numel()) for s in wb.shapes(scope).values())
    graftable = sum(int(torch.Size(s).numel()) for s in wb.shapes("graftable").values())
    frac = sparsity * graftable / own
    if frac > 1.0:
        raise ValueError(f"sparsity {sparsity} of the graftable set is more than the whole {scope!r} set "
                         f"({own} entries = {own / graftable:.3g} of graftable)")
    return frac


def _brief_config(config: Mapping[str, Any]) -> str:
    keys = ("kind", "task", "tasks", "k", "seed", "method", "scope", "trainable", "tag")
    return ", ".join(f"{k}={config[k]!r}" for k in keys if k in config and config[k] not in ("", None))


class Workbench:
    """The model at θ_pre + tasks + artifact store for one profile."""

    read_only: bool = False  # (class defaults: a Workbench made without __init__, as tests do, computes freely)
    compute_kinds: frozenset[str] | None = None
    #: the chapter whose declared jobs guard this Workbench (None: unguarded); set by repro.jobcall.ChapterJobs
    declared: str | None = None
    #: the id of the job being computed or loaded (repro.jobcall.call_job), None outside any job
    active_job: str | None = None

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
        self.device = resolve_device(self.profile.device)  # model, θ_pre, loaded τ live here (repro.device)
        self.precision = configure(self.model, self.device, self.profile.precision, self.profile.eval_precision,
                                   self.profile.loader_workers)
        self.model.eval()
        for p in self.model.parameters():
            p.requires_grad_(False)
        self.pre: dict[str, torch.Tensor] = {n: p.detach().clone() for n, p in self.model.named_parameters()
                                             if not n.startswith(Classifier.HEAD_PREFIX)}
        self._tasks: dict[tuple, TaskData] = {}
        #: logits already computed on text examples, per model state (:meth:`predict`)
        self.predictions = PredictionMemo()
        #: no computation at all: a stored, current entry is loaded, anything else raises :class:`StoreMiss`
        #: (nothing in the store is locked, cleaned or quarantined)
        self.read_only: bool = os.environ.get(STORE_READ_ONLY_ENV, "") not in ("", "0")
        #: None: any kind may be computed; a set: only these kinds (`repro job run`: the job's own artifact)
        self.compute_kinds: frozenset[str] | None = None
        #: one record per :meth:`cached` call: ``{"kind", "path", "computed"}`` (the job runner's done-marker)
        self.ledger: list[dict[str, Any]] = []
        self._data_tag: str | None = None
        if not self.read_only:  # once per store: entries keyed the old way are moved out, one line each
            self.store.retire_old_keys()

    def precision_key(self) -> dict[str, str]:
        """The training precision as a cache-key entry: {} for fp32 (keys made before precision existed stay
        valid), else {"precision": "bf16" / "tf32"} (a bf16 run never reuses an fp32 artifact, nor the reverse)."""
        return {} if self.precision == "fp32" else {"precision": self.precision}

    # --- data ------------------------------------------------------------------------------------------
    def task(self, name: str, k: int | None = None, seed: int | None = None) -> TaskData:
        """Load (once) a task's k-shot train/dev and test splits and register its head."""
        k = k or self.profile.k_shot
        seed = self.seed if seed is None else seed
        key = (name, k, seed)
        if key not in self._tasks:
            if self.data_dir:
                self.data_tag  # noqa: B018 - the folder's digest is taken before its files are read
            self._tasks[key] = load_task(name, self.profile, seed=seed, k=k, data_dir=self.data_dir)
        if not self.model.has_task(name):
            self.model.add_task(self._tasks[key].spec, linear_head=self.linear_heads)
            for p in self.model.parameters():
                p.requires_grad_(False)
        return self._tasks[key]

    @property
    def data_tag(self) -> str:
        """What every artifact key holds for the data it reads: a digest of its content, not its location.

        A ``data_dir`` folder: :func:`repro.paths.folder_digest` of its files (computed once per workbench, when
        first asked: the tasks it loads are read once too), so a file edited in place retrains; the hub profile's
        fetched text tasks under the data root likewise (not the P2 ``nlp/`` / ``vision/`` folders).  Packaged tasks:
        the source, its package's version and a digest of the file read.  Generated tasks: the source and the
        generator's data seed (the generator's code is in every entry's code fingerprint)."""
        if getattr(self, "_data_tag", None) is None:
            self._data_tag = self._make_data_tag()
        return self._data_tag

    def _make_data_tag(self) -> str:
        if self.data_dir:
            return f"local:{folder_digest(self.data_dir, exclude=[d for d in FAMILY_DIRS.values() if d])}"
        tag = self.profile.data_source
        if tag == "hub":  # the fetched copies under the data root ($REPRO_DATA or data/): their text task folders
            if data_root().is_dir():
                tag += f":{folder_digest(data_root(), exclude=[d for d in FAMILY_DIRS.values() if d])}"
        if tag == "generated":
            tag += f":seed={int(self.profile.generated_seed)}"
        if tag in ("synthetic-images", "packaged-images"):  # the side the images are resized to is other data
            tag += f":px={int(self.profile.image_size)}"
        if tag.startswith("packaged-images"):  # the package files the images are read from
            tag += "+" + ",".join(f"{t}@{source_digest(t)}" for t in sorted(IMAGE_SOURCES))
        packaged = dict(self.profile.packaged_tasks)
        if packaged:  # tasks read from an installed package (repro.data.packaged) are other data
            tag += "+" + ",".join(f"{t}={s}@{package_digest(s)}" for t, s in sorted(packaged.items()))
        return tag

    def data_key(self, *, model: bool = True, max_length: bool = True) -> dict[str, Any]:
        """The data fields of a cache key, the one place every key gets them: ``data`` (:attr:`data_tag`: which
        data the examples come from) and how the model reads them (``model``, ``max_length``).  ``model=False`` /
        ``max_length=False`` leave a field out where a key was made without it, so existing keys keep their values."""
        return {**({"model": self.profile.model} if model else {}),
                **({"max_length": self.profile.max_length} if max_length else {}), "data": self.data_tag}

    # --- parameter sets --------------------------------------------------------------------------------
    def names(self, scope: str = "graftable") -> list[str]:
        if scope == "graftable":
            return self.model.graftable_names()
        if scope == "maskable":
            return self.model.maskable_names()
        if scope == "all":  # P2's full fine-tune (P2Family.ft_scope): every backbone parameter the official FT trains
            return self.model.full_names()
        if scope == "bias":
            return self.model.bias_names(self.model.graftable_names())
        raise ValueError(f"unknown scope {scope!r}; choose graftable, maskable, all or bias")

    def shapes(self, scope: str = "graftable") -> dict[str, tuple[int, ...]]:
        return {n: tuple(self.pre[n].shape) for n in self.names(scope)}

    def restore_pre(self) -> None:
        with torch.no_grad():
            for n, p in self.model.named_parameters():
                if n in self.pre:
                    p.copy_(self.pre[n])

    # --- the cache -------------------------------------------------------------------------------------
    def cached(self, kind: str, config: dict, compute: Callable[[], tuple[T, dict]], codec: Codec[T], *,
               code: Sequence[str] | None = None) -> tuple[T, dict]:
        """The artifact of ``config``: loaded when stored and current, else computed from θ_pre, checked for
        non-finite values, saved atomically and re-loaded (a first run returns exactly what later runs load).

        ``code``: the modules whose source fingerprint the sidecar records (default :data:`CODE_MODULES` plus the
        repro module defining ``compute``); an entry made by other code, a corrupt or an incomplete entry is reported
        in one line, moved to ``<store>/.quarantine/`` and recomputed.  A file lock serialises processes
        computing the same artifact.  :attr:`read_only` / :attr:`compute_kinds` forbid computing (issue 23):
        what may not be computed raises :class:`StoreMiss` instead.
        """
        path = self.store.path(kind, config)
        if self.declared is not None and self.active_job is None:
            raise UndeclaredArtifact(f"{self.declared}: {kind} {path.name} ({_brief_config(config)}) was asked for "
                                     "outside a declared job; obtain it as jobs.artifact(spec) with the spec its "
                                     "chapter's jobs() lists")
        own = getattr(compute, "__module__", "") or ""
        modules = tuple(code) if code is not None else (*CODE_MODULES, *([own] if own.startswith("repro.") else []))
        stamp = code_fingerprint(tuple(sorted(set(modules))))
        if self.read_only:
            return self._load_only(kind, path, stamp, codec)
        mine = self.compute_kinds is None or kind in self.compute_kinds
        with self.store.lock(path):
            self.store.clean_temps(path)  # .<hash>.safetensors.*.tmp / .<hash>.json.*.tmp of a killed write
            problem = "absent"
            try:
                value, meta = codec.load(path)
                problem = stale_reason(meta, stamp)
                if problem is None:
                    self._note(kind, path, False)
                    return codec.to(value, self.device), meta
            except FileNotFoundError:
                pass
            except ArtifactError as e:
                problem = e.reason
            if not mine:  # an upstream artifact of a job: never computed (nor moved) on this path
                raise StoreMiss(kind, path, problem, f"not this job's artifact ({sorted(self.compute_kinds)})")
            if problem != "absent":
                self.store.quarantine(path, problem)
            self._note(kind, path, True)
            self.restore_pre()
            try:
                value, meta = compute()
            finally:
                self.restore_pre()
            check_finite(codec.tensors(value), f"{kind} artifact (not cached)")
            codec.save(path, value, {**meta, "config": config, STORE_FIELD: {"code": stamp, "keys": KEY_SCHEME}})
            stored, stored_meta = codec.load(path)
            return codec.to(stored if codec.reload else value, self.device), stored_meta

    def _note(self, kind: str, path: Path, computed: bool) -> None:
        self.__dict__.setdefault("ledger", []).append({"kind": kind, "path": str(path), "computed": computed})

    def _load_only(self, kind: str, path: Path, stamp: Mapping[str, Any], codec: Codec[T]) -> tuple[T, dict]:
        """:meth:`cached` on a read-only store: the stored, current entry, else :class:`StoreMiss`."""
        try:
            value, meta = codec.load(path)
            problem = stale_reason(meta, stamp)
        except FileNotFoundError:
            problem = "absent"
        except ArtifactError as e:
            problem = e.reason
        if problem is not None:
            raise StoreMiss(kind, path, problem, "read-only store")
        self._note(kind, path, False)
        return codec.to(value, self.device), meta

    # --- fine-tuning -----------------------------------------------------------------------------------
    def finetune(self, tasks: str | Sequence[str], recipe: FinetuneRecipe | None = None, **kw: Any
                 ) -> dict[str, torch.Tensor]:
        """τ of :meth:`finetune_run` (without its metadata)."""
        return self.finetune_run(tasks, recipe, **kw)[0]

    def finetune_run(self, tasks: str | Sequence[str], recipe: FinetuneRecipe | None = None, *, k: int | None = None,
                 trainable: str | Mask = "graftable", l1_lambda: float = 0.0, linearized: bool = False,
                 seed: int | None = None, tag: str = "") -> tuple[dict[str, torch.Tensor], dict]:
        """(τ = θ_ft − θ_pre, metadata) of a (cached) fine-tuning run.  ``trainable``: a scope name or a Mask.

        Several tasks = one multi-task model (P1 §5).  τ is dense over the trained tensors; the cache stores it
        sparsely (only changed entries).  ``meta["train"]`` is the run's log (best step, seconds, trainable count).
        """
        tasks = [tasks] if isinstance(tasks, str) else list(tasks)
        recipe = self.p1_recipe(tasks, recipe, k=k)
        seed = self.seed if seed is None else seed
        datas = {t: self.task(t, k=k, seed=seed) for t in tasks}
        mask_key = trainable if isinstance(trainable, str) else f"mask:{trainable.count()}:{trainable.digest()}"
        config = {**finetune_fields(tasks, k or self.profile.k_shot, seed, recipe, mask_key, l1_lambda, linearized, tag,
                                    "linear" if self.linear_heads else "zero-shot"),
                  **self.data_key(), **self.precision_key()}
        heads = [n for t in tasks for n in self.model.head_names(t)] if self.linear_heads else []

        def compute() -> tuple[dict[str, torch.Tensor], dict]:
            sel: Sequence[str] | Mask = self.names(trainable) if isinstance(trainable, str) else trainable
            if heads and isinstance(sel, list):
                sel = list(sel) + heads
            res: TrainResult = train(self.model, {t: d.train for t, d in datas.items()}, recipe, sel,
                                     dev_data={t: d.dev for t, d in datas.items()}, seed=seed, l1_lambda=l1_lambda,
                                     linearized=linearized)
            own = dict(self.model.named_parameters())
            vec = {n: (p.detach() - self.pre[n]) for n, p in own.items()
                   if n in self.pre and not torch.equal(p.detach(), self.pre[n])}
            vec.update({n: own[n].detach().clone() for n in heads})  # trained linear heads, stored whole
            return vec, {"train": {"best_step": res.best_step, "best_dev": res.best_dev,
                                   "trainable_count": res.trainable_count, "seconds": res.seconds,
                                   "history": res.history[-1:] if res.history else []}}

        stored, meta = self.cached("taskvec", config, compute, VECTOR)
        if heads:
            self._load_heads({n: stored[n] for n in heads})
        return {n: v for n, v in stored.items() if n not in heads}, meta

    def p1_recipe(self, tasks: str | Sequence[str], recipe: FinetuneRecipe | None = None,
                  k: int | None = None) -> FinetuneRecipe:
        """``recipe`` (default the profile's P1 recipe) with a ``steps = 0`` resolved to the profile's P1 step budget
        for ``tasks`` at ``k`` examples per label (:meth:`repro.profiles.Profile.p1_recipe`)."""
        recipe = recipe or self.profile.p1_finetune
        if recipe.steps:
            return recipe
        tasks = [tasks] if isinstance(tasks, str) else list(tasks)
        specs = getattr(self.model, "specs", {})
        labels = [specs[t].num_labels if t in specs else get_spec(t).num_labels for t in tasks]
        return self.profile.p1_recipe(labels, k or self.profile.k_shot, recipe)

    def _load_heads(self, heads: Mapping[str, torch.Tensor]) -> None:
        with torch.no_grad():
            own = dict(self.model.named_parameters())
            for n, v in heads.items():
                own[n].copy_(v.to(own[n].device))

    # --- evaluation ------------------------------------------------------------------------------------
    def overrides(self, vector: Mapping[str, torch.Tensor] | None, alpha: float = 1.0,
                  mask: Mask | None = None) -> dict[str, torch.Tensor] | None:
        """θ_pre + α·(mask ⊙ τ) as overrides (None = the pre-trained model)."""
        if vector is None:
            return None
        check_pair(self.pre, vector, "task vector (overrides)", dtypes=False)
        if mask is not None:  # stored vectors omit tensors that did not move: those are zeros here
            return grafted_params(self.model, {n: alpha * vector.get(n, torch.zeros_like(self.pre[n]))
                                               for n in mask.shapes}, mask)
        return {n: self.pre[n] + alpha * v for n, v in vector.items()}

    def predict(self, task: str, split: str = "test", overrides: Mapping[str, torch.Tensor] | None = None,
                examples: Sequence[Example] | EvalSet | None = None, **kw: Any) -> Predictions:
        data = self.task(task, **{k: v for k, v in kw.items() if k in ("k", "seed")})
        ex = examples if examples is not None else data.split(split)
        run = self.predictions.predict if PredictionMemo.applies(ex) else predict
        return run(self.model, ex, task, overrides, batch_size=self.profile.eval_batch_size,
                   linear_base=kw.get("linear_base"))

    def evaluate(self, task: str, split: str = "test", overrides: Mapping[str, torch.Tensor] | None = None,
                 **kw: Any) -> dict[str, float]:
        pred = self.predict(task, split, overrides, **kw)
        return score(pred, self.model.specs[task].metric)

    # --- grafting --------------------------------------------------------------------------------------
    def graft(self, task: str, vector: Mapping[str, torch.Tensor], base: float | Mask, *, k: int | None = None,
              recipe: GraftRecipe | None = None, scope: str = "graftable", seed: int | None = None,
              tag: str = "") -> tuple[Mask, dict]:
        """A learned graft region (cached): P1 Eq. 2-4 on ``task``'s k-shot train/dev data.

        ``recipe`` (None: the profile's ``graft``) is the whole graft setting, built once by the chapter's plan
        (e.g. the γ_base = ∅ regions of P1 §5, which start with every σ(S − b) ≈ 0 and need a larger step).
        """
        p = self.profile
        recipe = p.graft if recipe is None else recipe
        seed = self.seed if seed is None else seed
        data = self.task(task, k=k, seed=seed)
        names = self.names(scope)
        check_pair(self.pre, vector, "task vector (grafting)", dtypes=False)
        absent = [n for n in names if n not in vector]
        if absent:  # stored vectors omit tensors that did not move; say so, since a dropped tensor looks the same
            warnings.warn(f"graft {task}: the task vector has no tensor for {len(absent)} of {len(names)} {scope} "
                          f"tensors (e.g. {absent[:2]}); they count as zero movement", RuntimeWarning, stacklevel=2)
        delta = {n: vector[n] if n in vector else torch.zeros_like(self.pre[n]) for n in names}
        base_key = base if isinstance(base, (int, float)) else f"mask:{base.count()}:{base.digest()}"
        config = {**graft_fields(task, k or p.k_shot, seed, base_key, scope, recipe, tag),
                  "vector": tensor_digest(delta)}

        def compute() -> tuple[Mask, dict]:
            res: GraftResult = learn_graft(self.model, task, delta, data.train, data.dev, base, recipe, seed=seed,
                                           eval_batch_size=p.eval_batch_size)
            return res.mask, {"history": res.history, "best_step": res.best_step, "base_count": res.base_count,
                              "count": res.mask.count(), "density": res.mask.density(), **res.degenerate()}

        return self.cached("graft", config, compute, MASK)
