"""One fine-tune + grafts at several sparsities, end to end, with wall times (the foundation issue's check run).

    python benchmarks/graft_run.py [--profile cpu] [--task SST-2] [--data DIR] [--sparsities 1e-4 1e-3 1e-2]
                                   [--artifacts DIR] [--n-test 500]

Fine-tunes the profile's P1 recipe on the task's k-shot split (cached in the artifact store like every notebook
run), learns a graft (P1 Eq. 2-4) on γ_base = top-s movement for each sparsity s, and prints zero-shot, FT and
graft test accuracy, ECE, graft-FT agreement, the final graft size and the seconds each step took.  Runs on
the generated tasks by default, or on real local data with ``--data DIR`` (``<TASK>/train.jsonl`` ...).
"""

from __future__ import annotations

import argparse
import tempfile
import time

from repro.p1.regions import evaluate_overrides, evaluate_region, graftable_total
from repro.workbench import Workbench


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="cpu")
    ap.add_argument("--task", default="SST-2")
    ap.add_argument("--data", default=None, help="local data folder (default: the generated tasks)")
    ap.add_argument("--sparsities", type=float, nargs="+", default=[1e-4, 1e-3, 1e-2])
    ap.add_argument("--artifacts", default=None, help="artifact store (default: a fresh temporary folder)")
    ap.add_argument("--n-test", type=int, default=500, help="test examples scored (0 = the whole split)")
    args = ap.parse_args()

    artifacts = args.artifacts or tempfile.mkdtemp(prefix="repro-graft-run-")
    t = time.perf_counter()
    wb = Workbench(args.profile, data_dir=args.data, artifacts_dir=artifacts)
    data = wb.task(args.task)
    test = data.test[: args.n_test] if args.n_test else data.test
    print(f"profile={args.profile} task={args.task} data={wb.data_tag} train={len(data.train)} "
          f"dev={len(data.dev)} test={len(test)}  (setup {time.perf_counter() - t:.1f} s)")

    zero, _ = evaluate_overrides(wb, args.task, None, examples=test)
    t = time.perf_counter()
    tau = wb.finetune(args.task)
    ft_s = time.perf_counter() - t
    ft, ft_pred = evaluate_overrides(wb, args.task, wb.overrides(tau), examples=test)
    total = graftable_total(wb)
    rows = [("zero-shot", "-", zero, 0.0), ("FT", f"{total:,} (100%)", ft, ft_s)]
    for s in args.sparsities:
        t = time.perf_counter()
        mask, meta = wb.graft(args.task, tau, base=s)
        secs = time.perf_counter() - t
        g = evaluate_region(wb, args.task, tau, mask, examples=test, reference=ft_pred)
        size = f"{mask.count():,} ({100 * mask.count() / total:.4f}%)"
        rows.append((f"graft s={s:g}", size, g, secs))

    print(f"\n{'model':<16} {'graftable entries':>24} {'acc':>7} {'ECE':>7} {'agree':>7} {'seconds':>8}")
    for name, size, r, secs in rows:
        agree = f"{r['agreement']:.3f}" if "agreement" in r else "-"
        print(f"{name:<16} {size:>24} {r['value']:>7.3f} {r['ece']:>7.3f} {agree:>7} {secs:>8.1f}")


if __name__ == "__main__":
    main()
