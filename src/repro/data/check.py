"""``python -m repro.data.check [DIR] [--tasks TASK ...]``: validate a local data folder (and the task names a run
is given: registered, and with DIR each with its folder) before anything runs.  ``--packaged SOURCE ...`` prints
the digest of each packaged data source (:func:`repro.data.packaged.package_digest`) for the runner's cache key.

Exit status 0 and one line per task (``SST-2: 6920 train, 872 test``) when the folder is usable; else exit status
2 and one line on stderr naming the file, the line and the fix (:class:`repro.data.DataError`).  ``repro book`` /
``repro run --data DIR`` call it before any kernel starts (the runner does not import the data package).
"""

from __future__ import annotations

import sys
from typing import Sequence

from repro.data.loaders import check_data_dir, check_tasks
from repro.data.tasks import DataError
from repro.data.packaged import package_digest


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--packaged"]:  # the runner's cache key: one "<source> <version>:<digest>" line per source
        for source in args[1:]:
            print(source, package_digest(source))
        return 0
    tasks: list[str] = []
    if "--tasks" in args:
        i = args.index("--tasks")
        args, tasks = args[:i], args[i + 1:]
    if len(args) > 1 or not (args or tasks):
        print("usage: python -m repro.data.check [DIR] [--tasks TASK ...]", file=sys.stderr)
        return 2
    try:
        found = check_data_dir(args[0]) if args else {}
        check_tasks(tasks, args[0] if args else None)
    except DataError as e:
        print(e, file=sys.stderr)
        return 2
    for task, (n_train, n_test) in found.items():
        print(f"{task}: {n_train} train, {n_test} test")
    return 0


if __name__ == "__main__":
    sys.exit(main())
