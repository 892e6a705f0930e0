"""How the cost grows and where the limit is.

- :func:`scaling_rows` — graft step and Fisher round time against the number of eligible parameters, on copies of
  the model truncated to fewer transformer blocks (MiniLM with 2/4/6 layers), with the fitted exponent b of
  time ≈ a · n^b (least squares in log-log).
- :func:`flops_rows` — the model's forward + backward FLOPs (``torch.utils.flop_counter``) over its measured
  time, beside the machine's measured matmul rate (a large ``torch.mm`` in the same run).
- :func:`book_rebuild_row` — ``repro book --profile cpu`` with every notebook cached, timed in a subprocess,
  when a built cpu book exists (otherwise the row says "not measured").
"""

from __future__ import annotations

import copy
import math
import os
import subprocess
import sys
import time
from typing import Any, Sequence

import torch
from torch.utils.flop_counter import FlopCounterMode

from repro.bench.measure import timed
from repro.bench.pairs import Setup, graft_pair, official_fisher_round, trainable
from repro.core.fisher import diagonal_fisher
from repro.bench.rows import make_row
from repro.paths import resolve_path
from repro.runner.notebooks import book_notebooks


def fit_exponent(sizes: Sequence[float], times: Sequence[float]) -> float | None:
    """b of time ≈ a · size^b by least squares on (log size, log time); None with fewer than 2 valid points."""
    pts = [(math.log(n), math.log(t)) for n, t in zip(sizes, times) if n > 0 and t > 0]
    if len(pts) < 2:
        return None
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    return None if sxx == 0 else sum((x - mx) * (y - my) for x, y in pts) / sxx


def blocks(model: torch.nn.Module) -> torch.nn.ModuleList:
    """The model's list of transformer blocks (BERT encoder layers or CLIP residual blocks)."""
    backbone = model.backbone
    if hasattr(backbone, "encoder"):
        return backbone.encoder.layer
    return backbone.visual.transformer.resblocks


def truncated(model: torch.nn.Module, layers: int) -> torch.nn.Module:
    """A deep copy of ``model`` keeping its first ``layers`` transformer blocks."""
    out = copy.deepcopy(model)
    kept = blocks(out)
    if not 1 <= layers <= len(kept):
        raise ValueError(f"layers must be in [1, {len(kept)}], got {layers}")
    del kept[layers:]
    if hasattr(out.backbone, "config"):
        out.backbone.config.num_hidden_layers = layers
    return out


def scaling_rows(s: Setup, layers: Sequence[int] = (2, 4, 6), with_loop: bool = False,
                 full_depth: dict | None = None) -> tuple[list[dict], list[dict]]:
    """(points: one per depth with its parameter counts and times, exponent rows).  Times: one graft step, one
    plain FT forward + backward, one vmap Fisher round (and the official per-example loop with ``with_loop``).
    ``full_depth`` = those times already measured on the whole model (the pairs' rows): not measured again."""
    points = []
    depth = len(blocks(s.model))
    for k in [k for k in layers if k <= depth]:
        if k == depth and full_depth is not None:
            model = s.model
            points.append({"model": s.label, "device": s.device, "layers": k,
                           "eligible": sum(model.get_parameter(n).numel() for n in model.graftable_names()),
                           "maskable": sum(model.get_parameter(n).numel() for n in model.maskable_names()),
                           **full_depth, "seconds": 0.0})
            continue
        sub = Setup(**{**s.__dict__, "model": truncated(s.model, k), "cache": {}})
        names = sub.model.maskable_names()
        calib = sub.examples[: sub.n_calibration]
        t0 = time.perf_counter()
        graft, plain_ft, sizes = graft_pair(sub)
        fisher = lambda: diagonal_fisher(sub.model, calib, sub.task, names, batch_size=16, method="vmap",  # noqa: E731
                                         progress=False)
        point = {"model": s.label, "device": s.device, "layers": k, "eligible": sizes["eligible"],
                 "maskable": sum(sub.model.get_parameter(n).numel() for n in names),
                 "graft_step_s": timed(graft, s.device, repeats=1, warmup=1),
                 "ft_fwd_bwd_s": timed(plain_ft, s.device, repeats=1, warmup=1),
                 "fisher_round_s": timed(fisher, s.device, repeats=1, warmup=1)}
        if with_loop:
            point["fisher_loop_s"] = timed(lambda: official_fisher_round(sub.model, calib, sub.task, names),
                                           s.device, repeats=1, warmup=0)
        point["seconds"] = round(time.perf_counter() - t0, 2)
        points.append(point)
        del sub
    rows = []
    spent = round(sum(p["seconds"] for p in points), 2)
    series = [("graft_step_s", "graft step", "eligible"), ("ft_fwd_bwd_s", "plain FT fwd+bwd", "eligible"),
              ("fisher_round_s", "Fisher round (vmap)", "maskable")]
    if with_loop:
        series.append(("fisher_loop_s", "Fisher round (official loop)", "maskable"))
    for key, label, size in series:
        b = fit_exponent([p[size] for p in points], [p[key] for p in points])
        rows.append(make_row(f"scaling exponent, {label}", b, None, "exponent", device=s.device, model=s.label,
                             ratio_def="b in time ≈ a·n^b", seconds=spent,
                             note=f"{len(points)} depths {[p['layers'] for p in points]}, n = {size} parameters"))
    return points, rows


def matmul_peak_gflops(device: str, n: int | None = None, repeats: int = 3) -> float:
    """Achieved GFLOP/s of an ``n × n`` float32 ``torch.mm`` (best of ``repeats``): the machine's practical peak."""
    n = n or (8192 if torch.device(device).type == "cuda" else 2048)
    a = torch.randn(n, n, device=device)
    b = torch.randn(n, n, device=device)
    best = min(timed(lambda: torch.mm(a, b), device, repeats=1, warmup=1 if i == 0 else 0) for i in range(repeats))
    return 2 * n**3 / best / 1e9


def flops_rows(s: Setup) -> list[dict]:
    """The model's forward + backward GFLOP/s (trainable = maskable set) beside the measured matmul peak."""
    model, names, ex = s.model, s.model.maskable_names(), s.batch
    model.train()

    def fwd_bwd():
        with trainable(model, names):
            batch = model.tokenize(s.task, ex)
            loss = torch.nn.functional.cross_entropy(model(batch, s.task), batch["labels"])
            loss.backward()

    t0 = time.perf_counter()
    with FlopCounterMode(display=False) as counter:
        fwd_bwd()
    flops = counter.get_total_flops()
    t = timed(fwd_bwd, s.device, s.repeats, s.warmup)
    model.eval()
    achieved = flops / t / 1e9
    peak = matmul_peak_gflops(s.device)
    return [make_row("fwd+bwd GFLOP/s vs torch.mm peak", achieved, peak, "GFLOP/s", device=s.device, model=s.label,
                     ratio_def="fraction of the measured matmul peak",
                     seconds=round(time.perf_counter() - t0, 2),
                     note=f"{flops / 1e9:.2f} GFLOP per fwd+bwd (matmuls, counted), {t:.4f} s, batch {len(ex)}, "
                          f"{torch.get_num_threads()} threads")]


def book_rebuild_row(profile: str = "cpu", output_dir: str = "results", timeout: float = 600.0) -> dict[str, Any]:
    """Seconds of an unchanged ``repro book --profile <profile>`` rebuild (all notebooks cached), target ≤ 60 s.

    Measured only when every book notebook has an executed copy and a cache record for the profile; otherwise
    the row carries ``ours = None`` and says how to produce a built book first.
    """
    root = resolve_path(output_dir) / profile
    names = book_notebooks()
    missing = [n for n in names if not all((root / f"{n}{ext}").exists() for ext in (".json", ".ipynb", ".cache.json"))]
    row = dict(name=f"{profile} book unchanged rebuild", unit="s", device="cpu", model=profile, target=60.0,
               ratio_def="seconds")
    if missing:
        return make_row(row.pop("name"), None, None, row.pop("unit"), **row, seconds=0.0,
                        note=f"not measured: no built {profile} book in {root} ({len(missing)} of {len(names)} "
                             f"notebooks not executed, e.g. {missing[0]}); run `repro book --profile {profile}` "
                             "once, then `repro bench` again")
    cmd = [sys.executable, "-m", "repro.runner.cli", "book", "--profile", profile,
           "--output-dir", str(resolve_path(output_dir))]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=dict(os.environ))
    spent = time.perf_counter() - t0
    ran = proc.stdout.count(" ran in ")
    note = (f"`repro book --profile {profile}` in a subprocess, exit {proc.returncode}, {ran} notebooks re-executed"
            + ("" if proc.returncode == 0 else f": {proc.stderr.strip().splitlines()[-1:]}"))
    ok = proc.returncode == 0
    return make_row(row.pop("name"), spent if ok else None, None, row.pop("unit"), **row,
                    ratio=spent if ok else None, seconds=round(spent, 2), note=note)
