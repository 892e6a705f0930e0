"""Run a command on one free local GPU: ``python workflow/gpu_slot.py CMD ...`` (the local profile's slot helper).

Snakemake counts ``gpu`` as a resource but assigns no device ids.  This takes the first of the machine's GPUs whose
slot lock (``$REPRO_GPU_SLOTS``, default ``.snakemake/gpu-slots/``) is free, holds it while ``CMD`` runs with
``CUDA_VISIBLE_DEVICES`` set to it, and exits with ``CMD``'s status.  Under SLURM (``CUDA_VISIBLE_DEVICES``
already set) or on a machine without GPUs it runs ``CMD`` as it is.
"""

import fcntl
import os
import re
import subprocess
import sys
import time
from pathlib import Path


def gpu_count() -> int:
    return sum(1 for p in Path("/dev").glob("nvidia*") if re.fullmatch(r"nvidia\d+", p.name))


def main(cmd: list) -> int:
    n = gpu_count()
    if "CUDA_VISIBLE_DEVICES" in os.environ or n == 0:
        return subprocess.call(cmd)
    slots = Path(os.environ.get("REPRO_GPU_SLOTS", ".snakemake/gpu-slots"))
    slots.mkdir(parents=True, exist_ok=True)
    while True:  # Snakemake's gpu resource admits at most n jobs, so a slot frees up soon
        for i in range(n):
            f = open(slots / f"gpu{i}.lock", "a")
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                f.close()
                continue
            try:
                return subprocess.call(cmd, env={**os.environ, "CUDA_VISIBLE_DEVICES": str(i)})
            finally:
                f.close()
        time.sleep(1.0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
