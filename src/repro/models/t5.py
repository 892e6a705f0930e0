"""T5 rank classification (P2's NLP model, official ``predict_mulChoice(batch, False)`` semantics).

The input is the task's template rendered as one string (``TaskSpec.t5_template`` when the spec has one, else
``TaskSpec.template``; same placeholders as :mod:`repro.models.prompt_lm`, and a ``{mask}`` becomes T5's first
sentinel ``<extra_id_0>``), tokenized with ``</s>``.  Over ``max_length`` the longest sentence is cut (at token
boundaries, longest first) so the template words survive.  The C answer choices are
``TaskSpec.options`` (stripped), or the label names when a spec has no options; each is tokenized as a target
(with its ``</s>``).  The logit of choice c is the **summed token log-probability** of its target sequence under
teacher forcing, ``Σ_t log p(y_t | y_<t, x)`` over the target's tokens (``</s>`` included), with **no length
normalization**; the prediction is the argmax over choices.

Training (:meth:`T5RankClassifier.training_loss`) minimises the official loss: the token-level cross-entropy of
the gold answer under teacher forcing, summed over the batch's gold target tokens and divided by their count
(``nlp/T5Wrapper.forward``); training batches (:meth:`T5RankClassifier.collate` with ``train=True``) decode the
gold answer only.  The TaLoS NLP sensitivity score uses ``logits[b, c]`` of a sampled choice c directly.  The
encoder runs once per example; the decoder once per (example, decoded choice).

Parameter sets: the maskable set (P2, D2) is every ``nn.Linear`` except ``lm_head`` (q, k, v, o of self- and
cross-attention, FFN ``wi``/``wo``) plus every T5 layer norm (``layer_norm``, ``final_layer_norm``); the shared
embedding, the relative attention bias tables and ``lm_head`` are frozen.  The graftable set (P1-style, for
completeness) is the parameters of the encoder and decoder blocks, minus the relative attention bias tables
(embeddings).  There is no task head with parameters: each task's "head" holds the tokenized choices (buffers).
"""

from __future__ import annotations

from typing import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from repro.data.tasks import Example, TaskSpec
from repro.models.base import Classifier
from repro.models.prompt_lm import attention_mask_for, fit_text, render_segments
from repro.models.tiny_tokenizers import tiny_t5_tokenizer


class ChoiceHead(nn.Module):
    """Per-task tokenized answer choices: ``choice_ids[C, T]`` (pad-padded) and ``choice_mask[C, T]``."""

    def __init__(self, choice_ids: torch.Tensor, choice_mask: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("choice_ids", choice_ids.long())
        self.register_buffer("choice_mask", choice_mask.long())


class T5RankClassifier(Classifier):
    """``T5ForConditionalGeneration`` → C-way logits = summed log-probs of each answer choice."""

    #: LoRA targets: T5 attention Q and V (the official NLP L-LoRA targets)
    LORA_TARGETS = ("q", "v")

    SENTINEL = "<extra_id_0>"

    def __init__(self, backbone: nn.Module, tokenizer, max_length: int = 256) -> None:
        super().__init__()
        self.backbone = backbone
        self.tokenizer = tokenizer
        self.max_length = int(max_length)

    # -- tasks -------------------------------------------------------------------------------------------
    @staticmethod
    def choices_of(spec: TaskSpec) -> list[str]:
        """Answer strings: ``spec.options`` stripped, else the label names."""
        return [o.strip() for o in spec.options] if spec.options else list(spec.labels)

    @staticmethod
    def template_of(spec: TaskSpec) -> str:
        return getattr(spec, "t5_template", "") or spec.template

    def add_task(self, spec: TaskSpec, linear_head: bool = False) -> None:
        if spec.name in self.specs:
            raise ValueError(f"task {spec.name!r} already registered")
        if linear_head:
            raise ValueError("T5 is evaluated by rank classification only; linear_head=True is not supported "
                             "(use linear_head=False)")
        choices = self.choices_of(spec)
        if len(choices) != spec.num_labels or any(not c for c in choices):
            raise ValueError(f"task {spec.name!r}: need one non-empty answer choice per label {spec.labels}, "
                             f"got {choices}")
        if "{mask}" in self.template_of(spec) and self.tokenizer.convert_tokens_to_ids(self.SENTINEL) in (
                None, self.tokenizer.unk_token_id):
            raise ValueError(f"task {spec.name!r}: the template uses {{mask}} but the tokenizer has no {self.SENTINEL}")
        enc = self.tokenizer(text_target=choices, padding=True, return_tensors="pt")
        self.specs[spec.name] = spec
        self.heads[spec.name] = ChoiceHead(enc["input_ids"], enc["attention_mask"]).to(self.device)

    # -- batches -----------------------------------------------------------------------------------------
    def tokenize(self, task: str, examples: Sequence[Example]) -> dict[str, torch.Tensor]:
        spec = self._check_task(task)
        template = self.template_of(spec)
        segs = [render_segments(template, e, task) for e in examples]
        texts = [fit_text(self.tokenizer, s, self.max_length, mask=self.SENTINEL, task=task) for s in segs]
        enc = self.tokenizer(texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt")
        return {"input_ids": enc["input_ids"].to(self.device), "attention_mask": enc["attention_mask"].to(self.device),
                "labels": torch.tensor([e.label for e in examples], device=self.device)}

    def collate(self, task: str, examples: Sequence[Example], train: bool = False) -> dict[str, torch.Tensor]:
        """:meth:`tokenize`; a training batch also names the gold answer as the one choice to decode
        (``decode_choices`` [B, 1]) and counts its target tokens (``gold_tokens`` [B], ``</s>`` included)."""
        batch = self.tokenize(task, examples)
        if train:
            head = self.heads[task]
            batch["decode_choices"] = batch["labels"].unsqueeze(1)
            batch["gold_tokens"] = head.choice_mask[batch["labels"]].sum(-1)
        return batch

    def training_loss(self, logits: torch.Tensor, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Official T5 loss: token-level CE of the gold answer, Σ_b Σ_t −log p(y_b,t | y_b,<t, x_b) / Σ_b |y_b|."""
        if "decode_choices" in batch:  # logits[b, 0] = the gold answer's sequence log-likelihood
            gold = logits[:, 0]
            tokens = batch["gold_tokens"]
        else:  # all choices decoded (e.g. a plain tokenize batch): pick the gold column
            gold = logits.gather(1, batch["labels"].unsqueeze(1)).squeeze(1)
            tokens = batch.get("gold_tokens")
            if tokens is None:
                raise ValueError("T5 training_loss needs a collate(..., train=True) batch (it counts the gold tokens)")
        return -gold.sum() / tokens.sum()

    def forward(self, batch: dict[str, torch.Tensor], task: str) -> torch.Tensor:
        """D5: logits[b, c] = Σ_t log p(choice_c,t | choice_c,<t, x_b), no length normalization.

        With ``batch["decode_choices"]`` ([B, K] choice indices) only those choices are decoded: logits [B, K]."""
        # heavy (transformers): loaded only when this model family is used
        from transformers.modeling_outputs import BaseModelOutput

        self._check_task(task)
        head = self.heads[task]
        ids, am = batch["input_ids"], batch["attention_mask"]
        am = attention_mask_for(self.backbone, am)
        enc = self.backbone.encoder(input_ids=ids, attention_mask=am).last_hidden_state
        B = ids.shape[0]
        if "decode_choices" in batch:
            which = batch["decode_choices"]  # [B, K]
            C = which.shape[1]
            tgt, tmask = head.choice_ids[which.reshape(-1)], head.choice_mask[which.reshape(-1)]  # [B*K, T]
        else:
            C = head.choice_ids.shape[0]
            tgt = head.choice_ids.repeat(B, 1)  # [B*C, T]
            tmask = head.choice_mask.repeat(B, 1)
        enc = enc.repeat_interleave(C, dim=0)  # [B*C, L, d], example-major
        am = am.repeat_interleave(C, dim=0)
        start = self.backbone.config.decoder_start_token_id
        dec_in = torch.cat([torch.full_like(tgt[:, :1], start), tgt[:, :-1]], dim=1)  # teacher forcing
        # targets are right-padded, so causal attention alone keeps padding out of every real position
        out = self.backbone(encoder_outputs=BaseModelOutput(last_hidden_state=enc), attention_mask=am,
                            decoder_input_ids=dec_in)
        logp = F.log_softmax(out.logits.float(), dim=-1).gather(-1, tgt.unsqueeze(-1)).squeeze(-1)
        return (logp * tmask).sum(-1).view(B, C)

    # -- parameter sets ----------------------------------------------------------------------------------
    def graftable_names(self) -> list[str]:
        """Encoder/decoder block parameters, without the relative attention bias tables (embeddings)."""
        return [n for n, _ in self.named_parameters()
                if n.startswith(("backbone.encoder.block.", "backbone.decoder.block."))
                and "relative_attention_bias" not in n]

    def full_names(self) -> list[str]:
        """P2's "all" scope: every backbone parameter (the shared embedding, tied to ``lm_head``, and the relative
        attention bias tables included), what the official NLP FT trains."""
        return self.backbone_names()

    def maskable_names(self) -> list[str]:
        """P2 (D2): every ``nn.Linear`` except ``lm_head``, plus every layer norm; embeddings and lm_head frozen."""
        keep: set[str] = set()
        for mname, mod in self.backbone.named_modules():
            leaf = mname.rsplit(".", 1)[-1]
            if (isinstance(mod, nn.Linear) and leaf != "lm_head") or "layer_norm" in leaf:
                keep.update(f"backbone.{mname}.{p}" for p, _ in mod.named_parameters(recurse=False))
        return [n for n, _ in self.named_parameters() if n in keep]


def build_t5(name: str = "t5-base", max_length: int = 256) -> T5RankClassifier:
    """Pre-trained ``T5ForConditionalGeneration`` + tokenizer from the hub (``t5-small`` / ``-base`` / ``-large``)."""
    # heavy (transformers): loaded only when this model family is used
    from transformers import AutoTokenizer, T5ForConditionalGeneration

    hub = name if "/" in name else f"google-t5/{name}"
    tok = AutoTokenizer.from_pretrained(hub)
    model = T5ForConditionalGeneration.from_pretrained(hub, attn_implementation="eager")
    return T5RankClassifier(model, tok, max_length=max_length)


def build_tiny_t5(seed: int = 0, hidden: int = 32, layers: int = 2, max_length: int = 64,
                  extra_words: Sequence[str] = ()) -> T5RankClassifier:
    """Random-init tiny ``T5ForConditionalGeneration`` with the offline tiny Unigram tokenizer (tests, smoke)."""
    # heavy (transformers): loaded only when this model family is used
    from transformers import T5Config, T5ForConditionalGeneration

    tok = tiny_t5_tokenizer(tuple(extra_words))
    cfg = T5Config(vocab_size=len(tok), d_model=hidden, d_kv=hidden // 2, d_ff=2 * hidden, num_layers=layers,
                   num_decoder_layers=layers, num_heads=2, relative_attention_num_buckets=8,
                   pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
                   decoder_start_token_id=tok.pad_token_id, attn_implementation="eager")
    torch.manual_seed(seed)
    model = T5ForConditionalGeneration(cfg)
    return T5RankClassifier(model, tok, max_length=max_length)
