"""The TaLoS sensitivity target per model family matches the official code's quantity (spec D3, P2 Eq. 7).

Official: one ŷ ~ softmax(f(x)) per example, then Σ_i (∂ target_i/∂θ)², target = the raw logit z_ŷ (vision, CLIP)
or the sequence log-likelihood log p(ŷ tokens | x) of the sampled answer (NLP, T5).  Each test recomputes that
with a plain per-example loop written from the official description (T5: the log-likelihood from Hugging Face's
own token loss, not from our wrapper's logits) and compares it with our batched diagonal Fisher.
"""

from __future__ import annotations

import pytest
import torch

from repro.core.fisher import diagonal_fisher
from repro.data import get_spec
from repro.data.generated import train_test
from repro.data.tasks import ImageExample
from repro.models.clip import build_tiny_clip
from repro.models.t5 import build_tiny_t5
from repro.profiles import get_profile


def _sampled(model, examples, task, seed):
    """The ŷ our Fisher draws: one multinomial draw per example from the CPU generator seeded with ``seed``."""
    with torch.no_grad():
        model.eval()
        probs = model(model.tokenize(task, examples), task).float().softmax(-1).cpu()
    return torch.multinomial(probs, 1, generator=torch.Generator().manual_seed(seed)).squeeze(1)


def _close(ours, ref, names):
    for n in names:
        torch.testing.assert_close(ours[n], ref[n], rtol=2e-3, atol=1e-7 + 1e-4 * float(ref[n].abs().max()))


def test_profiles_declare_the_official_target_per_family():
    paper = get_profile("paper")
    assert paper.for_p2("vision").talos.target == "logit"
    assert paper.for_p2("nlp").talos.target == "sequence-loglik"
    assert get_profile("cpu").talos.target == "logprob" and get_profile("smoke").talos.target == "logprob"
    assert get_profile("paper-smoke").for_p2("vision").talos.target == "logit"


def test_clip_target_is_the_raw_logit_of_the_sampled_class():
    from repro.data import TaskSpec

    model = build_tiny_clip(seed=0)
    spec = TaskSpec("tiny-images", ("cat", "dog", "car"), family="vision")
    model.add_task(spec)
    for p in model.parameters():
        p.requires_grad_(False)
    gen = torch.Generator().manual_seed(1)
    examples = [ImageExample(torch.randn(3, 32, 32, generator=gen), i % 3) for i in range(6)]
    names = model.maskable_names()[:6]
    ours = diagonal_fisher(model, examples, spec.name, names, target=get_profile("paper").for_p2("vision").talos.target,
                           batch_size=len(examples), seed=5, method="loop", progress=False)
    labels = _sampled(model, examples, spec.name, 5)
    params = dict(model.named_parameters())
    ref = {n: torch.zeros_like(params[n]) for n in names}
    for ex, y in zip(examples, labels):
        for n in names:
            params[n].requires_grad_(True)
        logits = model(model.tokenize(spec.name, [ex]), spec.name)[0]  # raw logits (scaled cosine similarities)
        grads = torch.autograd.grad(logits[y], [params[n] for n in names])
        for n, g in zip(names, grads):
            ref[n] += g.pow(2)
        for n in names:
            params[n].requires_grad_(False)
    _close(ours, ref, names)
    # and it is not the log-prob variant
    lp = diagonal_fisher(model, examples, spec.name, names, target="logprob", batch_size=len(examples), seed=5,
                         method="loop", progress=False)
    assert not all(torch.allclose(lp[n], ref[n], rtol=1e-2) for n in names)


def test_t5_target_is_the_sequence_log_likelihood_of_the_sampled_answer():
    spec = get_spec("AGNews")
    model = build_tiny_t5(seed=0, max_length=32)
    model.add_task(spec)
    for p in model.parameters():
        p.requires_grad_(False)
    _, examples = train_test("AGNews", n_train=4, n_test=5, seed=0)
    names = [n for n in model.maskable_names() if "encoder.block.0" in n or "decoder.block.1" in n][:8]
    target = get_profile("paper").for_p2("nlp").talos.target
    ours = diagonal_fisher(model, examples, spec.name, names, target=target, batch_size=len(examples), seed=3,
                           method="loop", progress=False)
    labels = _sampled(model, examples, spec.name, 3)
    params = dict(model.named_parameters())
    head = model.heads[spec.name]
    ref = {n: torch.zeros_like(params[n]) for n in names}
    for ex, y in zip(examples, labels):
        batch = model.tokenize(spec.name, [ex])
        ids = head.choice_ids[y][head.choice_mask[y].bool()].unsqueeze(0)  # the sampled answer's tokens (with </s>)
        for n in names:
            params[n].requires_grad_(True)
        out = model.backbone(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=ids)
        loglik = -out.loss * ids.shape[1]  # HF's mean token CE × length = − log p(answer | x)
        grads = torch.autograd.grad(loglik, [params[n] for n in names])
        for n, g in zip(names, grads):
            ref[n] += g.pow(2)
        for n in names:
            params[n].requires_grad_(False)
    _close(ours, ref, names)


@pytest.mark.parametrize("family", ["vision", "nlp"])
def test_talos_mask_uses_the_family_target(tmp_path, family, monkeypatch):
    """p2.methods.talos_mask passes the profile's target to the calibration and keys its cache by it."""
    import repro.core.fisher as fisher
    import repro.p2.methods as methods
    from repro.p2.methods import talos_mask
    from repro.workbench import Workbench

    prof = get_profile("paper-smoke").for_p2(family, device="cpu")
    wb = Workbench(prof, artifacts_dir=tmp_path)
    seen = {}
    real = fisher.talos_calibrate

    def spy(*a, **kw):
        seen["target"] = kw["target"]
        return real(*a, **kw)

    monkeypatch.setattr(methods, "talos_calibrate", spy)  # the name p2.methods calls
    mask, meta = talos_mask(wb, prof.p2_tasks[0])
    assert seen["target"] == prof.talos.target and meta["config"]["target"] == prof.talos.target
    assert 0 < mask.count() < mask.eligible_count
