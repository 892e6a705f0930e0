"""The masked optimizer frees dense gradients of partially trainable tensors and keeps the same results as the
straightforward version (dense gradient, gather, update) it replaced."""

from __future__ import annotations

import copy

import torch

from repro.core.evaluation import forward
from repro.core.finetune import MaskedOptimizer, is_no_decay, train, trainable_entries
from repro.core.masks import Mask
from repro.profiles import FinetuneRecipe


class _ReferenceMaskedAdamW:
    """AdamW over selected entries, the straightforward way: dense gradients kept, gathered at each use."""

    def __init__(self, params, entries, wd):
        self.params, self.entries, self.wd, self.state, self.t = params, entries, wd, {}, 0

    def grad(self, n):
        g, idx = self.params[n].grad.reshape(-1), self.entries[n]
        return g if idx is None else g[idx]

    def clip_(self, max_norm):  # the official scope: the dense gradient of every tensor with a trainable entry
        norm = torch.sqrt(sum(torch.linalg.vector_norm(p.grad, dtype=torch.float32) ** 2
                              for p in self.params.values()))
        if norm > max_norm:
            for p in self.params.values():
                p.grad.mul_(max_norm / (norm + 1e-6))

    @torch.no_grad()
    def step(self, lr):
        self.t += 1
        for n, p in self.params.items():
            g, idx, flat = self.grad(n), self.entries[n], p.data.view(-1)
            w = flat if idx is None else flat[idx]
            st = self.state.setdefault(n, {"m": torch.zeros_like(g), "v": torch.zeros_like(g)})
            st["m"].mul_(0.9).add_(g, alpha=0.1)
            st["v"].mul_(0.999).addcmul_(g, g, value=1 - 0.999)
            mhat, vhat = st["m"] / (1 - 0.9 ** self.t), st["v"] / (1 - 0.999 ** self.t)
            new = w * (1 - lr * self.wd[n]) - lr * mhat / (vhat.sqrt() + 1e-8)
            if idx is None:
                flat.copy_(new)
            else:
                flat[idx] = new


def _mask(model):
    """A random 10 % region over the maskable tensors, with one tensor fully frozen and one fully trainable."""
    names = model.maskable_names()
    shapes = {n: tuple(model.get_parameter(n).shape) for n in names}
    m = Mask.random(shapes, max(1, sum(torch.Size(s).numel() for s in shapes.values()) // 10), seed=3)
    t = dict(m.tensors)
    t[names[0]] = torch.zeros(shapes[names[0]], dtype=torch.bool)
    t[names[-1]] = torch.ones(shapes[names[-1]], dtype=torch.bool)
    return Mask(t, shapes)


def test_masked_adamw_matches_dense_reference_and_frees_dense_grads(tiny_model, sent_examples):
    recipe = FinetuneRecipe(optimizer="adamw", lr=1e-2, batch_size=8, steps=4, weight_decay=0.1, grad_clip=0.5)
    mask = _mask(tiny_model)
    ref_model = copy.deepcopy(tiny_model)
    runs = []
    for model, make in ((tiny_model, lambda p, e: MaskedOptimizer(p, e, recipe)),
                        (ref_model, lambda p, e: _ReferenceMaskedAdamW(p, e, {n: 0.0 if is_no_decay(n) else 0.1 for n in p}))):
        entries = trainable_entries(model, mask)
        params = dict(model.named_parameters())
        for n, p in params.items():
            p.requires_grad_(n in entries)
        opt = make({n: params[n] for n in entries}, entries)
        before = {n: p.detach().clone() for n, p in params.items()}
        batch = model.tokenize("sent", sent_examples)
        model.eval()
        for _ in range(recipe.steps):
            for p in params.values():
                p.grad = None
            if isinstance(opt, MaskedOptimizer):
                opt.zero_grad()
            torch.nn.functional.cross_entropy(forward(model, batch, "sent"), batch["labels"]).backward()
            if isinstance(opt, MaskedOptimizer):  # dense gradients only for the fully trainable tensors
                assert all((params[n].grad is None) == (e is not None) for n, e in entries.items())
                assert opt.state_numel() in (0, 2 * sum(params[n].numel() if e is None else e.numel()
                                                        for n, e in entries.items()))
            opt.clip_(recipe.grad_clip)
            opt.step(recipe.lr)
        if isinstance(opt, MaskedOptimizer):
            opt.close()
        for p in params.values():
            p.requires_grad_(False)
        runs.append(({n: p.detach().clone() for n, p in params.items()}, before, entries))
    (new, before, entries), (ref, _, _) = runs
    assert mask.tensors[tiny_model.maskable_names()[0]].sum() == 0 and tiny_model.maskable_names()[0] not in entries
    changed = 0
    for n in new:
        assert torch.equal(new[n], ref[n]), n  # the same operations in the same order: bitwise equal
        if n in mask.tensors:
            outside = ~mask.tensors[n]
            assert torch.equal(new[n][outside], before[n][outside]), n  # entries outside the mask untouched
        changed += int((new[n] != before[n]).sum())
    assert changed > 0


def test_train_with_mask_leaves_no_hooks_and_freezes_empty_tensors(tiny_model, sent_examples):
    mask = _mask(tiny_model)
    frozen = tiny_model.maskable_names()[0]
    seen = []

    def check(step, model):
        seen.append(model.get_parameter(frozen).requires_grad)

    recipe = FinetuneRecipe(optimizer="adamw", lr=1e-2, batch_size=4, steps=3, weight_decay=0.1, eval_every=0)
    train(tiny_model, {"sent": sent_examples}, recipe, mask, progress=False, callback=check)
    assert seen == [False] * 3  # a tensor with no trainable entry never gets a weight gradient
    p = tiny_model.get_parameter(tiny_model.maskable_names()[1])
    assert not p._post_accumulate_grad_hooks  # the optimizer's hooks were removed at the end of training


def test_clipping_uses_the_dense_gradient_norm(tiny_model, sent_examples):
    """S14: the clip norm is the dense gradient's (official ``clip_grad_norm_``), not only the trainable entries'."""
    mask = _mask(tiny_model)
    entries = trainable_entries(tiny_model, mask)
    params = dict(tiny_model.named_parameters())
    batch = tiny_model.tokenize("sent", sent_examples)
    tiny_model.eval()
    for n, p in params.items():
        p.requires_grad_(n in entries)
    torch.nn.functional.cross_entropy(forward(tiny_model, batch, "sent"), batch["labels"]).backward()
    dense = {n: params[n].grad.clone() for n in entries}  # no optimizer yet: plain dense gradients
    expected = float(torch.sqrt(sum((g ** 2).sum() for g in dense.values())))
    trainable_only = float(torch.sqrt(sum((g.reshape(-1)[e] ** 2).sum() if e is not None else (g ** 2).sum()
                                          for g, e in ((dense[n], entries[n]) for n in entries))))
    for p in params.values():
        p.grad = None
    opt = MaskedOptimizer({n: params[n] for n in entries}, entries, FinetuneRecipe(optimizer="adamw"))
    torch.nn.functional.cross_entropy(forward(tiny_model, batch, "sent"), batch["labels"]).backward()
    max_norm = expected / 4
    got = opt.clip_(max_norm)
    assert abs(got - expected) < 1e-5 * expected and trainable_only < 0.99 * expected
    scale = max_norm / (expected + 1e-6)
    for n, g in opt.grads().items():
        ref = dense[n].reshape(-1) if entries[n] is None else dense[n].reshape(-1)[entries[n]]
        assert torch.allclose(g, ref * scale, rtol=1e-5, atol=1e-8), n
    opt.close()
    for p in params.values():
        p.requires_grad_(False)


def test_foreach_sgd_updates_whole_tensors_bit_for_bit_like_the_per_tensor_loop():
    """MaskedOptimizer.foreach: whole tensors through torch._foreach_* grouped by weight decay, partial ones per
    tensor; the same parameters after three steps, bit for bit."""
    import torch

    from repro.core.finetune import MaskedOptimizer
    from repro.profiles import FinetuneRecipe

    gen = torch.Generator().manual_seed(0)
    init = {"a.weight": torch.randn(5, 4, generator=gen), "a.bias": torch.randn(5, generator=gen),
            "b.weight": torch.randn(3, 3, generator=gen)}
    grads = [{n: torch.randn(t.shape, generator=gen) for n, t in init.items()} for _ in range(3)]
    out = {}
    for flag in (False, True):
        params = {n: torch.nn.Parameter(t.clone()) for n, t in init.items()}
        entries = {"a.weight": None, "a.bias": None, "b.weight": torch.tensor([0, 4, 8])}
        opt = MaskedOptimizer(params, entries, FinetuneRecipe(optimizer="sgd", lr=0.1, weight_decay=0.01))
        opt.foreach = flag
        for g in grads:
            opt.zero_grad()
            for n, p in params.items():
                p.grad = g[n].clone()
                if entries[n] is not None:
                    opt._gather(n, p)
            opt.step(0.1)
        opt.close()
        out[flag] = {n: p.detach().clone() for n, p in params.items()}
    assert all(torch.equal(out[False][n], out[True][n]) for n in init)
    assert not torch.equal(out[True]["a.bias"], init["a.bias"]) and torch.equal(out[True]["b.weight"].view(-1)[1],
                                                                                 init["b.weight"].view(-1)[1])
