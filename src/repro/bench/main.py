"""The ``repro bench`` command: build the models, run every pair, print each row's verdict (holds /
does-not-hold), write ``results/bench.json``.

``--quick`` (target ≤ 5 min on 2 idle cores) measures MiniLM with fewer repeats, one TaLoS round and a shorter α grid;
the full run does four TaLoS calibration rounds and more iterations.  ``--device cuda`` adds random-init
roberta-base-sized and ViT-B/32-sized models (their weights do not matter for cost) and fails with a clear
message when no GPU is available.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Callable, Sequence

import torch

from repro.bench.pairs import PAIRS, Setup, run_pairs
from repro.bench.rows import format_row, summary, write_bench
from repro.bench.scaling import blocks, book_rebuild_row, flops_rows, matmul_peak_gflops, scaling_rows
from repro.bench.steady import FULL_STEADY, QUICK_STEADY, steady_report
from repro.bench.hours import estimate_hours, hours_by_kind, total_hours
from repro.data import Example, TaskSpec
from repro.data.tasks import ImageExample
from repro.models.clip import CLIPImageClassifier
from repro.models.sentence import SentenceEmbeddingClassifier, minilm_path
from repro.paths import resolve_path, unwritable_reason

WORDS = ("the film was a great and moving story with fine acting but a slow plot and dull ending that i "
         "hated although the music was wonderful and the cast truly superb").split()
DEFAULT_MODELS = {"cpu": ("minilm",), "cuda": ("minilm", "roberta-base-sized", "vit-b32-sized")}
QUICK = dict(batch_size=16, n_calibration=16, n_eval=32, grid_points=11, repeats=3, iterations=3, warmup=1,
             talos_rounds=1)
FULL = dict(batch_size=32, n_calibration=32, n_eval=64, grid_points=21, repeats=5, iterations=8, warmup=2,
            talos_rounds=4)


def text_examples(n: int, seed: int = 0) -> list:
    """Deterministic sentences of 4 to 24 words with alternating labels."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for i in range(n):
        length = 4 + int(torch.randint(0, 21, (1,), generator=g))
        idx = torch.randint(0, len(WORDS), (length,), generator=g).tolist()
        out.append(Example(" ".join(WORDS[j] for j in idx), i % 2))
    return out


def image_examples(n: int, size: int, seed: int = 0) -> list:
    """Random preprocessed images ``[3, size, size]`` with alternating labels."""
    g = torch.Generator().manual_seed(seed)
    return [ImageExample(torch.randn(3, size, size, generator=g), i % 2) for i in range(n)]


def _sentence_model(hidden: int, layers: int, heads: int, vocab: int, max_length: int):
    # heavy (transformers): loaded only when this model family is used
    from transformers import AutoTokenizer, BertConfig, BertModel

    tok = AutoTokenizer.from_pretrained(str(minilm_path()))
    cfg = BertConfig(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                     intermediate_size=4 * hidden, max_position_embeddings=514, attn_implementation="eager")
    torch.manual_seed(0)
    return SentenceEmbeddingClassifier(BertModel(cfg, add_pooling_layer=False), tok, max_length=max_length)


def _vit(width: int, layers: int, image_size: int, patch: int, embed_dim: int, text_width: int, text_layers: int):
    import open_clip  # optional heavy dependency (open_clip): vision models only

    torch.manual_seed(0)
    clip = open_clip.CLIP(embed_dim, vision_cfg=dict(image_size=image_size, patch_size=patch, width=width,
                                                     layers=layers),
                          text_cfg=dict(context_length=77, vocab_size=49408, width=text_width,
                                        heads=max(text_width // 64, 2), layers=text_layers), quick_gelu=True)
    pre = open_clip.image_transform(image_size, is_train=False)
    return CLIPImageClassifier(clip, pre, open_clip.get_tokenizer("ViT-B-32"))


#: model key → (builder, examples(n), human label)
MODELS: dict[str, tuple[Callable, Callable[[int], list], str]] = {
    "minilm": (lambda: __import__("repro.models", fromlist=["build_minilm"]).build_minilm(), text_examples,
               "all-MiniLM-L6-v2 (pretrained)"),
    "tiny-bert": (lambda: __import__("repro.models", fromlist=["build_tiny_bert"]).build_tiny_bert(), text_examples,
                  "tiny random-init BERT (smoke)"),
    "roberta-base-sized": (lambda: _sentence_model(768, 12, 12, 50265, 128), text_examples,
                           "random-init roberta-base-sized BERT (12 × 768)"),
    "vit-b32-sized": (lambda: _vit(768, 12, 224, 32, 512, 512, 12), lambda n: image_examples(n, 224),
                      "random-init ViT-B/32-sized CLIP image tower"),
    "tiny-vit": (lambda: __import__("repro.models.clip", fromlist=["build_tiny_clip"]).build_tiny_clip(),
                 lambda n: image_examples(n, 32), "tiny random-init CLIP (smoke)"),
}


def setup_for(key: str, device: str, settings: dict) -> Setup:
    """Build model ``key`` on ``device`` with one binary task and enough examples for every pair."""
    build, examples, label = MODELS[key]
    model = build().to(device)
    if key in ("vit-b32-sized", "tiny-vit"):
        spec = TaskSpec("bench", ("cat", "dog"))
    else:
        spec = TaskSpec("bench", ("negative", "positive"), label_prompts=("It was terrible.", "It was great."))
    model.add_task(spec)
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    n = max(settings["batch_size"], settings["n_calibration"], settings["n_eval"])
    return Setup(model=model, task="bench", examples=examples(n), device=device, label=label, **settings)


def check_device(device: str) -> str | None:
    """None when ``device`` can run, else the message to print."""
    if device == "cuda" and not torch.cuda.is_available():
        return (f"repro bench --device cuda: no CUDA GPU is available here (torch {torch.__version__}, "
                f"built with CUDA {torch.version.cuda or 'none'}; torch.cuda.is_available() is False). Run it on a "
                "machine with an NVIDIA GPU and a CUDA build of torch, or use --device cpu.")
    return None


def run(device: str = "cpu", quick: bool = False, models: Sequence[str] | None = None,
        only: Sequence[str] | None = None, scaling: bool = True, book: bool = True, output: str | Path | None = None,
        log: Callable[[str], None] = print, units_from: str | Path | None = None) -> dict:
    """Measure everything, print each row as it is measured, write the JSON; returns ``{"rows", "scaling"}``."""
    t_start = time.perf_counter()
    settings = QUICK if quick else FULL
    models = list(models or DEFAULT_MODELS[device])
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        raise ValueError(f"unknown model(s) {unknown}; choose from {sorted(MODELS)}")
    load = os.getloadavg()
    log(f"repro bench: device {device}, {'quick' if quick else 'full'}, models {models}, "
        f"{torch.get_num_threads()} threads, load average {load[0]:.1f}")
    if device == "cpu" and load[0] > 0.5:  # CPU threads share cores with the other processes: ratios turn noisy
        log(f"  note: the machine is busy (load {load[0]:.1f} on {os.cpu_count()} cores); CPU time ratios move "
            "with it (on 2 cores at load 5, the graft / FT ratio ranged 1.1-2.0 between runs)")
    rows, points = [], []
    steady: dict[str, dict] = {}
    per_step: dict[str, dict] = {}
    for key in models:
        t0 = time.perf_counter()
        s = setup_for(key, device, settings)
        log(f"\n== {s.label} on {device} (built in {time.perf_counter() - t0:.1f} s)")
        rows += run_pairs(s, only, log)
        if only is None or "flops" in only:
            got = flops_rows(s)
            log(format_row(got[0]))
            rows += got
        if only is None or "steady" in only:
            log(f"steady state ({s.label}):")
            peak = matmul_peak_gflops(s.device)
            report, got = steady_report(s, QUICK_STEADY if quick else FULL_STEADY, peak, log)
            steady[key] = report
            for unit, v in report["per_step"].items():
                per_step.setdefault(unit, {**v, "model": s.label})  # the first model measuring a unit prices it
            rows += got
        if scaling and (only is None or "scaling" in only) and (key == models[0] or not quick):
            depth = len(blocks(s.model))
            layers = sorted({max(1, depth // 3), max(1, 2 * depth // 3), depth})
            by = {r["name"]: r for r in rows if r["model"] == s.label}
            keys = {"graft_step_s": ("graft step time", "ours"), "ft_fwd_bwd_s": ("graft step time", "baseline"),
                    "fisher_round_s": ("Fisher round time", "ours"), "fisher_loop_s": ("Fisher round time", "baseline")}
            measured = {k: by[name][side] for k, (name, side) in keys.items() if name in by}
            full = measured if len(measured) == len(keys) else None  # the whole model's point, from the pairs
            if full and quick:
                full.pop("fisher_loop_s")
            pts, exp_rows = scaling_rows(s, layers, with_loop=not quick, full_depth=full)
            points += pts
            for r in exp_rows:
                log(format_row(r))
            rows += exp_rows
        del s
    if book and device == "cpu" and (only is None or "book" in only):
        r = book_rebuild_row("cpu")
        log(format_row(r))
        rows.append(r)
    if units_from:  # units the steady bench does not time (TaLoS calibration, T5) from another measurement
        for unit, v in json.loads(Path(units_from).read_text())["per_step"].items():
            per_step.setdefault(unit, {**v, "model": f"from {units_from}"})
    hours = gpu_hours(per_step, device, log) if per_step else None
    total = time.perf_counter() - t_start
    path = resolve_path(output or "results/bench.json")
    write_bench(path, rows, points, meta={"device": device, "quick": quick, "models": models,
                                          "threads": torch.get_num_threads(), "seconds": round(total, 1),
                                          "torch": torch.__version__, "loadavg_start": list(load),
                                          "loadavg_end": list(os.getloadavg())},
                extra={"steady": steady, "gpu_hours": hours})
    if points:
        log("\nscaling (time against parameters):")
        for p in points:
            loop = f" (official loop {p['fisher_loop_s']:.3f} s)" if "fisher_loop_s" in p else ""
            log(f"  {p['model']}: {p['layers']:>2} layers  eligible {p['eligible']:>11,}  graft step "
                f"{p['graft_step_s']:.4f} s  FT fwd+bwd {p['ft_fwd_bwd_s']:.4f} s  Fisher round "
                f"{p['fisher_round_s']:.3f} s{loop}")
    log(f"\n{summary(rows)}; total {total:.1f} s; wrote {path}")
    return {"rows": rows, "scaling": points, "steady": steady, "gpu_hours": hours}


def gpu_hours(per_step: dict[str, dict], device: str, log: Callable[[str], None] = print) -> dict:
    """The paper profile's hours per notebook priced at the steady-state figures (:mod:`repro.bench.hours`); on the
    CPU the measured models stand in for the paper's (device-hours of this machine, not a GPU estimate)."""
    est = estimate_hours(per_step)
    total = total_hours(est)
    log(f"\npaper profile, {device}-hours from the steady-state figures "
        f"(priced on {sorted({v['model'] for v in per_step.values()})}):")
    for family, nbs in est.items():
        for nb, v in nbs.items():
            h = "not measured" if v["gpu_hours"] is None else f"{v['gpu_hours']:9.1f} h"
            log(f"  {family:7s} {nb:24s} {v['jobs']:5d} jobs {h}")
    log(f"  total: {'not measured (some job kinds were not timed)' if total is None else f'{total:.1f} h'}")
    return {"device": device, "per_step": per_step, "by_notebook": est, "total": total,
            "by_kind": dict(list(hours_by_kind(per_step).items())[:10])}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="repro bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the ≤ 5-minute version (fewer repeats, one TaLoS round)")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--models", nargs="+", choices=sorted(MODELS), default=None,
                    help="models to measure (default: minilm on cpu; + roberta-base-sized, vit-b32-sized on cuda)")
    ap.add_argument("--only", nargs="+", choices=sorted(PAIRS) + ["flops", "scaling", "book", "steady"], default=None,
                    help="measure only these groups")
    ap.add_argument("--no-scaling", action="store_true", help="skip the scaling table")
    ap.add_argument("--no-book", action="store_true", help="skip the unchanged cpu-book rebuild")
    ap.add_argument("--units-from", default=None, metavar="JSON",
                    help="price the job kinds the steady bench does not time (talos_example, t5_*) from this file's "
                         "per_step (benchmarks/gpu_paper_path.json); they are marked with their source")
    ap.add_argument("--output", default=None, metavar="PATH", help="JSON to write (default results/bench.json)")
    args = ap.parse_args(argv)
    problem = check_device(args.device)
    if not problem and args.output:
        problem = unwritable_reason(args.output, "--output", folder=False)  # before the measurement, not after
    if problem:
        print(problem, file=sys.stderr)
        return 2
    run(args.device, args.quick, args.models, args.only, scaling=not args.no_scaling, book=not args.no_book,
        output=args.output, units_from=args.units_from)
    return 0
