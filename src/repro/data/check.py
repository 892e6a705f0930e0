"""``python -m repro.data.check DIR``: validate a local data folder before anything runs.

Exit status 0 and one line per task (``SST-2: 6920 train, 872 test``) when the folder is usable; else exit status
2 and one line on stderr naming the file, the line and the fix (:class:`repro.data.DataError`).  ``repro book`` /
``repro run --data DIR`` call it before any kernel starts (the runner does not import the data package).
"""

from __future__ import annotations

import sys
from typing import Sequence

from repro.data.loaders import check_data_dir
from repro.data.tasks import DataError


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m repro.data.check DIR", file=sys.stderr)
        return 2
    try:
        found = check_data_dir(args[0])
    except DataError as e:
        print(e, file=sys.stderr)
        return 2
    for task, (n_train, n_test) in found.items():
        print(f"{task}: {n_train} train, {n_test} test")
    return 0


if __name__ == "__main__":
    sys.exit(main())
