"""The evaluation sets of the P2 task-arithmetic protocol (spec D7) and the one scoring call on them:
fixed label-balanced validation / test subsets per task, and the metric of θ_0 + α·τ."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Sequence

from repro.artifacts import tensor_digest
from repro.core.evaluation import EvalSet, Predictions, eval_set, score
from repro.core.taskvec import TaskVector
from repro.data import Example, balanced_sample, fixed_subset

if TYPE_CHECKING:  # pragma: no cover
    from repro.workbench import Workbench


class Evaluator:
    """Fixed validation / test subsets of the tasks + control, and accuracy of θ_0 + α·τ on them.

    ``acc(task, split, vector, alpha, linear)`` returns the task's metric (fraction); α may be negative
    (negation).  ``scored(...)`` returns the metric and the per-example 0/1 correctness (argmax = label) of the
    same evaluation: the protocol keeps it for every test number it reports, so claims can be judged with a paired
    bootstrap over the same test examples (the test subsets are drawn with seed 0 for every method and seed).  The pre-trained model's logits are computed once per task and split.  A *linearized* model is
    exactly linear in its parameter offset, f_lin(θ_0 + ατ) = f(θ_0) + α·J_θ0 τ, so for ``linear=True`` the
    tangent logits J_θ0 τ are computed once per (vector, task, split) (one jvp pass at α = 1) and every other α
    is f(θ_0) + α·J τ: the same model, without one jvp pass per α.  ``seconds`` / ``evaluated`` count the
    forward passes actually run.  Each subset is batched and collated once (:func:`repro.core.evaluation.eval_set`),
    not once per α.
    """

    def __init__(self, wb: "Workbench", tasks: Sequence[str], control: str | None, n_val: int, n_test: int,
                 seed: int | None = None) -> None:
        self.wb = wb
        self.tasks = list(tasks)
        self.control = control
        self.seed = wb.seed if seed is None else seed
        self.n_val, self.n_test = int(n_val), int(n_test)
        self.sets: dict[str, dict[str, list[Example]]] = {}
        for t in self.tasks + ([control] if control else []):
            data = wb.task(t, seed=self.seed)
            self.sets[t] = {"val": balanced_sample(data.dev, self.n_val, seed=self.seed),
                            "test": fixed_subset(data.test, self.n_test)}
        self._prepared: dict[tuple[str, str], EvalSet] = {}  # each subset batched and collated once
        self._zero: dict[tuple[str, str], Any] = {}  # Predictions of θ_0
        self._tangent: dict[tuple, Any] = {}  # (vector fingerprint, task, split) -> J τ logits
        self.seconds = 0.0
        self.evaluated = 0

    def config(self) -> dict[str, Any]:
        return {"tasks": self.tasks, "control": self.control, "n_val": self.n_val, "n_test": self.n_test,
                "seed": self.seed, "sizes": {t: {s: len(v) for s, v in d.items()} for t, d in self.sets.items()}}

    def zero_shot(self, task: str, split: str) -> float:
        return self._metric(task, self._zero_pred(task, split))

    def acc(self, task: str, split: str, vector: TaskVector | None, alpha: float = 1.0,
            linear: bool = False) -> float:
        """Metric of θ_0 + α·τ (linearized around θ_0 when ``linear``) on ``task``'s ``split`` subset."""
        return self._metric(task, self._predictions(task, split, vector, alpha, linear))

    def scored(self, task: str, split: str, vector: TaskVector | None, alpha: float = 1.0,
               linear: bool = False) -> tuple[float, list[int]]:
        """(metric, per-example 0/1 correctness) of θ_0 + α·τ on ``task``'s ``split`` subset, in subset order."""
        pred = self._predictions(task, split, vector, alpha, linear)
        return self._metric(task, pred), pred.correct().tolist()

    def _predictions(self, task: str, split: str, vector: TaskVector | None, alpha: float,
                     linear: bool) -> Predictions:
        if vector is None or alpha == 0 or len(vector) == 0:
            return self._zero_pred(task, split)
        if not linear:
            return self._predict(task, split, vector.apply(self.wb.pre, alpha), None)
        zero = self._zero_pred(task, split)
        key = (_fingerprint(vector), task, split)
        if key not in self._tangent:
            base = {n: self.wb.pre[n] for n in vector.names}
            one = self._predict(task, split, vector.apply(self.wb.pre, 1.0), base)
            self._tangent[key] = one.logits - zero.logits
        return Predictions(zero.logits + float(alpha) * self._tangent[key], zero.labels)

    def _zero_pred(self, task: str, split: str):
        if (task, split) not in self._zero:
            self._zero[(task, split)] = self._predict(task, split, None, None)
        return self._zero[(task, split)]

    def _predict(self, task: str, split: str, overrides, linear_base):
        start = time.perf_counter()
        ex = self.sets[task][split]
        if (task, split) not in self._prepared:
            self._prepared[(task, split)] = eval_set(self.wb.model, ex, task, self.wb.profile.eval_batch_size)
        pred = self.wb.predict(task, split, overrides, examples=self._prepared[(task, split)],
                               linear_base=linear_base)
        self.seconds += time.perf_counter() - start
        self.evaluated += len(ex)
        return pred

    def _metric(self, task: str, pred) -> float:
        return score(pred, self.wb.model.specs[task].metric)["value"]


def _fingerprint(vector: TaskVector) -> str:
    """Content key of a task vector (the one tensor fingerprint, :func:`repro.artifacts.tensor_digest`)."""
    return tensor_digest(vector.tensors)
