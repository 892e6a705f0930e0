"""P1 §4.3 / App. D: the train–test gap of re-trained grafts vs FT, and the computable terms of Theorem D.2.

Theorem D.2 bounds the excess test loss of a model re-trained on a region γ of s = ‖γ‖₀ parameters by
2·(variance) + (bias) + 4ε₁, with, w.p. ≥ 1 − δ, variance ≤ sqrt((s log q + log Θ_n + log(1/δ)) / n) (q values per
quantized parameter, Θ_n the number of regions the procedure can return, n training examples).  Of these only the
variance bound is a closed form (:func:`uc_variance_bound`); the bias term needs θ* (the best test model) and is
reported here through its empirical proxy, the test loss of the re-trained graft minus that of full FT
(:func:`bound_terms`).  The empirical train–test gaps come from :func:`split_metrics`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Mapping

import torch

from repro.core.metrics import accuracy

if TYPE_CHECKING:  # pragma: no cover
    from repro.workbench import Workbench


def split_metrics(wb: "Workbench", task: str, overrides: Mapping[str, torch.Tensor] | None,
                  split: str, k: int | None = None) -> dict[str, Any]:
    """Mean cross-entropy (nats), accuracy (fraction), n and the per-example 0/1 ``correct`` of a model on one
    split of ``task`` (its ``k``-shot train split; None: the profile's k_shot)."""
    pred = wb.predict(task, split, overrides, **({"k": k} if k else {}))
    loss = torch.nn.functional.cross_entropy(pred.logits.float(), pred.labels).item()
    return {"loss": loss, "acc": accuracy(pred.preds, pred.labels), "n": int(pred.labels.numel()),
            "correct": pred.correct()}


def gap_from_splits(tr: Mapping[str, Any], te: Mapping[str, Any]) -> dict[str, float]:
    """P1 §4.3: train and test loss / accuracy and the gaps train − test (accuracy) and test − train (loss), from
    the :func:`split_metrics` of the two splits."""
    return {"train_acc": tr["acc"], "test_acc": te["acc"], "gap_acc": tr["acc"] - te["acc"],
            "train_loss": tr["loss"], "test_loss": te["loss"], "gap_loss": te["loss"] - tr["loss"],
            "n_train": tr["n"], "n_test": te["n"]}


def train_test_gap(wb: "Workbench", task: str, overrides: Mapping[str, torch.Tensor] | None) -> dict[str, float]:
    """P1 §4.3: :func:`gap_from_splits` of a model's train and test splits."""
    return gap_from_splits(split_metrics(wb, task, overrides, "train"), split_metrics(wb, task, overrides, "test"))


def uc_variance_bound(s: int, n: int, log_theta: float = 0.0, q: float = 2.0 ** 32, delta: float = 0.05) -> float:
    """P1 Theorem D.2: 2·sqrt((s·log q + log Θ_n + log(1/δ)) / n), the bound on 2 × the variance term.

    ``log_theta`` = log Θ_n (0 for a fixed region such as BitFit; ≤ s·log d in general, :func:`log_theta_trivial`);
    ``q`` = values a parameter can take (2^32 for float32, the paper's remark).  Losses are in [0, 1].
    """
    if n <= 0 or s < 0:
        raise ValueError(f"need n > 0 and s >= 0, got n={n}, s={s}")
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    return 2.0 * math.sqrt((s * math.log(q) + log_theta + math.log(1.0 / delta)) / n)


def log_theta_trivial(s: int, d: int) -> float:
    """log Θ_n ≤ s·log d: the trivial count of s-sparse regions among d parameters (App. D)."""
    return s * math.log(max(d, 1))


def bound_terms(s: int, d: int, n: int, retrain_test_loss: float, ft_test_loss: float,
                q: float = 2.0 ** 32, delta: float = 0.05) -> dict[str, float]:
    """The computable pieces of Theorem D.2 for one region: the variance bound with log Θ_n = 0 (fixed region)
    and with the trivial log Θ_n = s log d, the same for the full model (s = d), and the bias-term proxy
    L_test(re-trained graft) − L_test(FT) (θ*(γ) and θ* replaced by the models we have)."""
    return {
        "s": s, "d": d, "n": n,
        "variance_fixed_region": uc_variance_bound(s, n, 0.0, q, delta),
        "variance_any_region": uc_variance_bound(s, n, log_theta_trivial(s, d), q, delta),
        "variance_full_model": uc_variance_bound(d, n, 0.0, q, delta),
        "bias_proxy": retrain_test_loss - ft_test_loss,
    }
