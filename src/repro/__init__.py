"""repro: reference reproduction of grafting (Panigrahi et al., ICML 2023) and TaLoS (Iurada et al., ICLR 2025).

The map, one line per layer (lower layers never import higher ones; ``tests/test_layering.py`` enforces it):

- ``repro.core``      the papers' methods: masks, grafting, Fisher/TaLoS/FISH, fine-tuning, task vectors, merging,
                      AdaMerging, adapters, evaluation, metrics; tensors and examples in, tensors out, no cache
- ``repro.p1``        P1 (grafting): section modules (one computation per paper section) and one chapter package
                      per notebook, ``p1/<chapter>/{plan,jobs,runs,views,claims}.py`` (map in its docstring)
- ``repro.p2``        P2 (TaLoS): section modules and chapter packages the same way (map in its docstring)
- ``repro.bench``     ``repro bench``: our cost beside the official approach; also the performance page's chapter
                      package (``bench.views``, ``bench.claims``)
- ``repro.report``    what a notebook writes and compares with: results JSON, the printed tables, comparisons
- ``repro.runner``    how the book is made: notebook discovery, papermill execution, Jupyter Book build, CLI
- ``repro.data``      task specs, examples (text and image), loaders, the LM-BFF k-shot sampler; ``data.generated``
                      builds the deterministic generated tasks of the cpu/smoke profiles
- ``repro.models``    classifiers (sentence-embedding + zero-shot head, prompt MLM, causal LM, T5, CLIP)
- ``repro.workbench`` the one service both papers' drivers share: model, θ_pre, data, cached fine-tunes/grafts
- ``repro.profiles``  the three run profiles (smoke / cpu / paper) and their recipes (fine-tuning, graft, TaLoS)
- ``repro.artifacts`` safetensors + JSON artifact store keyed by config hash, atomic writes
- ``repro.paths``     every location repro reads or writes
- ``repro.progress``  the one progress-bar wrapper (honours TQDM_DISABLE)
- ``repro.fetch``     ``repro fetch``: download once what a profile reads (data and models), then run offline
- ``repro.plans``     the base of every chapter's typed plan (notebook overrides, seeds)
- ``repro.device``    the device and precision a run uses
- ``repro.departures`` the paper profile's registered departures from the papers
- ``repro.jobs``      the job type of the chapters' inventories (one spec per cached artifact; each chapter's
                      ``jobs.py`` declares its jobs from its plan)
- ``repro.inventory`` every chapter's jobs, deduplicated, and the paper-plan check (``repro plan``); above p1/p2

Import rules: ``core`` never imports workbench/p1/p2/report/runner; ``p1`` and ``p2`` never import each other;
``runner`` never imports core/p1/p2/workbench/models/data; no import cycles between modules, nor between packages
(a chapter package counts as a package of its own); no ``from repro.x import _private``.
"""

__version__ = "0.1.0"
