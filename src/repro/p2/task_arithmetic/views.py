"""Views of the P2 §5.1 chapter beyond Tables 1, 2 and 5: what each method's single-task models learned."""

from __future__ import annotations

from typing import Mapping

import pandas as pd

from repro.p2.task_arithmetic.runs import Correctness


def single_task_frame(ex: Correctness, zero_shot: Mapping[str, float]) -> pd.DataFrame:
    """Test accuracy (%) of every method's single-task model θ_0 + τ_t on its own task t (mean over seeds), beside
    the zero-shot (head-only) model: the normalizers of Table 1's normalized accuracy, and each task's gain."""
    rows = [{"method": "Pre-trained (Zero-shot)", **{t: 100 * zero_shot[t] for t in ex.tasks}}]
    for (label, kind), by_task in ex.data.items():
        if kind == "single":
            rows.append({"method": label, **{t: 100 * float(by_task[t].mean()) for t in ex.tasks}})
    frame = pd.DataFrame(rows).set_index("method")
    frame["mean gain over zero-shot"] = frame[ex.tasks].mean(axis=1) - frame.loc["Pre-trained (Zero-shot)",
                                                                               ex.tasks].mean()
    return frame.round(1)


__all__ = ["single_task_frame"]
