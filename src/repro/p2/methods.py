"""The P2 method zoo: one cached task vector per (task, fine-tuning method), shared by every P2 notebook.

:func:`finetune_method` turns ``(workbench, task, method)`` into the task vector τ = θ_t − θ_0 of that method,
trained at most once per profile/seed/data (cached in the :class:`~repro.workbench.Workbench` artifact store), so
§4.1, §5.1, §5.2, §5.3 and the appendix all evaluate exactly the same models.  The five methods of P2 Table 1
that *fine-tune* (the post-hoc methods TIES / TALL / DARE / Breadcrumbs re-use the ``"ft"`` vectors, see
:mod:`repro.core.taskvec`):

============  ===============  ====================================================================================
key           P2 name          what is trained (all with :func:`p2_recipe`: the AdamW + cosine recipe)
============  ===============  ====================================================================================
``ft``        Non-linear FT    the family's ``P2Family.ft_scope`` (:func:`ft_scope`): "all" on the paper's families,
                               every parameter the official FT trains (CLIP's image tower, T5's whole network);
                               "maskable" on the cpu / text families (backbone Linear + LayerNorm); the frozen
                               zero-shot heads stay at θ_0 either way, Ilharco et al. 2023
``linearized`` Linearized FT   the same tensors of the first-order Taylor model f(θ0) + J_θ0(θ − θ0)
                               (Ortiz-Jiménez et al. 2023; ``torch.func.jvp``)
``l-lora``    L-LoRA           LoRA on Q and V, r = 16, α = 32, each LoRA branch linearized (Tang et al. 2024; the
                               official code, spec D9): only B trains, A stays at its init; scale and init per family
                               (``P2Family.lora_style``: vision s = α, xavier / √r; NLP peft s = α/r); folded into
                               τ = s·B·A_0 over the Q/V weights and evaluated in the (non-linear) network
``lota``      LoTA             standard FT → mask of the top ``lota_density`` (10 %) entries by |τ_ft| → masked
                               re-fine-tuning from θ_0 (Panda et al. 2024; NLP code: non-selected entries frozen)
``talos``     TaLoS            P2 Alg. 1: :func:`repro.core.fisher.talos_calibrate` on the task's own inputs
                               (:func:`calibration_examples`: the held-out split in the paper families)
                               (sampled labels, ``talos.rounds`` rounds, exponential schedule, soft value
                               ``talos.soft_value``) → fine-tune only the ``1 − talos.sparsity`` least-sensitive
                               entries (the others are bitwise frozen, spec D4)
============  ===============  ====================================================================================

Evaluation: the linearized method (``linearized``) lives in the tangent space; its models (single
or merged) are the *linearized* network at θ_0 + α·Σ τ, i.e. ``wb.predict(..., linear_base=linear_base(wb, τ))``.
L-LoRA linearizes its LoRA branches only, so its models are the network itself at θ_0 + α·Σ τ.
The α grid of task arithmetic is ``profile.alphas``, and for
the sparse methods it is stretched by 1/(1 − k), k the method's sparsity (P2 App. A.1, :func:`method_sparsity`).
The task-arithmetic protocol itself (Tables 1, 2, 5) is :mod:`repro.p2.arithmetic`.
"""

from __future__ import annotations

import contextlib
import time
import warnings
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any, Iterator, Mapping

import torch

from repro.data import balanced_sample
from repro.core.masks import Mask
from repro.profiles import FinetuneRecipe, P2Family, Profile
from repro.core.adapters import lora_finetune, lora_targets
from repro.core.fisher import lota_mask, talos_calibrate
from repro.workbench import MASK, VECTOR
from repro.jobcall import recipe_of, register_driver, register_trainable

if TYPE_CHECKING:  # pragma: no cover
    from repro.workbench import Workbench

LOTA_DENSITY = 0.1  # LoTA default d = 0.1 (spec D9), the same budget as TaLoS at 90 % sparsity
LORA_RANK, LORA_ALPHA = 16, 32.0  # L-LoRA defaults of the official code (spec D9)


@dataclass(frozen=True)
class MethodSpec:
    """One P2 fine-tuning method: its key, the name the paper prints, and how its task vectors are evaluated."""

    key: str
    label: str  # as printed in P2 Table 1
    family: str  # "Full fine-tuning" | "Parameter-efficient" (P2 Table 1 groups)
    linear: bool = False  # evaluated as the linearized network around θ_0
    sparse: bool = False  # a sparse-FT method: α range × 1/(1 − k)


METHODS: dict[str, MethodSpec] = {
    "ft": MethodSpec("ft", "Non-linear FT", "Full fine-tuning"),
    "linearized": MethodSpec("linearized", "Linearized FT", "Full fine-tuning", linear=True),
    "l-lora": MethodSpec("l-lora", "L-LoRA", "Parameter-efficient"),  # branch-linearized: the network is not
    "lota": MethodSpec("lota", "LoTA", "Parameter-efficient", sparse=True),
    "talos": MethodSpec("talos", "TaLoS", "Parameter-efficient", sparse=True),
}
P2_METHODS: tuple[str, ...] = tuple(METHODS)


def method_spec(method: str) -> MethodSpec:
    """The :class:`MethodSpec` of ``method`` (fails naming the valid keys)."""
    if method not in METHODS:
        raise ValueError(f"unknown P2 method {method!r}; choose one of {list(METHODS)}")
    return METHODS[method]


def p2_recipe(profile: Profile, method: str | None = None) -> FinetuneRecipe:
    """The P2 fine-tuning recipe of ``method`` in ``profile``: ``profile.p2_finetune`` (AdamW + cosine, shared by
    every method), with the learning rate of ``profile.p2_method_lr`` where that lists the method."""
    recipe = profile.p2_finetune
    lrs = dict(profile.p2_method_lr)
    unknown = sorted(set(lrs) - set(METHODS))
    if unknown:
        raise ValueError(f"profile {profile.name!r}: p2_method_lr names unknown P2 methods {unknown}; "
                         f"choose from {list(METHODS)}")
    if method is not None and method_spec(method).key in lrs:
        recipe = replace(recipe, lr=float(lrs[method]))
    return recipe


def p2_family(profile: Profile) -> P2Family | None:
    """The :class:`~repro.profiles.P2Family` a (``Profile.for_p2``) profile runs; None for the "text" family."""
    name = profile.p2_model_family
    return None if name == "text" else profile.family(name)


def family_setting(profile: Profile, name: str) -> Any:
    """A per-family baseline setting of P2Family (``tall_lambda``, ``lora_style``): the profile's family's value,
    else (the "text" family) P2Family's default, the official NLP code's."""
    fam = p2_family(profile)
    return getattr(fam if fam is not None else P2Family, name)


def ft_scope(profile: Profile) -> str:
    """The Workbench scope P2's FT and Linearized FT train (:attr:`repro.profiles.P2Family.ft_scope`): "all" for the
    paper's families (every parameter the official FT trains), "maskable" for the "text" family and the cpu one."""
    return family_setting(profile, "ft_scope")


def describe_lrs(profile: Profile) -> str:
    """The P2 learning rates in words: ``3e-4`` (one shared rate), or ``3e-4; TaLoS and L-LoRA 3e-3``."""
    shared = f"{profile.p2_finetune.lr:g}"
    by_lr: dict[float, list[str]] = {}
    for method, lr in profile.p2_method_lr:
        by_lr.setdefault(float(lr), []).append(method_spec(method).label)
    own = "; ".join(f"{' and '.join(labels)} {lr:g}" for lr, labels in by_lr.items())
    return f"{shared}; {own}" if own else shared


# --- masks -----------------------------------------------------------------------------------------------
def _data_config(wb: "Workbench", task: str, seed: int) -> dict:
    return {"task": task, "k": wb.profile.k_shot, "seed": seed, **wb.data_key()}


def calibration_examples(wb: "Workbench", task: str, n: int | None = None, seed: int | None = None) -> list:
    """The inputs TaLoS (and the §4.1 sensitivity analysis) score parameters on: a label-balanced subset of
    ``n`` (default ``profile.talos.calibration_examples``) of the task's ``profile.talos.calibration_split``:
    "dev" in the paper families, as the official code (vision: the held-out ``<Task>Val`` split, ≤ 5000; T5: the 32
    validation examples), "train" (the k-shot training examples) in the cpu / smoke profiles.

    Labels are not used (Eq. 7 samples ŷ from the model), so only the task's own inputs are needed.
    """
    seed = wb.seed if seed is None else seed
    n = wb.profile.talos.calibration_examples if n is None else n
    return balanced_sample(wb.task(task, seed=seed).split(wb.profile.talos.calibration_split), n, seed=seed)


def calibration_key(wb: "Workbench") -> dict:
    """The calibration split as a cache-key entry ({} for "train", so earlier keys stay valid)."""
    split = wb.profile.talos.calibration_split
    return {} if split == "train" else {"calibration_split": split}


@contextlib.contextmanager
def calibration_preprocessing(wb: "Workbench", seed: int) -> Iterator[None]:
    """The inputs' preprocessing during calibration: with the "dev" split (the official code's), the model's
    *training* preprocessing (the official vision calibration loads ``<Task>Val`` with the train transform; text
    and T5 batches do not depend on it), augmented under ``seed``; otherwise as it is."""
    if wb.profile.talos.calibration_split != "dev":
        yield
        return
    was = wb.model.training
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        wb.model.train()  # only tokenize reads it: the Fisher's forward/backward run in eval mode (core.fisher)
        try:
            yield
        finally:
            wb.model.train(was)


def talos_mask(wb: "Workbench", task: str, seed: int | None = None, sparsity: float | None = None,
               progress: bool = False) -> tuple[Mask, dict]:
    """P2 Alg. 1 l.3-26: TaLoS trainable mask of ``task`` (True = least sensitive, trainable), cached.

    Returns the mask and its metadata (calibration report: per-round densities/thresholds, seconds).
    """
    p = wb.profile
    seed = wb.seed if seed is None else seed
    sparsity = p.talos.sparsity if sparsity is None else sparsity
    target = p.talos.target  # "logprob" (cpu/smoke), "logit" (CLIP raw logit), "sequence-loglik" (T5)
    config = {"kind": "talos", "sparsity": sparsity, "rounds": p.talos.rounds, "soft": p.talos.soft_value,
              "n": p.talos.calibration_examples, "target": target, **_data_config(wb, task, seed),
              **({"exclude_zero": True} if p.talos.exclude_zero else {}),
              **calibration_key(wb)}

    def compute() -> tuple[Mask, dict]:
        examples = calibration_examples(wb, task, seed=seed)
        start = time.perf_counter()
        with calibration_preprocessing(wb, seed):
            mask, report = talos_calibrate(wb.model, examples, task, wb.names("maskable"), sparsity=sparsity,
                                           rounds=p.talos.rounds, soft_value=p.talos.soft_value, target=target,
                                           seed=seed, progress=progress, exclude_zero=p.talos.exclude_zero)
        return mask, {"report": report.to_dict(), "seconds": time.perf_counter() - start}

    return wb.cached("mask", config, compute, MASK)


def lota_mask_from(wb: "Workbench", tau: Mapping[str, torch.Tensor], density: float = LOTA_DENSITY) -> Mask:
    """LoTA mask of an FT task vector ``tau``: its top-``density`` maskable entries by |τ| (absent tensors: 0)."""
    full = {n: tau.get(n, torch.zeros_like(wb.pre[n])) for n in wb.names("maskable")}
    return lota_mask(full, density)


# --- fine-tuning -----------------------------------------------------------------------------------------
def _l_lora(wb: "Workbench", task: str, recipe: FinetuneRecipe, seed: int) -> tuple[dict[str, torch.Tensor], dict]:
    data = wb.task(task, seed=seed)
    style = family_setting(wb.profile, "lora_style")
    # "scope": each LoRA branch linearized (only B trains), as the official code; the former whole-network
    # linearization in the LoRA parameters is gone, so its cached vectors are not reused
    config = {"kind": "l-lora", "rank": LORA_RANK, "alpha": LORA_ALPHA, "targets": list(lora_targets(wb.model)),
              "style": style, "scope": "branch", "recipe": asdict(recipe), **_data_config(wb, task, seed),
              **wb.precision_key()}

    def compute() -> tuple[dict[str, torch.Tensor], dict]:
        with warnings.catch_warnings():  # peft notes the config left by an earlier (already removed) injection
            warnings.filterwarnings("ignore", message="Already found a `peft_config` attribute")
            tau, res = lora_finetune(wb.model, {task: data.train}, recipe, rank=LORA_RANK, alpha=LORA_ALPHA,
                                     dev_data={task: data.dev}, linearized=True, seed=seed, progress=False,
                                     style=style)
        return tau, {"train": {"best_step": res.best_step, "best_dev": res.best_dev,
                               "trainable_count": res.trainable_count, "seconds": res.seconds}}

    return wb.cached("taskvec", config, compute, VECTOR)


def finetune_method(wb: "Workbench", task: str, method: str, *, seed: int | None = None,
                    recipe: FinetuneRecipe | None = None) -> dict[str, torch.Tensor]:
    """τ of ``method`` (a key of :data:`METHODS`) fine-tuned on ``task``'s k-shot training split (cached).

    Training uses ``recipe`` (default :func:`p2_recipe` of the method: the shared ``profile.p2_finetune``, with a
    per-method lr where ``profile.p2_method_lr`` gives one).  τ is dense over the tensors the
    method changed; :func:`finetune_method_run` also returns the run's log.
    """
    return finetune_method_run(wb, task, method, seed=seed, recipe=recipe)[0]


def finetune_method_run(wb: "Workbench", task: str, method: str, *, seed: int | None = None,
                        recipe: FinetuneRecipe | None = None) -> tuple[dict[str, torch.Tensor], dict]:
    """(τ, metadata) of :func:`finetune_method`; ``meta["train"]`` has the seconds and trainable count."""
    spec = method_spec(method)
    seed = wb.seed if seed is None else seed
    recipe = recipe or p2_recipe(wb.profile, spec.key)
    if spec.key == "ft":
        return wb.finetune_run(task, recipe, trainable=ft_scope(wb.profile), seed=seed, tag="p2")
    if spec.key == "linearized":
        return wb.finetune_run(task, recipe, trainable=ft_scope(wb.profile), linearized=True, seed=seed, tag="p2")
    if spec.key == "l-lora":
        return _l_lora(wb, task, recipe, seed)
    if spec.key == "lota":
        mask = lota_mask_from(wb, finetune_method(wb, task, "ft", seed=seed))
        return wb.finetune_run(task, recipe, trainable=mask, seed=seed, tag="p2-lota")
    mask, _ = talos_mask(wb, task, seed=seed)
    return wb.finetune_run(task, recipe, trainable=mask, seed=seed, tag="p2-talos")


# --- sparsity, evaluation ---------------------------------------------------------------------------------
def method_sparsity(wb: "Workbench", method: str) -> float:
    """The sparsity k a method is configured for (P2 App. A.1's α range × 1/(1 − k)): 0 for dense methods,
    ``profile.talos.sparsity`` for TaLoS, 1 − ``LOTA_DENSITY`` for LoTA (fractions of the maskable set)."""
    spec = method_spec(method)
    if not spec.sparse:
        return 0.0
    return wb.profile.talos.sparsity if method == "talos" else 1.0 - LOTA_DENSITY


def linear_base(wb: "Workbench", vector: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """θ_0 restricted to the tensors of ``vector``: the expansion point of a linearized method's model, to pass as
    ``wb.predict(..., linear_base=...)`` (the tensors outside ``vector`` have zero tangent, so this is exact)."""
    return {n: wb.pre[n] for n in vector}


register_driver("repro.p2.methods.finetune_method_run",
                lambda wb, k, value: finetune_method_run(wb, k["task"], k["method"], seed=k["seed"],
                                                         recipe=recipe_of(k["recipe"])))
register_driver("repro.p2.methods.talos_mask",
                lambda wb, k, value: talos_mask(wb, k["task"], seed=k["seed"], sparsity=k["sparsity"]))
# a LoTA fine-tune trains the top-|τ_ft| mask of the task's FT run: its kwargs say {"lota_of": ref(ft), "density": d}
register_trainable("lota_of", lambda wb, k, given: lota_mask_from(wb, given["lota_of"], given["density"]))
