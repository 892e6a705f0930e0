"""Metrics: accuracy, F1, expected calibration error, agreement, confidence histograms.  All return fractions."""

from __future__ import annotations

import torch


def accuracy(preds: torch.Tensor, labels: torch.Tensor) -> float:
    if preds.numel() == 0:
        raise ValueError("accuracy of an empty set")
    return float((preds == labels).float().mean())


def f1_binary(preds: torch.Tensor, labels: torch.Tensor, positive: int = 1) -> float:
    """F1 of the positive class (GLUE MRPC/QQP convention)."""
    tp = int(((preds == positive) & (labels == positive)).sum())
    fp = int(((preds == positive) & (labels != positive)).sum())
    fn = int(((preds != positive) & (labels == positive)).sum())
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


def expected_calibration_error(probs: torch.Tensor, labels: torch.Tensor, n_bins: int = 10) -> float:
    """ECE (Guo et al. 2017), as used in P1 §4.1: Σ_b |B_b|/N · |acc(B_b) − conf(B_b)|.

    Equal-width bins on [0, 1] over the confidence = max class probability; bin b holds confidences in
    (b/M, (b+1)/M], the first bin also holds 0, and a confidence of exactly 1.0 falls in the last bin.
    Returns a fraction in [0, 1].
    """
    if probs.ndim != 2 or probs.shape[0] != labels.shape[0]:
        raise ValueError(f"probs must be [N, C] matching labels [N]; got {tuple(probs.shape)} and {tuple(labels.shape)}")
    if n_bins < 1:
        raise ValueError("n_bins must be >= 1")
    conf, pred = probs.float().max(dim=1)
    correct = (pred == labels).float()
    # bin index = ceil(conf·M) − 1, clamped to [0, M−1]  → right-closed bins, 1.0 in the last bin
    idx = (torch.ceil(conf * n_bins) - 1).clamp(0, n_bins - 1).long()
    n = conf.numel()
    ece = torch.zeros((), dtype=torch.float64)
    for b in range(n_bins):
        sel = idx == b
        if sel.any():
            ece += sel.sum() / n * (correct[sel].mean() - conf[sel].mean()).abs()
    return float(ece)


def agreement(preds_a: torch.Tensor, preds_b: torch.Tensor) -> float:
    """Fraction of examples on which two models predict the same class (P1 Table 2 "Agreement")."""
    return float((preds_a == preds_b).float().mean())


def confidence_histogram(probs: torch.Tensor, n_bins: int = 10) -> list[dict[str, float]]:
    """Rows {bin_lo, bin_hi, fraction} of the max-probability distribution (P1 Fig. 6)."""
    conf = probs.float().max(dim=1).values
    idx = (torch.ceil(conf * n_bins) - 1).clamp(0, n_bins - 1).long()
    counts = torch.bincount(idx, minlength=n_bins).float() / max(conf.numel(), 1)
    return [{"bin_lo": b / n_bins, "bin_hi": (b + 1) / n_bins, "fraction": float(counts[b])} for b in range(n_bins)]
