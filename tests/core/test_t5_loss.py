"""S5: T5 trains on the official loss, the token-level cross-entropy of the gold answer under teacher forcing
(official ``nlp/T5Wrapper.forward``: Σ over the batch's gold target tokens / their count), checked against
Hugging Face's own token loss computed independently of our wrapper."""

from __future__ import annotations

from dataclasses import replace

import torch

from repro.core.evaluation import forward
from repro.core.finetune import train
from repro.data import get_spec
from repro.data.generated import train_test
from repro.models.t5 import T5RankClassifier, build_tiny_t5
from repro.profiles import FinetuneRecipe

TASK = "AGNews"
#: AGNews with answers of 2, 4, 3 and 2 target tokens (</s> included), so the token mean differs from a per-example
#: mean and from the sequence log-likelihoods' CE
SPEC = replace(get_spec(TASK), options=("World", "Sports and Business", "Business World", "Science"))


def _model() -> T5RankClassifier:
    model = build_tiny_t5(seed=0, max_length=32)
    model.add_task(SPEC)
    for m in model.modules():  # no dropout (the training loop runs in train mode): both computations see one network
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
        if isinstance(getattr(m, "dropout", None), float):  # T5Attention's attention-probability dropout rate
            m.dropout = 0.0
    for p in model.parameters():
        p.requires_grad_(False)
    return model


def _hf_token_ce(model: T5RankClassifier, examples) -> torch.Tensor:
    """HF's mean token CE of the gold answers (labels padded with -100), from the raw tokenizer and backbone."""
    choices = T5RankClassifier.choices_of(SPEC)
    batch = model.tokenize(TASK, examples)
    tgt = model.tokenizer(text_target=[choices[e.label] for e in examples], padding=True, return_tensors="pt")
    labels = tgt["input_ids"].masked_fill(tgt["attention_mask"] == 0, -100)
    return model.backbone(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=labels).loss


def _ours(model: T5RankClassifier, examples) -> torch.Tensor:
    batch = model.collate(TASK, examples, train=True)
    return model.training_loss(forward(model, batch, TASK), batch)


def test_t5_training_loss_is_the_token_level_ce_of_the_gold_answer():
    model = _model()
    _, examples = train_test(TASK, n_train=4, n_test=8, seed=0)
    names = [n for n in model.maskable_names() if "decoder.block.1" in n][:4]
    params = dict(model.named_parameters())
    for n in names:
        params[n].requires_grad_(True)
    ref = _hf_token_ce(model, examples)
    ref_grads = torch.autograd.grad(ref, [params[n] for n in names])
    ours = _ours(model, examples)
    grads = torch.autograd.grad(ours, [params[n] for n in names])
    torch.testing.assert_close(ours, ref, rtol=1e-5, atol=1e-6)
    for g, r in zip(grads, ref_grads):
        torch.testing.assert_close(g, r, rtol=1e-4, atol=1e-7)
    # the gold-only training batch decodes one choice per example and gives the same loss as decoding them all
    full = model.tokenize(TASK, examples)
    full["gold_tokens"] = model.collate(TASK, examples, train=True)["gold_tokens"]
    torch.testing.assert_close(model.training_loss(forward(model, full, TASK), full), ours)
    # and it is not the former objective, the CE over the choices' sequence log-likelihoods
    old = torch.nn.functional.cross_entropy(forward(model, full, TASK), full["labels"])
    assert abs(float(old.detach()) - float(ours.detach())) > 1e-3
    assert len(set(model.heads[TASK].choice_mask.sum(-1).tolist())) == 3


def test_train_minimises_the_token_level_ce():
    """The one training loop reports (and descends) the official loss for T5."""
    model = _model()
    train_ex, examples = train_test(TASK, n_train=4, n_test=8, seed=0)
    ref = float(_hf_token_ce(model, examples))
    recipe = FinetuneRecipe(optimizer="adamw", lr=0.0, batch_size=len(examples), steps=1, weight_decay=0.0,
                            grad_clip=0.0, eval_every=0, no_decay_bias_ln=False)
    res = train(model, {TASK: examples}, recipe, model.maskable_names(), progress=False)
    assert abs(res.history[0]["loss"] - ref) < 1e-5


def test_linearized_t5_trains_on_the_gold_answer_only():
    """The gold-only batch goes through the linearized forward (jvp) too; at θ = θ0 it is the same loss."""
    model = _model()
    _, examples = train_test(TASK, n_train=4, n_test=8, seed=0)
    ref = float(_hf_token_ce(model, examples))
    recipe = FinetuneRecipe(optimizer="adamw", lr=1e-3, batch_size=len(examples), steps=2, weight_decay=0.0,
                            grad_clip=0.0, eval_every=0, no_decay_bias_ln=False)
    res = train(model, {TASK: examples}, recipe, model.maskable_names(), linearized=True, progress=False)
    assert abs(res.history[0]["loss"] - ref) < 1e-5 and res.history[1]["loss"] < res.history[0]["loss"]
