"""P2 Table 3-4 drivers: the cost of one training iteration of every P2 method, and of TaLoS / LoTA mask
calibration, each measured in a fresh process on the P2 method zoo's own trainable sets.

- :func:`iteration_costs` — Table 3: for each method of :mod:`repro.p2.methods` the trainable set it really trains
  (dense maskable tensors; the linearized model; linearized LoRA on Q/V; the cached LoTA / TaLoS masks) is timed
  with :func:`repro.p2.cost.measure_iteration` (forward-backward, optimizer step, total, peak memory) in its own
  spawned process, so peak memory is not polluted by the other methods.
- :func:`calibration_cost` — Table 4: TaLoS calibration (:func:`repro.p2.methods.talos_mask`, i.e. exactly the
  zoo's call) timed and memory-profiled in a fresh process.  LoTA's calibration in the paper is a short dense
  fine-tuning (40 iterations, as many as TaLoS's calibration batches); :func:`table4_rows` derives it from the
  measured non-linear FT iteration (same number of iterations as our TaLoS calibration makes).

Peak memory is :class:`repro.device.PeakMemory` around the measured block: on the CPU the peak resident set size
above the resident size when the block starts; on a GPU ``torch.cuda.max_memory_allocated``.
"""

from __future__ import annotations

import math
import multiprocessing as mp
from concurrent.futures import ProcessPoolExecutor
import tempfile
import time
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence
import inspect

from repro.p2.cost import IterationCost, PeakMemory, measure_iteration, ratios
from repro.core.masks import Mask
from repro.core.adapters import inject_lora as _inject, lora_b_names
from repro.core.fisher import talos_calibrate
from repro.p2.methods import (LORA_ALPHA, LORA_RANK, METHODS, calibration_examples, family_setting, ft_scope,
                              method_spec, p2_recipe, talos_mask)
from repro.p2.zoo import lota_mask_of, talos_mask_of
from repro.profiles import get_profile
from repro.report.reference import load_reference
from repro.workbench import Workbench

if TYPE_CHECKING:  # pragma: no cover
    from repro.jobs import Artifacts
    from repro.profiles import Profile

#: P2 Table 3 rows, in print order (keys of :data:`repro.p2.methods.METHODS`)
TABLE3_METHODS: tuple[str, ...] = ("ft", "linearized", "l-lora", "lota", "talos")
COST_KEYS: tuple[str, ...] = ("fwd_bwd_s", "optim_step_s", "total_iter_s", "peak_memory_gib")
#: our cost keys → P2 Table 3 metric names (book/reference/talos_table3.csv)
PAPER_METRIC: dict[str, str] = {"fwd_bwd_s": "fwd_bwd_time", "optim_step_s": "optim_step_time",
                                "total_iter_s": "total_iter_time", "peak_memory_gib": "peak_memory"}


def _spawn(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` in a fresh process; a process that dies (killed, out of memory) raises ``BrokenProcessPool``
    instead of leaving the caller waiting (a ``multiprocessing.Pool`` would wait forever)."""
    with ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as pool:
        return pool.submit(fn, *args).result()


def _workbench(profile: "str | Profile", data_dir: str | None, seed: int, device: str | None,
               root: str) -> "Workbench":
    """A fresh workbench whose artifact store is the throw-away folder ``root`` (the shared cache is not touched),
    on ``device`` (None: the profile's; :mod:`repro.device` moves the model and θ_pre)."""
    prof = get_profile(profile) if isinstance(profile, str) else profile  # a P2 family's profile is passed whole
    wb = Workbench(prof.with_device(device), data_dir=data_dir, artifacts_dir=root, seed=seed)
    wb.read_only = False  # a measurement's own throw-away store, also under `repro run --read-only-store`
    return wb


def inject_lora(model, rank: int, alpha: float, style: str = "peft") -> list[str]:
    """Insert LoRA on Q and V of the backbone (as :func:`repro.core.adapters.lora_finetune` does); the names L-LoRA
    trains (the B factors: each branch is linearized around B_0 = 0, so A gets no gradient)."""
    names, _, _ = _inject(model, rank, alpha, style=style)
    return lora_b_names(names)


def _iteration_child(profile: str, data_dir: str | None, seed: int, task: str, method: str, mask: Mask | None,
                     iterations: int, warmup: int, device: str | None) -> IterationCost:
    with tempfile.TemporaryDirectory(prefix="repro-cost-") as root:
        return _measure_method(_workbench(profile, data_dir, seed, device, root), task, method, mask, iterations,
                               warmup, device)


def _measure_method(wb: "Workbench", task: str, method: str, mask: Mask | None, iterations: int, warmup: int,
                    device: str | None) -> IterationCost:
    data = wb.task(task)
    recipe = p2_recipe(wb.profile, method)
    linearized = METHODS[method].linear
    if method == "l-lora":
        trainable: Sequence[str] | Mask = inject_lora(wb.model, LORA_RANK, LORA_ALPHA,
                                                      family_setting(wb.profile, "lora_style"))
        if device and device != "cpu":
            wb.model.to(device)
    elif method in ("lota", "talos"):
        if mask is None:
            raise ValueError(f"{method} needs its mask")
        trainable = mask
    else:  # FT and Linearized FT: the family's FT scope
        trainable = wb.names(ft_scope(wb.profile))
    return measure_iteration(wb.model, data.train, task, METHODS[method].label, trainable, recipe,
                             linearized=linearized, iterations=iterations, warmup=warmup)


def method_masks(jobs: "Artifacts", task: str, methods: Sequence[str] = TABLE3_METHODS,
                 seed: int | None = None) -> dict[str, Mask]:
    """The zoo's LoTA / TaLoS trainable masks of ``task`` at ``seed`` (None: ``jobs.wb.seed``), from the chapter's
    declared jobs (:func:`repro.p2.zoo.lota_mask_of`, :func:`repro.p2.zoo.talos_mask_of`; trained / calibrated
    if absent)."""
    seed = jobs.wb.seed if seed is None else seed
    out = {}
    if "lota" in methods:
        out["lota"] = lota_mask_of(jobs, task, seed)
    if "talos" in methods:
        out["talos"] = talos_mask_of(jobs, task, seed)
    return out


def iteration_costs(wb: "Workbench", task: str, masks: Mapping[str, Mask], methods: Sequence[str] = TABLE3_METHODS,
                    iterations: int = 10, warmup: int = 3, device: str | None = None,
                    subprocess: bool = True) -> list[dict]:
    """P2 Table 3: one :class:`~repro.p2.cost.IterationCost` row per method (each in a fresh process by default).

    The batch is the profile's P2 recipe batch size (``profile.p2_finetune.batch_size``) of ``task``'s
    training examples; ``masks``: the LoTA / TaLoS trainable masks of ``task`` (:func:`method_masks`);
    ``device`` defaults to the workbench model's device.
    """
    for m in methods:
        method_spec(m)
    missing = [m for m in methods if m in ("lota", "talos") and m not in masks]
    if missing:
        raise ValueError(f"iteration_costs needs the masks of {missing} (method_masks)")
    device = device or str(wb.model.device)
    data_dir = str(wb.data_dir) if wb.data_dir else None
    rows = []
    for m in methods:
        args = (wb.profile, data_dir, wb.seed, task, m, masks.get(m), iterations, warmup, device)
        cost = _spawn(_iteration_child, *args) if subprocess else _iteration_child(*args)
        rows.append({"key": m, **cost.as_row()})
    return rows


def _calibration_child(profile: str, data_dir: str | None, seed: int, task: str,
                       device: str | None) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="repro-cost-") as root:
        return _measure_calibration(_workbench(profile, data_dir, seed, device, root), task)


def _measure_calibration(wb: "Workbench", task: str) -> dict[str, float]:
    n_examples = len(calibration_examples(wb, task))
    with PeakMemory(wb.model.device) as memory:
        start = time.perf_counter()
        mask, meta = talos_mask(wb, task)
        wall = time.perf_counter() - start
    return {"seconds": float(meta.get("seconds", wall)), "wall": wall, "peak_memory_gib": memory.gib,
            "n_examples": n_examples, "density": mask.density()}


def calibration_cost(wb: "Workbench", task: str, device: str | None = None,
                     subprocess: bool = True) -> dict[str, float]:
    """P2 Table 4 (TaLoS "Mask" columns): seconds and peak memory of the zoo's TaLoS calibration of ``task``,
    recomputed from scratch in a fresh process (the shared cache is not touched)."""
    device = device or str(wb.model.device)
    args = (wb.profile, str(wb.data_dir) if wb.data_dir else None, wb.seed, task, device)
    return _spawn(_calibration_child, *args) if subprocess else _calibration_child(*args)


def calibration_iterations(n_examples: int, batch_size: int | None = None, rounds: int = 4) -> int:
    """Number of calibration batches TaLoS processes: ⌈n / batch⌉ per round × rounds (P2: 10 per round × 4).

    ``batch_size`` defaults to the one :func:`repro.core.fisher.talos_calibrate` uses when the zoo calls it.
    """
    if batch_size is None:
        batch_size = int(inspect.signature(talos_calibrate).parameters["batch_size"].default)
    return math.ceil(n_examples / batch_size) * rounds


def table4_rows(costs: Mapping[str, Mapping[str, float]], calibration: Mapping[str, float], steps: int,
                calib_iterations: int) -> dict[str, dict[str, float]]:
    """P2 Table 4 per method: mask / train / total seconds and mask / train / overall peak memory (GiB).

    ``costs[key]`` = Table 3 row of each method; train time = ``steps`` × its total iteration time.  TaLoS's mask
    columns are ``calibration`` (measured); LoTA's are ``calib_iterations`` non-linear FT iterations (the
    paper's LoTA calibration: as many dense FT iterations as TaLoS calibration batches) at FT's peak memory.
    Methods without a mask (FT, Linearized FT, L-LoRA) get None there, as the paper prints "-".
    """
    out: dict[str, dict[str, float]] = {}
    ft = costs["ft"]
    for key, c in costs.items():
        train_s = steps * c["total_iter_s"]
        mask_s = mask_mem = None
        if key == "talos":
            mask_s, mask_mem = calibration["seconds"], calibration["peak_memory_gib"]
        elif key == "lota":
            mask_s, mask_mem = calib_iterations * ft["total_iter_s"], ft["peak_memory_gib"]
        out[key] = {"mask_calibration_time": mask_s, "train_time": train_s,
                    "total_time": train_s + (mask_s or 0.0), "mask_calibration_peak_memory": mask_mem,
                    "train_peak_memory": c["peak_memory_gib"],
                    "overall_peak_memory": max(c["peak_memory_gib"], mask_mem or 0.0)}
    return {k: _finite(v) for k, v in out.items()}


# --- results rows next to the printed tables -----------------------------------------------------------------
def paper_ratios(table: int = 3, reference: str = "Non-linear FT") -> dict[tuple[str, str, str], float]:
    """Printed P2 Table 3 / 4 cells divided by the same model's non-linear FT cell: ``{(model, method, metric): r}``."""
    df = load_reference("p2", table)
    df = df[df["unit"].isin(["s", "GiB"])]
    ref = {(r.model, r.metric): r.value for r in df.itertuples() if r.method == reference}
    out = {}
    for r in df.itertuples():
        base = ref.get((r.model, r.metric))
        if base and base == base and r.value == r.value:
            out[(r.model, r.method, r.metric)] = float(r.value) / float(base)
    return out


def table3_rows(costs: Sequence[Mapping], task: str, paper_model: str = "ViT-B/32") -> tuple[list[dict], list[dict]]:
    """Results rows for P2 Table 3: (ratios to non-linear FT with the paper's ratios, our absolute costs).

    Ratio rows: ``value`` = ours, ``paper`` = the printed ratio of ``paper_model`` (closest in size to the cpu
    model), plus the other printed models' ratios as ``paper_<model>`` keys.  Absolute rows carry no ``paper``
    (different model and hardware) but keep std and unit.
    """
    printed = paper_ratios(3)
    models = sorted({m for m, _, _ in printed})
    ratio_rows, abs_rows = [], []
    for c, r in zip(costs, ratios(costs)):
        for key in COST_KEYS:
            metric = PAPER_METRIC[key]
            row = {"task": task, "method": c["method"], "sparsity": None, "metric": f"{metric}_ratio",
                   "value": r[f"{key}_ratio"], "std": None, "paper": printed.get((paper_model, c["method"], metric)),
                   "unit": "× FT", "paper_model": paper_model}
            for m in models:
                if m != paper_model:
                    row[f"paper_{m}"] = printed.get((m, c["method"], metric))
            ratio_rows.append(row)
            std_key = key[:-2] + "_std" if key.endswith("_s") else None
            abs_rows.append({"task": task, "method": c["method"], "sparsity": None, "metric": metric,
                             "value": c[key], "std": c.get(std_key) if std_key else None, "paper": None,
                             "unit": "s" if key.endswith("_s") else "GiB", "trainable": c["trainable"],
                             "optimizer_state": c["optimizer_state"]})
    return [_finite(r) for r in ratio_rows], [_finite(r) for r in abs_rows]


def _finite(row: dict) -> dict:
    """NaN / inf (e.g. a ratio to a zero CPU memory growth) as None, the results format's 'missing'."""
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in row.items()}
