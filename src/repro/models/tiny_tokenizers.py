"""Offline, deterministic tiny tokenizers for the random-init test models (no hub access).

- :func:`tiny_bpe_tokenizer` ("roberta" / "gpt2" flavour): a byte-level BPE trained in-process with the
  ``tokenizers`` library on a small corpus, wrapped as the ``transformers`` RoBERTa / GPT-2 tokenizer class.
  Every word of the corpus (:data:`TINY_WORDS` plus ``extra_words``) is trained down to a single token both with
  and without a leading space, so the LM-BFF label words (``" great"``) and GPT-2 option first tokens
  (``" positive"``) are single tokens, exactly the property the prompt classifiers assert on the real tokenizers.
  Any other text still encodes (byte-level alphabet, no unknown token).
- :func:`tiny_t5_tokenizer`: a hand-built Unigram model (SentencePiece-style ``▁`` word boundaries) with
  T5's special-token layout (``<pad>`` = 0, ``</s>`` = 1, ``<unk>`` = 2), wrapped as the ``transformers`` T5
  tokenizer class.  Corpus words are single pieces; other words fall back to characters.

Both are cached per word list and take well under a second to build.
"""

from __future__ import annotations

import string
from functools import lru_cache
from typing import Iterable

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

#: words every tiny tokenizer knows as single tokens: the LM-BFF label words, the GPT-2 options, the words of
#: the prompt templates, and the vocabulary of the repo's test/generated sentences.
TINY_WORDS: tuple[str, ...] = tuple(sorted(set("""
terrible great subjective objective Description Entity Expression Human Location Number World Sports Business
Tech Yes No Maybe negative positive object subject description entity location number abbreviation person
Science true false neither yes no maybe entailment not_entailment contradiction neutral
It it was This this is has a an tone that question answer summary topic or The the will be to of and in on
about sports business science film movie plot acting minute every loved hated good bad fine weak dull boring
moving wonderful awful superb truly team won match stocks fell monday new planet found striker scored twice
bank raised rates cells divide lab photo picture image cat dog car plane bird ship truck horse frog deer
airplane automobile what who where when how why which does did do sentence premise hypothesis same meaning
paraphrase not I you he she we they my your his her our their very so too really quite movie story
""".split())))


def _corpus_words(extra_words: Iterable[str]) -> tuple[str, ...]:
    words = set(TINY_WORDS)
    for w in extra_words:
        w = w.strip()
        if w:
            words.update(w.split())
    return tuple(sorted(words))


@lru_cache(maxsize=8)
def _bpe_backend(words: tuple[str, ...]):
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]  # RoBERTa order: <s>=0, <pad>=1, </s>=2, <unk>=3
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=100_000,  # never reached: training stops once every corpus word is one token
        min_frequency=1,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    # each word at line start (no leading space) and after a space (leading "Ġ")
    lines = [f"{w} {w}" for w in words]
    tok.train_from_iterator(lines, trainer=trainer)
    return tok


def tiny_bpe_tokenizer(flavour: str = "roberta", extra_words: Iterable[str] = ()):
    """A tiny byte-level BPE tokenizer: ``flavour`` "roberta" (RobertaTokenizerFast) or "gpt2" (GPT2TokenizerFast)."""
    words = _corpus_words(extra_words)
    backend = _bpe_backend(words)
    if flavour == "roberta":
        # heavy (transformers): loaded only when this model family is used
        from transformers import RobertaTokenizerFast

        backend = backend.__class__.from_str(backend.to_str())  # private copy
        backend.post_processor = processors.RobertaProcessing(
            ("</s>", backend.token_to_id("</s>")), ("<s>", backend.token_to_id("<s>")), trim_offsets=True,
            add_prefix_space=False)
        return RobertaTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>", sep_token="</s>",
                                    cls_token="<s>", unk_token="<unk>", pad_token="<pad>", mask_token="<mask>")
    if flavour == "gpt2":
        from transformers import GPT2TokenizerFast  # heavy (transformers): loaded only when this model family is used

        backend = backend.__class__.from_str(backend.to_str())
        # GPT-2 has a single special token (<|endoftext|>, here </s>) and no padding token of its own
        return GPT2TokenizerFast(tokenizer_object=backend, bos_token="</s>", eos_token="</s>", unk_token="</s>")
    raise ValueError(f"unknown tiny tokenizer flavour {flavour!r}; choose roberta or gpt2")


@lru_cache(maxsize=8)
def _unigram_vocab(words: tuple[str, ...]) -> tuple[tuple[str, float], ...]:
    vocab: list[tuple[str, float]] = [("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), ("▁", -6.0)]
    seen = {v for v, _ in vocab}
    for w in words:  # whole words: cheap, so Viterbi always prefers them over a character spelling
        piece = "▁" + w
        if piece not in seen:
            vocab.append((piece, -2.0))
            seen.add(piece)
    for ch in string.ascii_letters + string.digits + string.punctuation:  # fallback pieces for other words
        for piece in (ch, "▁" + ch):
            if piece not in seen:
                vocab.append((piece, -8.0))
                seen.add(piece)
    return tuple(vocab)


def tiny_t5_tokenizer(extra_words: Iterable[str] = ()):
    """A tiny Unigram tokenizer with T5's special-token layout, wrapped as T5TokenizerFast (one sentinel)."""
    from transformers import T5TokenizerFast  # heavy (transformers): loaded only when this model family is used

    vocab = list(_unigram_vocab(_corpus_words(extra_words)))
    backend = Tokenizer(models.Unigram(vocab, unk_id=2, byte_fallback=False))
    backend.normalizer = normalizers.Strip()
    backend.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.WhitespaceSplit(),
        pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True),
    ])
    backend.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    backend.post_processor = processors.TemplateProcessing(
        single=["$A", "</s>"], pair=["$A", "</s>", "$B", "</s>"], special_tokens=[("</s>", 1)])
    return T5TokenizerFast(tokenizer_object=backend, eos_token="</s>", unk_token="<unk>", pad_token="<pad>",
                           extra_ids=1)
