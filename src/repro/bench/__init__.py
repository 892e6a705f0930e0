"""``repro bench``: our cost beside the official implementations' approach, as ratios measured in one run.

Run ``repro bench [--quick] [--device cpu|cuda]`` (or ``python -m repro.bench``).  Each pair is measured side by
side in one process on the same model and batch (:mod:`repro.bench.pairs`, timing and memory helpers in
:mod:`repro.bench.measure`, on :mod:`repro.device`); the scaling table and the matmul peak are in
:mod:`repro.bench.scaling`; rows, their verdicts and ``results/bench.json`` in :mod:`repro.bench.rows`; the
command itself in :mod:`repro.bench.main`.
The book's Performance page (``notebooks/performance.md``) renders the JSON: its tables are
:mod:`repro.bench.views`, its claims :mod:`repro.bench.claims` (the page's chapter package is this one).
"""
