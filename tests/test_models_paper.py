"""The paper-profile model classes on tiny random-init instances: RoBERTa prompt MLM (+ CLS head), GPT-2 prompt,
T5 rank classification, CLIP zero-shot.  Offline: tiny in-process tokenizers, no weight downloads."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from repro.data import Example, TaskSpec
from repro.core.evaluation import forward, predict
from repro.models.build import MODEL_KEYS, build_model
from repro.models.prompt_lm import encode_segments, render_segments
from repro.profiles import get_profile

SST = TaskSpec("SST-2", ("0", "1"), template="{a} It was{mask}.", label_words=("terrible", "great"),
               gpt2_prompt='"{a}" has a tone that is', options=(" negative", " positive"))
QNLI = TaskSpec("QNLI", ("entailment", "not_entailment"), pair=True, template="{a-}?{mask}, {b_lower}",
                label_words=("Yes", "No"), gpt2_prompt=" {a}\n question: {b} true or false?\n answer:",
                options=(" true", " false"))
TOPIC = TaskSpec("AGNews", ("World", "Sports", "Business", "Tech"), template="{mask}: {a}",
                 label_words=("World", "Sports", "Business", "Tech"), gpt2_prompt=" summary: {a}\n topic:",
                 options=(" World", " Sports", " Business", " Science"))

SENTS = [Example("a great film.", 1), Example("a dull and boring film that i hated.", 0),
         Example("truly superb acting and a fine plot", 1)]
PAIRS = [Example("What did the bank do?", 0, "The bank raised rates."),
         Example("Who won?", 1, "Stocks fell on monday.")]
TOPICS = [Example("the team won the match", 1), Example("stocks fell on monday", 2),
          Example("a new planet was found", 3)]

SMOKE = get_profile("smoke")
TEXT_KEYS = ("tiny-roberta", "tiny-gpt2", "tiny-t5")


def build(key: str, seed: int = 0):
    torch.manual_seed(seed)
    return build_model(SMOKE, seed=seed, model=key)


def text_model(key: str):
    m = build(key)
    for spec in (SST, QNLI, TOPIC):
        m.add_task(spec)
    return m


# ---- tokenizers and templates ---------------------------------------------------------------------------------
def test_tiny_tokenizers_offline_deterministic_single_token_words():
    from repro.models.tiny_tokenizers import tiny_bpe_tokenizer, tiny_t5_tokenizer

    r1, r2 = tiny_bpe_tokenizer("roberta"), tiny_bpe_tokenizer("roberta", extra_words=["zebra"])
    assert r1.get_vocab() == tiny_bpe_tokenizer("roberta").get_vocab()
    for w in ("great", "terrible", "Yes", "Maybe", "Description", "subjective"):
        assert len(r1(" " + w, add_special_tokens=False)["input_ids"]) == 1
    assert len(r2(" zebra", add_special_tokens=False)["input_ids"]) == 1
    ids = r1("It was<mask>.")["input_ids"]
    assert ids[0] == r1.cls_token_id and ids[-1] == r1.sep_token_id and r1.mask_token_id in ids
    assert r1.decode(r1("Hello, wörld!", add_special_tokens=False)["input_ids"]) == "Hello, wörld!"  # byte-level
    g = tiny_bpe_tokenizer("gpt2")
    assert g("a b")["input_ids"] == g("a b", add_special_tokens=False)["input_ids"]  # GPT-2 adds nothing
    t5 = tiny_t5_tokenizer()
    assert (t5.pad_token_id, t5.eos_token_id) == (0, 1)
    assert t5("great film")["input_ids"][-1] == 1 and len(t5(text_target="positive")["input_ids"]) == 2
    with pytest.raises(ValueError, match="flavour"):
        tiny_bpe_tokenizer("bert")


def test_template_placeholders_and_truncation_keep_mask():
    segs = render_segments(QNLI.template, PAIRS[0], "QNLI")
    assert [s.kind for s in segs] == ["sent", "text", "mask", "text", "sent"]
    assert segs[0].text == "What did the bank do" and segs[1].text == "?"
    assert segs[3].text == "," and segs[4].text == " the bank raised rates."  # space moves to the sentence
    assert [s.text for s in render_segments("{a} It was {mask}.", SENTS[0])] == ["a great film.", " It was", "", "."]
    with pytest.raises(ValueError, match=r"valid: \{a\}, \{b\}, \{mask\}"):
        render_segments("{a} {c}", SENTS[0])
    with pytest.raises(ValueError, match="no text_b"):
        render_segments("{a} {b}", SENTS[0])
    m = build("tiny-roberta")
    long = Example(" ".join(["boring"] * 100), 0)
    (ids,) = encode_segments(m.tokenizer, [render_segments(SST.template, long)], 20, 2, m.tokenizer.mask_token_id)
    assert len(ids) == 18 and m.tokenizer.mask_token_id in ids
    assert m.tokenizer.decode(ids[-4:]) == " It was<mask>."


# ---- shapes, padding, semantics of each head -----------------------------------------------------------------
@pytest.mark.parametrize("key", TEXT_KEYS)
def test_logits_shape_and_padding_invariance(key):
    m = text_model(key).eval()
    for task, ex, c in (("SST-2", SENTS, 2), ("QNLI", PAIRS, 2), ("AGNews", TOPICS, 4)):
        batch = m.tokenize(task, ex)
        assert batch["labels"].tolist() == [e.label for e in ex]
        with torch.no_grad():
            logits = m(batch, task)
            alone = torch.cat([m(m.tokenize(task, [e]), task) for e in ex])
        assert logits.shape == (len(ex), c) and torch.isfinite(logits).all()
        torch.testing.assert_close(logits, alone, atol=1e-5, rtol=1e-5)


def test_roberta_prompt_logits_are_mlm_logits_at_mask():
    m = text_model("tiny-roberta").eval()
    batch = m.tokenize("SST-2", SENTS)
    ids = [m.tokenizer.convert_tokens_to_ids("Ġ" + w) for w in SST.label_words]
    with torch.no_grad():
        full = m.backbone(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
        got = m(batch, "SST-2")
    rows = torch.arange(len(SENTS))
    assert (batch["input_ids"][rows, batch["mask_pos"]] == m.tokenizer.mask_token_id).all()
    torch.testing.assert_close(got, full[rows, batch["mask_pos"]][:, ids], atol=1e-5, rtol=1e-5)
    assert m.head_names("SST-2") == []  # the label-word head holds only a buffer


def test_gpt2_logits_at_position_before_first_option_token():
    m = text_model("tiny-gpt2").eval()
    tok = m.tokenizer
    ex = SENTS[0]
    prompt = tok('"a great film." has a tone that is')["input_ids"]
    first = [tok(o)["input_ids"][0] for o in SST.options]
    gold = tok(SST.options[ex.label])["input_ids"]
    with torch.no_grad():
        full = m.backbone(input_ids=torch.tensor([prompt + gold])).logits[0, len(prompt) - 1]
        got = m(m.tokenize("SST-2", [ex]), "SST-2")[0]
    torch.testing.assert_close(got, full[first], atol=1e-5, rtol=1e-5)


def test_t5_rank_classification_is_summed_token_logprob():
    m = text_model("tiny-t5").eval()
    tok = m.tokenizer
    ex = PAIRS[1]
    text = "Who won?<extra_id_0>, stocks fell on monday."
    with torch.no_grad():
        got = m(m.tokenize("QNLI", [ex]), "QNLI")[0]
        for c, choice in enumerate(("true", "false")):
            x = tok(text, return_tensors="pt")
            y = tok(text_target=choice, return_tensors="pt")["input_ids"]
            logits = m.backbone(input_ids=x["input_ids"], attention_mask=x["attention_mask"], labels=y).logits
            manual = F.log_softmax(logits.float(), -1)[0].gather(-1, y[0][:, None]).sum()
            torch.testing.assert_close(got[c], manual, atol=1e-4, rtol=1e-5)
    with pytest.raises(ValueError, match="linear_head"):
        m.add_task(TaskSpec("x", ("a", "b")), linear_head=True)


def test_cls_variant_linear_head_on_position_zero():
    m = build("tiny-roberta")
    m.add_task(QNLI, linear_head=True)
    assert m.head_names("QNLI") == ["heads.QNLI.weight", "heads.QNLI.bias"]
    batch = m.tokenize("QNLI", PAIRS)
    assert "mask_pos" not in batch and (batch["input_ids"] == m.tokenizer.mask_token_id).sum() == 0
    m.eval()
    with torch.no_grad():
        out = m.backbone.roberta(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
        h0 = out.last_hidden_state[:, 0]
        torch.testing.assert_close(m(batch, "QNLI"), m.heads["QNLI"](h0), atol=1e-5, rtol=1e-5)
    cls = build("tiny-roberta-cls")
    cls.add_task(SST)
    assert cls.head_names("SST-2") == ["heads.SST-2.weight", "heads.SST-2.bias"]


def test_label_words_and_options_must_be_single_distinct_tokens():
    m = build("tiny-roberta")
    bad = TaskSpec("bad", ("0", "1"), label_words=("terrible", "xqzvwkj"))
    with pytest.raises(ValueError, match="single token"):
        m.add_task(bad)
    assert not m.has_task("bad")
    with pytest.raises(ValueError, match="one label word per label"):
        m.add_task(TaskSpec("short", ("0", "1"), label_words=("great",)))
    with pytest.raises(ValueError, match="distinct"):
        m.add_task(TaskSpec("dup", ("0", "1"), label_words=("great", " great")))
    g = build("tiny-gpt2")
    trec = TaskSpec("TREC", ("0", "1"), gpt2_prompt=" {a} The answer to this question will be",
                    options=(" a description.", " a location."))
    with pytest.raises(ValueError, match="distinct"):
        g.add_task(trec)
    with pytest.raises(KeyError, match="add_task"):
        g.tokenize("SST-2", SENTS)


# ---- parameter sets, gradients, overrides ----------------------------------------------------------------------
@pytest.mark.parametrize("key", TEXT_KEYS)
def test_parameter_sets(key):
    m = text_model(key)
    names = [n for n, _ in m.named_parameters()]
    graft, mask, backbone = m.graftable_names(), m.maskable_names(), set(m.backbone_names())
    assert graft and mask and set(graft) <= backbone and set(mask) <= backbone
    for n in graft + mask:
        assert not any(k in n for k in ("embed", "wte", "wpe", "shared", "lm_head", "relative_attention_bias"))
    if key == "tiny-roberta":
        assert set(graft) == {n for n in names if ".encoder.layer." in n} and mask == graft
    if key == "tiny-gpt2":
        assert set(graft) == {n for n in names if ".transformer.h." in n} and mask == graft
    if key == "tiny-t5":
        lin = {f"backbone.{mn}.weight" for mn, mod in m.backbone.named_modules()
               if isinstance(mod, torch.nn.Linear) and mn != "lm_head"}
        norms = {n for n in names if "layer_norm" in n}
        assert set(mask) == lin | norms
        assert "backbone.encoder.final_layer_norm.weight" in mask and "backbone.decoder.final_layer_norm.weight" in mask
        assert set(graft) == {n for n in names if ".block." in n and "relative_attention_bias" not in n}
        # P2's "all" scope (the official FT): every backbone parameter, the shared embedding (tied to lm_head) and
        # the relative attention bias included
        full = m.full_names()
        assert set(full) == backbone and set(mask) < set(full)
        assert "backbone.shared.weight" in full and any("relative_attention_bias" in n for n in full)


@pytest.mark.parametrize("key", TEXT_KEYS)
def test_gradient_reaches_exactly_the_trainable_set(key):
    m = text_model(key)
    m.train()
    m.freeze_except(m.graftable_names())
    batch = m.tokenize("QNLI", PAIRS)
    F.cross_entropy(m(batch, "QNLI"), batch["labels"]).backward()
    got = {n for n, p in m.named_parameters() if p.grad is not None}
    assert got == set(m.graftable_names())
    assert sum(float(p.grad.abs().sum()) for n, p in m.named_parameters() if p.grad is not None) > 0


@pytest.mark.parametrize("key", TEXT_KEYS)
def test_predict_with_and_without_overrides(key):
    m = text_model(key)
    base = predict(m, SENTS, "SST-2")
    assert base.logits.shape == (3, 2) and base.labels.tolist() == [1, 0, 1]
    name = m.graftable_names()[len(m.graftable_names()) // 2]
    p = dict(m.named_parameters())[name]
    same = predict(m, SENTS, "SST-2", overrides={name: p.detach().clone()})
    torch.testing.assert_close(same.logits, base.logits)
    zero = predict(m, SENTS, "SST-2", overrides={name: torch.zeros_like(p)})
    assert not torch.allclose(zero.logits, base.logits)
    torch.testing.assert_close(predict(m, SENTS, "SST-2").logits, base.logits)  # model itself untouched


@pytest.mark.parametrize("key", TEXT_KEYS)
def test_linearized_forward_and_per_example_grads(key):
    from torch.func import functional_call, grad, vmap

    m = text_model(key).eval()
    batch = m.tokenize("SST-2", SENTS)
    names = m.maskable_names()
    theta0 = {n: p.detach().clone() for n, p in m.named_parameters() if n in names}
    with torch.no_grad():
        torch.testing.assert_close(forward(m, batch, "SST-2", linear_base=theta0), m(batch, "SST-2"))

    def loss(params, one):
        b1 = {k: v[None] for k, v in one.items()}
        return F.cross_entropy(functional_call(m, params, (b1,), {"task": "SST-2"}, strict=False), b1["labels"])

    per_ex = vmap(grad(loss), in_dims=(None, 0))(theta0, batch)
    n0 = names[0]
    one = grad(loss)(theta0, {k: v[1] for k, v in batch.items()})
    torch.testing.assert_close(per_ex[n0][1], one[n0], atol=1e-5, rtol=1e-4)


def test_builder_keys():
    assert {"roberta-base", "roberta-base-cls", "gpt2", "t5-small", "t5-base", "t5-large", "clip-vit-b32",
            "tiny-roberta", "tiny-gpt2", "tiny-t5", "tiny-clip"} <= set(MODEL_KEYS)
    with pytest.raises(ValueError, match="tiny-roberta"):
        build_model(SMOKE, model="roberta-huge")


# ---- CLIP -------------------------------------------------------------------------------------------------------
def _images(n: int, seed: int = 0):
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    return [Image.fromarray(rng.integers(0, 255, (40, 48, 3), dtype=np.uint8)) for _ in range(n)]


CIFAR = TaskSpec("CIFAR3", ("cat", "dog", "truck"))
TEMPLATES = ("a photo of a {}.", lambda c: f"a blurry picture of the {c}.", "art of a {}.")


def test_clip_zero_shot_head_and_image_inputs(tmp_path):
    pytest.importorskip("open_clip")
    from repro.data.tasks import ImageExample

    m = build("tiny-clip")
    m.add_task(CIFAR, templates=TEMPLATES)
    m.eval()
    imgs = _images(3)
    path = tmp_path / "x.png"
    imgs[0].save(path)
    examples = [ImageExample(imgs[0], 0), ImageExample(path, 0), ImageExample(m.preprocess(imgs[1]), 1),
                Example(str(path), 2)]
    batch = m.tokenize("CIFAR3", examples)
    assert batch["pixel_values"].shape == (4, 3, 32, 32) and batch["labels"].tolist() == [0, 0, 1, 2]
    torch.testing.assert_close(batch["pixel_values"][0], batch["pixel_values"][1])  # PIL == path
    with torch.no_grad():
        logits = m(batch, "CIFAR3")
        # D5 by hand: per class, normalized mean of normalized template embeddings; × exp(logit_scale)
        clip = m.backbone
        w = []
        for c in CIFAR.labels:
            texts = [t(c) if callable(t) else t.format(c) for t in TEMPLATES]
            e = F.normalize(clip.encode_text(m.text_tokenizer(texts)), dim=-1)
            w.append(F.normalize(e.mean(0), dim=-1))
        img = F.normalize(clip.encode_image(batch["pixel_values"]), dim=-1)
        manual = clip.logit_scale.exp() * img @ torch.stack(w).T
    assert logits.shape == (4, 3)
    torch.testing.assert_close(logits, manual, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(m.heads["CIFAR3"].weight, torch.stack(w), atol=1e-5, rtol=1e-5)
    m.train()  # train mode: augmentation transform, same output shape
    assert m.tokenize("CIFAR3", examples[:1])["pixel_values"].shape == (1, 3, 32, 32)
    with pytest.raises(TypeError, match="ImageExample"):
        m.tokenize("CIFAR3", [("not", "an example")])


def test_clip_class_vectors_batched_and_kept_per_text_tower(monkeypatch):
    """The zero-shot class vectors are encoded in batches across classes and kept per process, keyed by the prompts
    and the text tower's weights: a batch size that splits a class gives the same vectors, a second head reuses
    them without encoding, and an edited text tower (never the image tower) computes them again."""
    pytest.importorskip("open_clip")
    from repro.models import clip as clip_mod

    clip_mod._CLASS_VECTORS.clear()
    m = build("tiny-clip")
    whole = m.class_vectors(CIFAR.labels, TEMPLATES)
    clip_mod._CLASS_VECTORS.clear()
    monkeypatch.setattr(clip_mod, "TEXT_BATCH", 2)  # 9 prompts in 5 calls, classes split across calls
    calls = []
    real = m.backbone.encode_text
    monkeypatch.setattr(m.backbone, "encode_text", lambda tokens: calls.append(len(tokens)) or real(tokens))
    torch.testing.assert_close(m.class_vectors(CIFAR.labels, TEMPLATES), whole, atol=1e-6, rtol=1e-6)
    assert calls == [2, 2, 2, 2, 1]
    m.class_vectors(CIFAR.labels, TEMPLATES)
    assert len(calls) == 5  # reused
    with torch.no_grad():
        next(p for n, p in m.backbone.named_parameters() if n.startswith("visual.")).add_(1.0)
    m.class_vectors(CIFAR.labels, TEMPLATES)
    assert len(calls) == 5  # the image tower is not part of the key
    with torch.no_grad():
        m.backbone.text_projection.add_(0.5)
    changed = m.class_vectors(CIFAR.labels, TEMPLATES)
    assert len(calls) == 10 and not torch.allclose(changed, whole)


def test_clip_parameter_sets_gradients_and_overrides():
    pytest.importorskip("open_clip")
    from repro.data.tasks import ImageExample

    m = build("tiny-clip")
    m.add_task(CIFAR)
    m.add_task(TaskSpec("lin", ("a", "b", "c")), linear_head=True)
    mask, graft = m.maskable_names(), m.graftable_names()
    v = "backbone.visual."
    assert {v + "conv1.weight", v + "ln_pre.weight", v + "ln_post.bias",
            v + "transformer.resblocks.0.attn.in_proj_weight", v + "transformer.resblocks.0.attn.in_proj_bias",
            v + "transformer.resblocks.0.attn.out_proj.weight", v + "transformer.resblocks.1.mlp.c_fc.bias",
            v + "transformer.resblocks.1.mlp.c_proj.weight", v + "transformer.resblocks.1.ln_2.weight"} <= set(mask)
    assert all(n.startswith(v) for n in mask)
    for frozen in ("class_embedding", "positional_embedding", "proj"):
        assert v + frozen not in mask
    # P2's "all" scope (the official FT): the whole image tower, those three tensors too; not the text tower
    full = m.full_names()
    assert set(full) == set(mask) | {v + "class_embedding", v + "positional_embedding", v + "proj"}
    assert all(n.startswith(v) for n in full) and "backbone.logit_scale" not in full
    assert set(graft) == {n for n in mask if ".resblocks." in n}
    # gradient: every backbone parameter asks for it, only the image tower (and the linear head) receive it
    assert not m.heads["CIFAR3"].weight.requires_grad  # the zero-shot head is frozen
    for n, p in m.named_parameters():
        p.requires_grad_(n != "heads.CIFAR3.weight")
    ex = [ImageExample(im, i % 3) for i, im in enumerate(_images(4))]
    batch = m.tokenize("CIFAR3", ex)
    (m(batch, "CIFAR3").logsumexp(-1).sum() + m(batch, "lin").sum()).backward()
    got = {n for n, p in m.named_parameters() if p.grad is not None}
    assert set(mask) <= got
    assert not any(n.startswith(("backbone.transformer.", "backbone.token_embedding", "backbone.ln_final",
                                 "heads.CIFAR3")) or n == "backbone.logit_scale" for n in got)
    assert {"heads.lin.linear.weight", "heads.lin.linear.bias"} <= got
    # overrides, linearized forward
    base = predict(m, ex, "CIFAR3")
    name = next(n for n in graft if n.endswith("c_fc.weight"))
    zero = predict(m, ex, "CIFAR3", overrides={name: torch.zeros_like(dict(m.named_parameters())[name])})
    assert not torch.allclose(zero.logits, base.logits)
    theta0 = {n: p.detach().clone() for n, p in m.named_parameters() if n in mask}
    m.eval()
    with torch.no_grad():
        torch.testing.assert_close(forward(m, batch, "CIFAR3", linear_base=theta0), m(batch, "CIFAR3"))
