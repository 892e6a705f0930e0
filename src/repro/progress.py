"""Progress bars for the long loops (fine-tuning, grafting, Fisher, α sweeps, AdaMerging).

One wrapper around ``tqdm.auto`` so that ``TQDM_DISABLE=1`` switches every bar off even where a caller passes
``progress=True``: batch runs (``repro book`` / ``repro run``) set it, so executed notebooks carry no redrawn bars,
while interactive sessions keep them.
"""

from __future__ import annotations

import os
from typing import Any, Iterable

if os.environ.get("TQDM_DISABLE", "").strip().lower() not in ("", "0", "false"):
    from tqdm.std import tqdm  # batch kernels: the plain bar (tqdm.auto warns there without ipywidgets)
else:
    from tqdm.auto import tqdm


def bars_disabled() -> bool:
    """True when the environment turns progress bars off (``TQDM_DISABLE`` set to anything but ''/'0')."""
    return os.environ.get("TQDM_DISABLE", "").strip().lower() not in ("", "0", "false")


def progress_bar(iterable: Iterable[Any] | None = None, *, enabled: bool = True, **kwargs: Any) -> tqdm:
    """``tqdm(iterable, **kwargs)``, shown only when ``enabled`` and not switched off by the environment."""
    return tqdm(iterable, disable=not enabled or bars_disabled(), **kwargs)
