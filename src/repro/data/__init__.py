"""What the models read: task specs and examples (:mod:`.tasks`, a leaf), the loaders and :func:`load_task`
(:mod:`.loaders`), and the generated tasks of the cpu/smoke profiles (:mod:`.generated`).  The public names are
re-exported here."""

from repro.data.tasks import (LABEL_ORDERS, OOD_ONLY, TASKS, DataError, Example, MissingSplit, TaskData,  # isort: skip
                              TaskSpec, balanced_sample, check_kshot, fixed_subset, chunks, get_spec,
                              kshot_sizes, kshot_split)
from repro.data.loaders import (HUB_SOURCES, SOURCES, HubSource, check_data_dir, check_splits,  # isort: skip
                                load_hub, load_local, load_task, register_source)

__all__ = ["HUB_SOURCES", "LABEL_ORDERS", "OOD_ONLY", "SOURCES", "TASKS", "DataError", "Example", "HubSource",
           "MissingSplit", "TaskData", "TaskSpec", "balanced_sample", "check_data_dir", "check_kshot", "check_splits",
           "chunks", "fixed_subset", "get_spec", "kshot_sizes", "kshot_split", "load_hub", "load_local", "load_task",
           "register_source"]
