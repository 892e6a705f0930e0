"""Prompt-based masked-LM classifier (P1's model: LM-BFF prompt fine-tuning of roberta-base), plus the CLS variant.

**Prompt head** (the default, LM-BFF ``few_shot_type=prompt``): the input is the task's template rendered with the
example (``TaskSpec.template``, e.g. SST-2 ``"{a} It was{mask}."`` becomes ``<s>{a} It was<mask>.</s>``), the
encoder's hidden state at ``<mask>`` goes through the model's own pre-trained ``RobertaLMHead``
(dense → GELU → LayerNorm → tied decoder + bias), and the vocabulary logits are gathered at the C label-word ids
(``" great"`` / ``" terrible"``), giving C-way logits.  The LM head (and the word embeddings it is tied to) is
**frozen and part of the backbone**, not a task head; the per-task "head" module holds only the label-word ids
(a buffer, no parameters).  So ``backbone_names()`` includes the frozen embeddings / LM head (their task-vector
entries are zero) and ``head_names(task)`` is empty.

**CLS variant** (LM-BFF ``few_shot_type=finetune`` with ``use_CLS_linearhead``; ``add_task(spec, linear_head=True)``
or the ``roberta-base-cls`` builder): no template, the plain input ``<s>a</s></s>b</s>``, and a fresh trainable
``nn.Linear(hidden, C)`` on the *raw* position-0 hidden state (no dense/tanh/dropout), as in the official code.

Templates (shared with :mod:`repro.models.causal_lm` and :mod:`repro.models.t5`): placeholders ``{a}`` / ``{b}``
are the two sentences, ``{mask}`` the mask token.  Sentence placeholders take modifiers, in any order:
``-`` drops the sentence's last character (LM-BFF ``*sent-_i*``, e.g. ``{a-}?`` replaces a final "." by "?"), and
``_lower`` lower-cases its first character (LM-BFF ``*sentl_i*``), e.g. ``{b_lower}`` or ``{b-_lower}``.
Whitespace in the template is significant, as in LM-BFF: the space before a sentence placeholder is kept with
the sentence (``*+sent*``: encoded as `` sentence``), and there is no space before ``{mask}`` (the label words
carry it; a space written before ``{mask}`` is dropped, as RoBERTa's ``<mask>`` strips its left space).

Template parts are tokenized separately and concatenated, like LM-BFF.  Truncation (``max_length``, 128 by
default and 256 for RTE/MNLI/SNLI in the paper build) removes tokens from the end of the *longest sentence*
until the prompt fits, so the template words and ``<mask>`` always survive (LM-BFF truncates the tail of the
whole sequence and can cut the mask off; we do not).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping, Sequence

import torch
from torch import nn

from repro.data.tasks import Example, TaskSpec
from repro.models.base import Classifier
from repro.models.tiny_tokenizers import tiny_bpe_tokenizer

#: per-task maximum lengths of the official P1 scripts (``--max_seq_len 256`` for these, else 128)
PAPER_TASK_MAX_LENGTH: dict[str, int] = {"RTE": 256, "MNLI": 256, "SNLI": 256}

_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_SENT = re.compile(r"^(a|b)((?:-|_lower)*)$")


# --------------------------------------------------------------------------------------------------------------
# templates (shared by the prompt, causal-LM and T5 classifiers)
# --------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Segment:
    """One part of a rendered template: ``kind`` is "text" (template words), "sent" (example text) or "mask"."""

    kind: str
    text: str = ""


def _apply_modifiers(text: str, mods: str) -> str:
    if "-" in mods:
        text = text[:-1]
    if "_lower" in mods and text:
        text = text[0].lower() + text[1:]
    return text


def render_segments(template: str, example: Example, task: str = "") -> list[Segment]:
    """Split ``template`` into text / sentence / mask segments filled with ``example`` (see module docstring)."""
    parts: list[Segment] = []
    pos = 0
    for m in _PLACEHOLDER.finditer(template):
        if m.start() > pos:
            parts.append(Segment("text", template[pos:m.start()]))
        key = m.group(1)
        if key == "mask":
            parts.append(Segment("mask"))
        else:
            sm = _SENT.match(key)
            if sm is None:
                raise ValueError(f"template {template!r} of task {task!r}: unknown placeholder {{{key}}}; valid: "
                                 "{a}, {b}, {mask}, with sentence modifiers '-' (drop last char) and '_lower' "
                                 "(lower-case first char), e.g. {a-}, {b_lower}, {b-_lower}")
            which, mods = sm.group(1), sm.group(2)
            text = example.text_a if which == "a" else example.text_b
            if text is None:
                raise ValueError(f"task {task!r}: template {template!r} uses {{{key}}} but the example has no "
                                 f"text_{which}")
            parts.append(Segment("sent", _apply_modifiers(text, mods)))
        pos = m.end()
    if pos < len(template):
        parts.append(Segment("text", template[pos:]))
    # whitespace: the space before a sentence goes with the sentence; the space before the mask is dropped
    out: list[Segment] = []
    for seg in parts:
        if seg.kind in ("sent", "mask") and out and out[-1].kind == "text":
            prev = out[-1].text
            stripped = prev.rstrip(" ")
            space = prev[len(stripped):]
            out[-1] = Segment("text", stripped)
            if seg.kind == "sent" and space:
                seg = Segment("sent", " " + seg.text.lstrip(" "))
        out.append(seg)
    return [s for s in out if s.kind == "mask" or s.text]


def render_text(template: str, example: Example, task: str = "", mask: str = "") -> str:
    """The template as one string (``{mask}`` replaced by ``mask``), for tokenizers that need whole strings (T5)."""
    return "".join(mask if s.kind == "mask" else s.text for s in render_segments(template, example, task))


def encode_segments(tokenizer, rendered: Sequence[Sequence[Segment]], max_length: int, n_special: int,
                    mask_id: int | None = None, task: str = "") -> list[list[int]]:
    """Token ids of each rendered prompt (parts tokenized separately, no special tokens), truncated to fit.

    ``n_special`` tokens are reserved for the caller's special tokens.  Too-long prompts lose tokens from the end
    of their longest sentence segment, repeatedly, so template words and the mask are never cut.
    """
    texts = [s.text for segs in rendered for s in segs if s.kind != "mask"]
    ids_flat = tokenizer(texts, add_special_tokens=False)["input_ids"] if texts else []
    it = iter(ids_flat)
    out: list[list[int]] = []
    budget = max_length - n_special
    for segs in rendered:
        pieces: list[list[int]] = []
        is_sent: list[bool] = []
        for s in segs:
            if s.kind == "mask":
                if mask_id is None:
                    raise ValueError(f"task {task!r}: the template uses {{mask}} but this model has no mask token")
                pieces.append([mask_id])
            else:
                pieces.append(list(next(it)))
            is_sent.append(s.kind == "sent")
        excess = sum(map(len, pieces)) - budget
        if excess > 0:
            sent_idx = [i for i, s in enumerate(is_sent) if s]
            keep = trim_longest_first([len(pieces[i]) for i in sent_idx], excess)
            if keep is None:
                raise ValueError(f"task {task!r}: the template alone needs "
                                 f"{sum(len(p) for p, s in zip(pieces, is_sent) if not s)} tokens, more than "
                                 f"max_length={max_length} minus {n_special} special tokens")
            for i, k in zip(sent_idx, keep):
                del pieces[i][k:]
        out.append([t for p in pieces for t in p])
    return out


def trim_longest_first(lengths: Sequence[int], excess: int) -> list[int] | None:
    """New lengths after removing ``excess`` tokens, one at a time from the currently longest (None: impossible)."""
    if excess > sum(lengths):
        return None
    keep = list(lengths)
    while excess > 0:
        longest = max(range(len(keep)), key=lambda i: keep[i])
        others = max([k for i, k in enumerate(keep) if i != longest], default=0)
        cut = min(excess, max(1, keep[longest] - others))
        keep[longest] -= cut
        excess -= cut
    return keep


def fit_text(tokenizer, segments: Sequence[Segment], max_length: int, mask: str = "", task: str = "") -> str:
    """Render ``segments`` to one string whose tokenization (special tokens included) fits ``max_length``.

    For tokenizers whose pieces cannot be tokenized separately (SentencePiece/T5): the sentences are cut
    longest-first at token boundaries (via offsets), so the template words survive.
    """
    segs = list(segments)

    def join() -> str:
        return "".join(mask if s.kind == "mask" else s.text for s in segs)

    for _ in range(4):  # cutting at token boundaries can shift the tokenization slightly; re-check
        text = join()
        excess = len(tokenizer(text)["input_ids"]) - max_length
        if excess <= 0:
            return text
        sent_idx = [i for i, s in enumerate(segs) if s.kind == "sent"]
        enc = tokenizer([segs[i].text for i in sent_idx], add_special_tokens=False, return_offsets_mapping=True)
        lengths = [len(x) for x in enc["input_ids"]]
        keep = trim_longest_first(lengths, excess)
        if keep is None:
            raise ValueError(f"task {task!r}: the template alone does not fit max_length={max_length}")
        for j, i in enumerate(sent_idx):
            if keep[j] < lengths[j]:
                end = enc["offset_mapping"][j][keep[j] - 1][1] if keep[j] > 0 else 0
                segs[i] = Segment("sent", segs[i].text[:end])
    return join()  # still over by a token or two at worst: the caller's truncation handles it


def pad_batch(seqs: Sequence[Sequence[int]], pad_id: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded ``input_ids`` and ``attention_mask``."""
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    att = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(list(s), dtype=torch.long)
        att[i, : len(s)] = 1
    return ids.to(device), att.to(device)


def attention_mask_for(model: nn.Module, attention_mask: torch.Tensor) -> torch.Tensor:
    """The padding mask in the form the HF model gets: 4-D additive ``[B, 1, 1, L]`` on transformers >= 5.

    transformers 5 inspects 2-D masks with data-dependent Python control flow (``mask.all()``), which breaks
    ``torch.func.vmap`` (per-example gradients); a ready 4-D mask is used as is.  Older versions get the 2-D mask.
    """
    import transformers  # heavy (transformers): loaded only when this model family is used

    if int(transformers.__version__.split(".")[0]) < 5:
        return attention_mask
    dtype = next(model.parameters()).dtype
    return (1.0 - attention_mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min


def single_token_ids(tokenizer, words: Sequence[str], task: str, what: str = "label word",
                     first_only: bool = False) -> list[int]:
    """Ids of ``words`` encoded with a leading space (added when missing); each must be one token.

    With ``first_only`` (GPT-2 options) only the first token is taken, and the first tokens must be distinct.
    """
    ids: list[int] = []
    for w in words:
        text = w if w[:1].isspace() else " " + w
        toks = tokenizer(text, add_special_tokens=False)["input_ids"]
        if not toks:
            raise ValueError(f"task {task!r}: {what} {w!r} encodes to no tokens")
        if len(toks) != 1 and not first_only:
            pieces = tokenizer.convert_ids_to_tokens(toks)
            raise ValueError(f"task {task!r}: {what} {text!r} is {len(toks)} tokens {pieces} under this tokenizer; "
                             f"{what}s must be a single token (encoded with a leading space)")
        ids.append(int(toks[0]))
    if len(set(ids)) != len(ids):
        pieces = tokenizer.convert_ids_to_tokens(ids)
        raise ValueError(f"task {task!r}: {what}s {list(words)} map to non-distinct (first) tokens {pieces}; "
                         "each class needs its own token")
    return ids


# --------------------------------------------------------------------------------------------------------------
# heads
# --------------------------------------------------------------------------------------------------------------
class LabelWordHead(nn.Module):
    """Per-task prompt "head": only the label-word vocabulary ids (a buffer); the LM head itself is the model's."""

    def __init__(self, word_ids: Sequence[int]) -> None:
        super().__init__()
        self.register_buffer("word_ids", torch.tensor(list(word_ids), dtype=torch.long))

    def forward(self, vocab_logits: torch.Tensor) -> torch.Tensor:
        return vocab_logits.index_select(-1, self.word_ids)


# --------------------------------------------------------------------------------------------------------------
# the classifier
# --------------------------------------------------------------------------------------------------------------
class PromptMLMClassifier(Classifier):
    """RoBERTa-style masked LM → C-way logits at ``<mask>`` over label words (or a CLS linear head).

    ``backbone`` is a ``RobertaForMaskedLM`` (any ``*ForMaskedLM`` with ``.roberta`` + ``.lm_head`` layout).
    ``task_max_length`` overrides ``max_length`` per task; ``cls_head=True`` makes every task use the CLS linear head.
    """

    def __init__(self, backbone: nn.Module, tokenizer, max_length: int = 128,
                 task_max_length: Mapping[str, int] | None = None, cls_head: bool = False) -> None:
        super().__init__()
        self.backbone = backbone
        self.tokenizer = tokenizer
        self.max_length = int(max_length)
        self.task_max_length = dict(task_max_length or {})
        self.cls_head = bool(cls_head)
        if tokenizer.mask_token_id is None:
            raise ValueError("the prompt classifier needs a tokenizer with a mask token")

    # -- tasks -------------------------------------------------------------------------------------------
    def add_task(self, spec: TaskSpec, linear_head: bool = False) -> None:
        """P1: label-word prompt head (default) or, with ``linear_head``, the CLS linear head ("standard FT")."""
        if spec.name in self.specs:
            raise ValueError(f"task {spec.name!r} already registered")
        if linear_head or self.cls_head:
            head: nn.Module = nn.Linear(self.backbone.config.hidden_size, spec.num_labels)
        else:
            if len(spec.label_words) != spec.num_labels:
                raise ValueError(f"task {spec.name!r}: need one label word per label {spec.labels}, "
                                 f"got {spec.label_words}")
            if "{mask}" not in spec.template:
                raise ValueError(f"task {spec.name!r}: template {spec.template!r} has no {{mask}}")
            head = LabelWordHead(single_token_ids(self.tokenizer, spec.label_words, spec.name))
        self.specs[spec.name] = spec
        self.heads[spec.name] = head.to(self.device)

    def uses_prompt(self, task: str) -> bool:
        self._check_task(task)
        return isinstance(self.heads[task], LabelWordHead)

    def max_length_for(self, task: str) -> int:
        return int(self.task_max_length.get(task, self.max_length))

    # -- batches -----------------------------------------------------------------------------------------
    def tokenize(self, task: str, examples: Sequence[Example]) -> dict[str, torch.Tensor]:
        spec = self._check_task(task)
        tok = self.tokenizer
        max_len = self.max_length_for(task)
        if self.uses_prompt(task):
            rendered = [render_segments(spec.template, e, task) for e in examples]
            bodies = encode_segments(tok, rendered, max_len, n_special=2, mask_id=tok.mask_token_id, task=task)
            seqs = [[tok.cls_token_id, *b, tok.sep_token_id] for b in bodies]
            ids, att = pad_batch(seqs, tok.pad_token_id, self.device)
            mask_pos = (ids == tok.mask_token_id).long().argmax(1)
            batch = {"input_ids": ids, "attention_mask": att, "mask_pos": mask_pos}
        else:  # CLS variant: plain (pair) input, no template
            a = [e.text_a for e in examples]
            if spec.pair:
                b = [e.text_b or "" for e in examples]
                enc = tok(a, b, padding=True, truncation=True, max_length=max_len, return_tensors="pt")
            else:
                enc = tok(a, padding=True, truncation=True, max_length=max_len, return_tensors="pt")
            batch = {k: enc[k].to(self.device) for k in ("input_ids", "attention_mask")}
        batch["labels"] = torch.tensor([e.label for e in examples], device=self.device)
        return batch

    def forward(self, batch: dict[str, torch.Tensor], task: str) -> torch.Tensor:
        self._check_task(task)
        head = self.heads[task]
        hidden = self.backbone.roberta(
            input_ids=batch["input_ids"],
            attention_mask=attention_mask_for(self.backbone, batch["attention_mask"])).last_hidden_state
        if isinstance(head, LabelWordHead):
            at_mask = hidden[torch.arange(hidden.shape[0], device=hidden.device), batch["mask_pos"]]
            return head(self.backbone.lm_head(at_mask))
        return head(hidden[:, 0])

    # -- parameter sets ----------------------------------------------------------------------------------
    def graftable_names(self) -> list[str]:
        """P1 eligible set: every parameter of the transformer blocks (``roberta.encoder.layer.*``)."""
        return [n for n, _ in self.named_parameters() if n.startswith("backbone.roberta.encoder.layer.")]

    def maskable_names(self) -> list[str]:
        """Linear layers and LayerNorms of the blocks (= the graftable set; embeddings and LM head excluded)."""
        return self.graftable_names()


def build_roberta(name: str = "roberta-base", max_length: int = 128,
                  task_max_length: Mapping[str, int] | None = None, cls_head: bool = False) -> PromptMLMClassifier:
    """Pre-trained ``RobertaForMaskedLM`` + tokenizer from the hub (needs internet or a local HF cache)."""
    # heavy (transformers): loaded only when this model family is used
    from transformers import AutoTokenizer, RobertaForMaskedLM

    tok = AutoTokenizer.from_pretrained(name)
    model = RobertaForMaskedLM.from_pretrained(name, attn_implementation="eager")
    tml = PAPER_TASK_MAX_LENGTH if task_max_length is None else task_max_length
    return PromptMLMClassifier(model, tok, max_length=max_length, task_max_length=tml, cls_head=cls_head)


def build_tiny_roberta(seed: int = 0, hidden: int = 32, layers: int = 2, max_length: int = 64,
                       cls_head: bool = False, extra_words: Sequence[str] = ()) -> PromptMLMClassifier:
    """Random-init tiny ``RobertaForMaskedLM`` with the offline tiny BPE tokenizer (tests, smoke)."""
    # heavy (transformers): loaded only when this model family is used
    from transformers import RobertaConfig, RobertaForMaskedLM

    tok = tiny_bpe_tokenizer("roberta", tuple(extra_words))
    cfg = RobertaConfig(vocab_size=len(tok), hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=2,
                        intermediate_size=2 * hidden, max_position_embeddings=max_length + 2 + 1,
                        pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                        type_vocab_size=1, attn_implementation="eager")
    torch.manual_seed(seed)
    model = RobertaForMaskedLM(cfg)
    return PromptMLMClassifier(model, tok, max_length=max_length, cls_head=cls_head)
