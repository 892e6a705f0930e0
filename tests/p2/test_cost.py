"""Iteration-cost measurement runs every method and counts trainable entries and optimizer state exactly."""

from __future__ import annotations

from repro.p2.cost import measure_iteration, ratios
from repro.core.masks import Mask
from repro.profiles import FinetuneRecipe

RECIPE = FinetuneRecipe(optimizer="adamw", lr=1e-3, batch_size=4, steps=1, weight_decay=0.1)


def test_measure_dense_sparse_and_linearized(tiny_model, sent_examples):
    names = tiny_model.maskable_names()
    dense = measure_iteration(tiny_model, sent_examples, "sent", "Non-linear FT", names, RECIPE, iterations=2, warmup=1)
    total = sum(p.numel() for n, p in tiny_model.named_parameters() if n in names)
    assert dense.trainable == total and dense.optimizer_state == 2 * total
    assert len(dense.total_iter_repeats) == len(dense.fwd_bwd_repeats) == len(dense.optim_step_repeats) == 2
    assert dense.total_iter_s == sum(dense.total_iter_repeats) / 2 and "total_iter_repeats" in dense.as_row()
    mask = Mask.random({n: tuple(p.shape) for n, p in tiny_model.named_parameters() if n in names}, 100, seed=0)
    sparse = measure_iteration(tiny_model, sent_examples, "sent", "TaLoS", mask, RECIPE, iterations=2, warmup=1)
    assert sparse.trainable == 100 and sparse.optimizer_state == 200
    lin = measure_iteration(tiny_model, sent_examples, "sent", "Linearized FT", names, RECIPE, linearized=True,
                            iterations=2, warmup=1)
    assert lin.total_iter_s > 0
    rows = ratios([dense.as_row(), sparse.as_row(), lin.as_row()])
    assert rows[0]["total_iter_s_ratio"] == 1.0
    assert all(p.grad is None and not p.requires_grad for p in tiny_model.parameters())


def test_peak_memory_counts_the_block_not_an_earlier_peak():
    import torch

    from repro.device import PeakMemory

    # blocks far above glibc's largest mmap threshold (32 MiB) are fresh mappings, returned to the system when freed:
    # a smaller block could reuse heap memory an earlier test freed but kept resident, and raise no peak at all
    earlier = torch.ones(384 * 2**20 // 4)  # a 384 MiB peak before the block
    del earlier
    with PeakMemory("cpu") as quiet:
        pass
    with PeakMemory("cpu") as busy:
        block = torch.ones(256 * 2**20 // 4)  # 256 MiB touched inside the block
        block.add_(1)
        del block
    if not busy.exact:  # not Linux: ru_maxrss cannot be reset, the figure is a lower bound only
        return
    assert quiet.gib < 0.02  # the earlier 384 MiB peak is not charged to an empty block
    assert 0.24 < busy.gib < 0.36  # the block's 256 MiB, not the earlier peak
