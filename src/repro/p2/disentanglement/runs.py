"""The artifacts the P2 §5.2 chapter (``notebooks/p2_disentanglement.md``) evaluates, from its declared jobs.

- :func:`drift_rows`: the Fig. 7 rows, one cached :func:`repro.p2.linear_regime.drift_curve` per declared drift
  job, and the zero rows of the methods linear by construction (no job).

It takes the notebook's :class:`repro.jobcall.ChapterJobs` (``jobs``) and never decides which artifacts exist.  The
zoo's task vectors come from :func:`repro.p2.zoo.zoo_vectors`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from repro.p2.linear_regime import LINEAR_BY_CONSTRUCTION, constant_drift
from repro.p2.methods import METHODS

if TYPE_CHECKING:  # pragma: no cover
    from repro.jobs import Artifacts

#: the methods of Fig. 7, in the figure's order (L-LoRA trains LoRA factors, not the backbone: no drift)
DRIFT_METHODS: tuple[str, ...] = ("ft", "linearized", "lota", "talos")


def drift_rows(jobs: "Artifacts", task: str, steps: Sequence[int], n_examples: int,
               methods: Sequence[str] = DRIFT_METHODS) -> list[dict]:
    """Fig. 7: the rows of every method's gradient drift on ``task`` (its declared drift job; 0 at ``steps`` for a
    method linear by construction, on ``n_examples``), each row labelled with the method."""
    rows = []
    for key in methods:
        curve = (constant_drift(steps, n_examples) if key in LINEAR_BY_CONSTRUCTION
                 else jobs.value(jobs.one(kind="drift", task=task, method=key)))
        rows += [dict(r, method=METHODS[key].label) for r in curve]
    return rows


__all__ = ["DRIFT_METHODS", "drift_rows"]
