"""Small text helpers shared by the generator families."""

from __future__ import annotations

import random


def cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def pick(r: random.Random, items):
    return items[r.randrange(len(items))]


def weighted(r: random.Random, weights: dict[str, float]) -> str:
    x = r.random() * sum(weights.values())
    for key, w in weights.items():
        x -= w
        if x < 0:
            return key
    return key


def article(word: str) -> str:
    """Indefinite article for ``word``."""
    return ("an " if word[:1].lower() in "aeiou" else "a ") + word


def sentence(s: str) -> str:
    s = cap(s.strip())
    return s if s[-1] in ".!?" else s + "."
