"""The generator registry: ``@generates("SST-2", ...)`` registers ``fn(rng, label) -> (text_a, text_b)``."""

from __future__ import annotations

import random
from typing import Callable

from repro.data.tasks import TASKS

Gen = Callable[[random.Random, int], tuple[str, "str | None"]]
#: task name → its generator (filled by the family modules when :mod:`repro.data.generated` is imported)
GENERATORS: dict[str, Gen] = {}


def generates(*tasks: str) -> Callable[[Gen], Gen]:
    """Register ``fn`` as the generator of ``tasks`` (names of :data:`repro.data.tasks.TASKS`); an unknown task
    name or a second generator for a task is an error at import time."""
    def register(fn: Gen) -> Gen:
        for task in tasks:
            if task not in TASKS:
                raise KeyError(f"{task!r} is not a task; known tasks: {', '.join(TASKS)}")
            if task in GENERATORS:
                raise KeyError(f"two generators for {task!r}: {GENERATORS[task].__name__} and {fn.__name__}")
            GENERATORS[task] = fn
        return fn
    return register
