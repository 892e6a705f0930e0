"""repro: reference reproduction of grafting (Panigrahi et al., ICML 2023) and TaLoS (Iurada et al., ICLR 2025).

Modules, one concept each:

- ``repro.profiles``   the three run profiles (smoke / cpu / paper) and their hyperparameters
- ``repro.data``       task specs, examples, local-file loader, LM-BFF k-shot sampler, hub loaders
- ``repro.data.generated``  the deterministic generated text tasks of the cpu/smoke profiles
- ``repro.models``     classifiers (sentence-embedding + zero-shot head, prompt MLM, causal LM, T5, CLIP)
- ``repro.core.evaluation`` the one evaluation loop (logits / probabilities under optional parameter overrides)
- ``repro.core.metrics``    accuracy, F1, ECE, agreement, confidence histograms
- ``repro.core.masks``      the one sparse mask type over named parameters
- ``repro.core.grafting``   P1 model grafting (Eq. 1-4)
- ``repro.core.fisher``     diagonal Fisher, TaLoS calibration, FISH masks (P2 Eq. 7)
- ``repro.core.finetune``   the one training loop (SGD / AdamW, masked, BitFit, l1, linearized, LoRA)
- ``repro.core.taskvec``    task vectors, addition / negation, WiSE, TIES, DARE, TALL, Breadcrumbs
- ``repro.artifacts``  safetensors + JSON artifact store keyed by config hash, atomic writes
- ``repro.report.results``    the results JSON every notebook writes (tables / figures / claims)
- ``repro.runner``     notebooks + parameters, papermill execution + cache key, book build, CLI
"""

__version__ = "0.1.0"
