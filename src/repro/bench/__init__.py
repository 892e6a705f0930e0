"""``repro bench``: our cost beside the official implementations' approach, as ratios measured in one run.

Run ``repro bench [--quick] [--device cpu|cuda]`` (or ``python -m repro.bench``).  Each pair is measured side by
side in one process on the same model and batch (:mod:`repro.bench.pairs`); the scaling table and the matmul
peak are in :mod:`repro.bench.scaling`; rows, their verdicts and ``results/bench.json`` in :mod:`repro.bench.rows`;
the command itself in :mod:`repro.bench.main`.  The book's Performance page renders the JSON.
"""
