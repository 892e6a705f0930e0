"""GPT-2 prompt classifier (P1's autoregressive experiments, official ``gpt_trainer.py`` semantics).

The input is the task's GPT-2 prompt (``TaskSpec.gpt2_prompt``, same placeholders as
:mod:`repro.models.prompt_lm`, e.g. ``'"{a}" has a tone that is'``) with no special tokens.  The official code
appends the gold option and reads the LM logits at the position *just before the first option token*; with causal
attention those logits do not depend on the option, so we feed the prompt alone and read the last prompt position
(right padding, so positions are unaffected).  The vocabulary logits there, computed by the model's own frozen
(tied) LM head, are restricted to the **first token of each option** (``TaskSpec.options``, encoded with a leading
space, added when missing), giving C-way logits; the loss is CE over the C options.

First tokens must be distinct: the official TREC options (" a description.", " an entity.", " a location.", ...)
collapse to " a"/" an" and make that task ill-posed (see the spec, B5); we raise a clear error instead.

``add_task(spec, linear_head=True)`` gives a trainable ``nn.Linear(hidden, C)`` on the last prompt position's
final hidden state (the causal analogue of the CLS head; not in the official code).
"""

from __future__ import annotations

from typing import Sequence

import torch
from torch import nn

from repro.data.tasks import Example, TaskSpec
from repro.models.base import Classifier
from repro.models.prompt_lm import LabelWordHead, encode_segments, pad_batch, render_segments, single_token_ids
from repro.models.tiny_tokenizers import tiny_bpe_tokenizer


class CausalLMPromptClassifier(Classifier):
    """GPT-2 (``GPT2LMHeadModel``) → next-token logits at the end of the prompt, restricted to the options."""

    #: LoRA targets: GPT-2 packed QKV Conv1D (peft adapts all of c_attn)
    LORA_TARGETS = ("c_attn",)

    def __init__(self, backbone: nn.Module, tokenizer, max_length: int = 256) -> None:
        super().__init__()
        self.backbone = backbone
        self.tokenizer = tokenizer
        self.max_length = int(max_length)
        pad = tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else 0)  # official: pad id 0 (masked out anyway)

    def add_task(self, spec: TaskSpec, linear_head: bool = False) -> None:
        if spec.name in self.specs:
            raise ValueError(f"task {spec.name!r} already registered")
        if not spec.gpt2_prompt:
            raise ValueError(f"task {spec.name!r} has no gpt2_prompt (TaskSpec.gpt2_prompt)")
        if linear_head:
            head: nn.Module = nn.Linear(self.backbone.config.n_embd, spec.num_labels)
        else:
            if len(spec.options) != spec.num_labels:
                raise ValueError(f"task {spec.name!r}: need one option per label {spec.labels}, got {spec.options}")
            head = LabelWordHead(single_token_ids(self.tokenizer, spec.options, spec.name, what="option",
                                                  first_only=True))
        self.specs[spec.name] = spec
        self.heads[spec.name] = head.to(self.device)

    def tokenize(self, task: str, examples: Sequence[Example]) -> dict[str, torch.Tensor]:
        spec = self._check_task(task)
        rendered = [render_segments(spec.gpt2_prompt, e, task) for e in examples]
        seqs = encode_segments(self.tokenizer, rendered, self.max_length, n_special=0, task=task)
        if any(len(s) == 0 for s in seqs):
            raise ValueError(f"task {task!r}: an example renders to an empty prompt")
        ids, att = pad_batch(seqs, self.pad_id, self.device)
        return {"input_ids": ids, "attention_mask": att, "last_pos": att.sum(1) - 1,
                "labels": torch.tensor([e.label for e in examples], device=self.device)}

    def forward(self, batch: dict[str, torch.Tensor], task: str) -> torch.Tensor:
        self._check_task(task)
        head = self.heads[task]
        hidden = self.backbone.transformer(input_ids=batch["input_ids"],
                                           attention_mask=batch["attention_mask"]).last_hidden_state
        last = hidden[torch.arange(hidden.shape[0], device=hidden.device), batch["last_pos"]]
        if isinstance(head, LabelWordHead):
            return head(self.backbone.lm_head(last))
        return head(last)

    def graftable_names(self) -> list[str]:
        """P1 eligible set for GPT-2: every ``transformer.h.*`` parameter (``ln_f``, ``wte``, ``wpe`` excluded)."""
        return [n for n, _ in self.named_parameters() if n.startswith("backbone.transformer.h.")]

    def maskable_names(self) -> list[str]:
        """Conv1D (linear) layers and LayerNorms of the blocks (= the graftable set)."""
        return self.graftable_names()


def build_gpt2(name: str = "gpt2", max_length: int = 256) -> CausalLMPromptClassifier:
    """Pre-trained ``GPT2LMHeadModel`` + tokenizer from the hub (needs internet or a local HF cache)."""
    # heavy (transformers): loaded only when this model family is used
    from transformers import AutoTokenizer, GPT2LMHeadModel

    tok = AutoTokenizer.from_pretrained(name)
    model = GPT2LMHeadModel.from_pretrained(name, attn_implementation="eager")
    return CausalLMPromptClassifier(model, tok, max_length=max_length)


def build_tiny_gpt2(seed: int = 0, hidden: int = 32, layers: int = 2, max_length: int = 64,
                    extra_words: Sequence[str] = ()) -> CausalLMPromptClassifier:
    """Random-init tiny ``GPT2LMHeadModel`` with the offline tiny BPE tokenizer (tests, smoke)."""
    # heavy (transformers): loaded only when this model family is used
    from transformers import GPT2Config, GPT2LMHeadModel

    tok = tiny_bpe_tokenizer("gpt2", tuple(extra_words))
    cfg = GPT2Config(vocab_size=len(tok), n_embd=hidden, n_layer=layers, n_head=2, n_positions=max_length,
                     bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, attn_implementation="eager")
    torch.manual_seed(seed)
    model = GPT2LMHeadModel(cfg)
    return CausalLMPromptClassifier(model, tok, max_length=max_length)
