"""The cpu book's exact cost cuts (issue 34, item 4), each beside what it replaced, on the cpu profile's own models
and data, one thread (what a `repro book --jobs 2` kernel gets on 2 cores).

    python benchmarks/book_cost_cuts.py [--repeats 5]

Rows (each cut leaves the numbers as they were, up to float summation order):

- vision evaluation: EfficientNet-Lite0 at 32 px scoring MNIST-5k's 500 validation images under a task vector (one
  point of the P2 α grid): contiguous batches collated on every call (before) vs channels-last batches of an
  :class:`~repro.core.evaluation.EvalSet` collated once (after); and each of the two changes alone.
- vision training step: forward + backward on a batch of 16, contiguous vs channels-last.
- graft gradient: P1 Eq. 4's summed gradient over 256 training examples in batches of 32 on MiniLM, batches as
  sampled vs grouped by length (SST-2 tweets and MR sentences at 512 per class).
- repeated scoring: a P1 chapter's pattern on MiniLM, one fine-tuned model scored on the 500 SST-2 test examples
  (a table's column), on their first 200 (a figure's point) and on the 500 again (a second table): every call run
  (before) vs :class:`~repro.core.evaluation.PredictionMemo` (after: ``Workbench.predict`` runs the unseen
  examples only; the model state is hashed on every call).

The calls of the two sides alternate; each row prints both medians and the ratio before / after with its range over
the repeats.  Timings from one run only compare with each other (machines differ by up to 2x).
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from typing import Callable

import torch


def alternate(before: Callable[[], object], after: Callable[[], object], repeats: int) -> tuple[list, list]:
    """Seconds of ``repeats`` calls of each, alternating, after one untimed call of each."""
    before(), after()
    tb, ta = [], []
    for _ in range(repeats):
        for fn, out in ((before, tb), (after, ta)):
            t = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t)
    return tb, ta


def report(name: str, tb: list[float], ta: list[float]) -> None:
    ratios = [b / a for b, a in zip(tb, ta)]
    print(f"{name:<48} before {statistics.median(tb):7.3f} s  after {statistics.median(ta):7.3f} s  "
          f"ratio {statistics.median(ratios):.2f}x [{min(ratios):.2f}, {max(ratios):.2f}] over {len(ratios)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(1)

    from repro.core.evaluation import PredictionMemo, eval_set, predict
    from repro.core.grafting import _summed_gradient
    from repro.models import efficientnet_lite
    from repro.profiles import notebook_profile
    from repro.workbench import Workbench

    store = tempfile.mkdtemp(prefix="repro-cost-cuts-")
    wb = Workbench(notebook_profile("cpu", "p2_task_arithmetic", None, None), artifacts_dir=store)
    model, task = wb.model, "mnist5k"
    val = list(wb.task(task).dev)
    gen = torch.Generator().manual_seed(0)
    tau = {n: wb.pre[n] + 1e-3 * torch.randn(wb.pre[n].shape, generator=gen) for n in wb.names("maskable")}
    prepared = eval_set(model, val, task, wb.profile.eval_batch_size)
    bs = wb.profile.eval_batch_size

    def layout(channels_last: bool, fn: Callable[[], object]) -> Callable[[], object]:
        def run() -> object:
            efficientnet_lite.CHANNELS_LAST = channels_last
            try:
                return fn()
            finally:
                efficientnet_lite.CHANNELS_LAST = True
        return run

    print(f"vision: {wb.profile.model}, {task} validation {len(val)} images at {wb.profile.image_size} px")
    report("eval: per-call contiguous -> EvalSet channels-last",
           *alternate(layout(False, lambda: predict(model, val, task, tau, batch_size=bs)),
                      layout(True, lambda: predict(model, prepared, task, tau)), args.repeats))
    report("eval: contiguous -> channels-last (per call)",
           *alternate(layout(False, lambda: predict(model, val, task, tau, batch_size=bs)),
                      layout(True, lambda: predict(model, val, task, tau, batch_size=bs)), args.repeats))
    report("eval: collated per call -> EvalSet (channels-last)",
           *alternate(lambda: predict(model, val, task, tau, batch_size=bs),
                      lambda: predict(model, prepared, task, tau), args.repeats))

    batch = model.collate(task, val[:16])
    names = wb.names("maskable")

    def step() -> None:
        own = dict(model.named_parameters())
        for n in names:
            own[n].requires_grad_(True)
        loss = torch.nn.functional.cross_entropy(model(batch, task), batch["labels"])
        loss.backward()
        for n in names:
            own[n].grad = None
            own[n].requires_grad_(False)

    report("train step (batch 16): contiguous -> channels-last", *alternate(layout(False, step), layout(True, step),
                                                                          args.repeats))

    text = Workbench("cpu", artifacts_dir=store)
    text.model.eval()
    own = dict(text.model.named_parameters())
    graftable = text.names("graftable")
    for name in ("SST-2", "MR"):
        sample = list(text.task(name, k=text.profile.k_shot_large).train)
        random.Random(0).shuffle(sample)
        sample = sample[:256]

        def gradient(grouped: bool) -> Callable[[], object]:
            def run() -> object:
                theta = {n: own[n].detach().clone().requires_grad_(True) for n in graftable}
                return _summed_gradient(text.model, name, sample, theta, 32, group_by_length=grouped)
            return run

        report(f"graft gradient {name} (256 ex, batch 32): sampled -> by length",
               *alternate(gradient(False), gradient(True), args.repeats))

    test = list(text.task("SST-2").test)
    moved = text.overrides({n: 1e-3 * torch.randn(own[n].shape, generator=gen) for n in graftable})

    def chapter(memo: bool) -> Callable[[], object]:
        def run() -> object:
            memo_ = PredictionMemo()
            score = (lambda ex: memo_.predict(text.model, ex, "SST-2", moved, bs)) if memo else \
                (lambda ex: predict(text.model, ex, "SST-2", moved, bs))
            return [score(ex) for ex in (test, test[:200], test)]
        return run

    report("repeated scoring (500, first 200, 500): every call -> memo", *alternate(chapter(False), chapter(True),
                                                                                  args.repeats))


if __name__ == "__main__":
    main()
