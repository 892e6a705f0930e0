"""Per-example gradients on all-MiniLM-L6-v2: plain loop vs vmap(grad(functional_call)).

    python benchmarks/bench_fisher.py [--n 32] [--repeats 3] [--chunk 0] [--target logprob]

Prints the wall time of :func:`repro.core.fisher.per_example_grads_loop` and :func:`repro.core.fisher.per_example_grads`
over the P2 maskable set (every encoder-layer tensor) for one padded batch of ``--n`` examples, their ratio, and
the largest absolute difference between the two.
"""

from __future__ import annotations

import argparse
import time

import torch

from repro.data import Example, TaskSpec
from repro.core.fisher import TARGETS, per_example_grads, per_example_grads_loop
from repro.models import build_minilm

WORDS = ("the film was a great and moving story with fine acting but a slow plot and dull ending that i "
         "hated although the music was wonderful and the cast truly superb").split()


def make_examples(n: int) -> list[Example]:
    """Deterministic sentences of varied length (4 to 24 words)."""
    g = torch.Generator().manual_seed(0)
    out = []
    for i in range(n):
        length = 4 + int(torch.randint(0, 21, (1,), generator=g))
        idx = torch.randint(0, len(WORDS), (length,), generator=g).tolist()
        out.append(Example(" ".join(WORDS[j] for j in idx), i % 2))
    return out


def best_time(fn, repeats: int) -> tuple[float, dict]:
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=32, help="examples in the batch")
    ap.add_argument("--repeats", type=int, default=3, help="timed repetitions (best is reported)")
    ap.add_argument("--chunk", type=int, default=0, help="vmap chunk_size (0 = whole batch)")
    ap.add_argument("--target", choices=sorted(TARGETS), default="logprob")
    args = ap.parse_args()

    model = build_minilm()
    model.add_task(TaskSpec("sst", ("negative", "positive"), label_prompts=("It was terrible.", "It was great.")))
    model.eval()
    names = model.maskable_names()
    batch = model.tokenize("sst", make_examples(args.n))
    fn = TARGETS[args.target]
    n_params = sum(model.get_parameter(n).numel() for n in names)
    print(f"device={model.device} threads={torch.get_num_threads()} examples={args.n} "
          f"seq_len={batch['input_ids'].shape[1]} params={n_params:,} target={args.target}")

    chunk = args.chunk or None
    per_example_grads(model, batch, "sst", names, fn, chunk_size=chunk)  # warm-up
    t_vmap, fast = best_time(lambda: per_example_grads(model, batch, "sst", names, fn, chunk_size=chunk),
                             args.repeats)
    del fast
    t_loop, slow = best_time(lambda: per_example_grads_loop(model, batch, "sst", names, fn), args.repeats)
    fast = per_example_grads(model, batch, "sst", names, fn, chunk_size=chunk)
    diff = max(float((fast[n] - slow[n]).abs().max()) for n in names)
    scale = max(float(slow[n].abs().max()) for n in names)
    print(f"loop  {t_loop:8.3f} s  ({t_loop / args.n * 1e3:.1f} ms/example)")
    print(f"vmap  {t_vmap:8.3f} s  ({t_vmap / args.n * 1e3:.1f} ms/example, chunk_size={chunk})")
    print(f"ratio loop/vmap = {t_loop / t_vmap:.2f}")
    print(f"max |vmap - loop| = {diff:.2e}  (max |grad| = {scale:.2e})")


if __name__ == "__main__":
    main()
