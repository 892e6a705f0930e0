"""The base of every notebook's typed plan (what a profile runs for one chapter): notebook overrides and seeds.

Each chapter has one frozen dataclass plan in its chapter package (``repro.p1.<chapter>.plan``,
``repro.p2.<chapter>.plan``) and declares ``PLANS: dict[str, <Plan>]`` keyed by the profile's plan name
(``"smoke"``, ``"cpu"``, ``"paper"``; :attr:`repro.profiles.Profile.plan`, any other name takes ``"paper"``).
A value that depends on the profile is a :class:`FromProfile` there, resolved by :func:`plan_for` in the chapter's
plan function (the one the notebook and its ``jobs.py`` call), so the plan a notebook records holds plain values.
A field's allowed range sits on the field (``ranged``: ``metadata={"range": (low, high)}``) and is checked in
``__post_init__`` by :func:`check_ranges`.  The plans share :class:`ChapterPlan` for what every plan does the same
way.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Callable, Mapping, TypeVar

from repro.profiles import Profile

P = TypeVar("P", bound="ChapterPlan")


@dataclass(frozen=True)
class FromProfile:
    """A plan value that depends on the profile, in a chapter's ``PLANS``: the profile's attribute ``what`` (or
    ``get(profile)`` when given; ``what`` then says what it is), filled in by :func:`plan_for`."""

    what: str
    get: Callable[[Profile], Any] | None = None

    def of(self, profile: Profile) -> Any:
        """The value for ``profile``."""
        return self.get(profile) if self.get is not None else getattr(profile, self.what)

    def __repr__(self) -> str:
        return f"<profile's {self.what}>"


#: The plan fields' ranges per notebook, for the runner's fail-fast parameter check before any kernel starts (the
#: runner may not import the chapters): written by :func:`repro.inventory.write_plan_ranges`, kept in step by
#: ``tests/test_plans.py``.
RANGES_FILE = Path(__file__).with_name("plan_ranges.json")


def ranged(default: Any, low: float | None = None, high: float | None = None, *, low_open: bool = False,
           high_open: bool = False) -> Any:
    """A plan field with ``default`` whose numbers (each element of a tuple) must lie in [``low``, ``high``]
    (None: unbounded; ``low_open`` / ``high_open``: the bound itself excluded), checked by :func:`check_ranges`."""
    return field(default=default, metadata={"range": (low, high), "open": (low_open, high_open)})


def field_range(plan_type: type, name: str) -> tuple[float | None, float | None] | None:
    """The (low, high) range declared on field ``name`` of a plan dataclass (None: no range)."""
    f = plan_type.__dataclass_fields__.get(name)  # type: ignore[attr-defined]
    return None if f is None else f.metadata.get("range")


def range_spec(plan_type: type) -> dict[str, dict[str, Any]]:
    """``{field: {"low", "high", "low_open", "high_open"}}`` of every ranged field of a plan dataclass (JSON-able)."""
    out = {}
    for f in fields(plan_type):
        if "range" in f.metadata:
            (low, high), (lo_open, hi_open) = f.metadata["range"], f.metadata.get("open", (False, False))
            out[f.name] = {"low": low, "high": high, "low_open": lo_open, "high_open": hi_open}
    return out


def read_ranges() -> dict[str, dict[str, dict[str, Any]]]:
    """``{notebook: {field: range}}`` from :data:`RANGES_FILE` (empty when the file is absent)."""
    return json.loads(RANGES_FILE.read_text()) if RANGES_FILE.exists() else {}


def check_ranges(plan: Any) -> None:
    """Every number of every ranged field of ``plan`` inside its range (None and :class:`FromProfile` values are
    skipped); raises one line naming the field, its range and the value."""
    for f in fields(plan):
        bounds = f.metadata.get("range")
        value = getattr(plan, f.name)
        if bounds is None or value is None or isinstance(value, FromProfile):
            continue
        (low, high), (lo_open, hi_open) = bounds, f.metadata.get("open", (False, False))
        for x in (value if isinstance(value, (tuple, list)) else (value,)):
            if isinstance(x, bool) or not isinstance(x, (int, float)):
                continue
            if (not math.isfinite(x) or (low is not None and (x <= low if lo_open else x < low))
                    or (high is not None and (x >= high if hi_open else x > high))):
                span = (f"{'(-inf' if low is None else ('(' if lo_open else '[') + str(low)}, "
                        f"{'inf)' if high is None else str(high) + (')' if hi_open else ']')}")
                raise ValueError(f"{type(plan).__name__}.{f.name} must be in {span}, got {value!r}")


def plan_for(plans: Mapping[str, P], profile: Profile) -> P:
    """The chapter's plan for ``profile``: ``plans[profile.plan]`` (any other plan name: ``plans["paper"]``) with
    every :class:`FromProfile` value resolved for the profile, and the profile's ``plan_cuts`` of this plan type."""
    plan = plans.get(profile.plan, plans["paper"])
    given = {f.name: v.of(profile) for f in fields(plan)  # type: ignore[arg-type]
             if isinstance(v := getattr(plan, f.name), FromProfile)}
    given.update({name: value for cls, name, value in profile.plan_cuts
                  if cls == f"{type(plan).__module__}.{type(plan).__name__}"})
    return replace(plan, **given) if given else plan  # type: ignore[type-var]


class ChapterPlan:
    """Mixin of the frozen dataclass plans: range checks, the notebook's overrides and the seeds of a plan with
    ``n_seeds``."""

    def __post_init__(self) -> None:
        check_ranges(self)

    def with_overrides(self: P, **given: Any) -> P:
        """This plan with every ``given`` value that is not None (the notebook's parameters); lists become tuples."""
        names = {f.name for f in fields(self)}  # type: ignore[arg-type]
        unknown = set(given) - names
        if unknown:
            raise ValueError(f"unknown plan fields {sorted(unknown)}; {type(self).__name__} has {sorted(names)}")
        clean = {k: (tuple(v) if isinstance(v, list) else v) for k, v in given.items() if v is not None}
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


__all__ = ["ChapterPlan", "FromProfile", "RANGES_FILE", "check_ranges", "field_range", "plan_for", "range_spec",
           "ranged", "read_ranges"]
