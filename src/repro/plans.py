"""The base of every notebook's typed plan (what a profile runs for one chapter): notebook overrides and seeds.

Each chapter has one frozen dataclass plan in its chapter package (``repro.p1.<chapter>.plan``,
``repro.p2.<chapter>.plan``) with documented defaults per profile; they share :class:`ChapterPlan` for the two
things every plan does the same way.
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any, TypeVar

from repro.profiles import Profile

P = TypeVar("P", bound="ChapterPlan")


class ChapterPlan:
    """Mixin of the frozen dataclass plans: the notebook's overrides and the seeds of a plan with ``n_seeds``."""

    def with_overrides(self: P, **given: Any) -> P:
        """This plan with every ``given`` value that is not None (the notebook's parameters); lists become tuples."""
        names = {f.name for f in fields(self)}  # type: ignore[arg-type]
        unknown = set(given) - names
        if unknown:
            raise ValueError(f"unknown plan fields {sorted(unknown)}; {type(self).__name__} has {sorted(names)}")
        clean = {k: (tuple(v) if isinstance(v, list) else v) for k, v in given.items() if v is not None}
        if "n_seeds" in clean and int(clean["n_seeds"]) < 1:
            raise ValueError(f"n_seeds must be >= 1, got {clean['n_seeds']}")
        return replace(self, **self._checked(clean))  # type: ignore[type-var]

    def _checked(self, clean: dict[str, Any]) -> dict[str, Any]:
        """A plan's own conversions and checks of the given values (none by default)."""
        return clean

    def seeds(self, profile: Profile, first: int) -> list[int]:
        """``n_seeds`` seeds: the profile's list from ``first`` on (just ``first`` if it is not listed), then
        ``first + 1000``, ``first + 2000``, … when the list runs out.  Every chapter that asks for the same seeds
        gets the same ones, hence the same cached models."""
        n = int(getattr(self, "n_seeds", 1))
        pool = list(profile.seeds[profile.seeds.index(first):]) if first in profile.seeds else [first]
        extra = 1
        while len(pool) < n:
            pool.append(first + 1000 * extra)
            extra += 1
        return pool[:n]


__all__ = ["ChapterPlan"]
