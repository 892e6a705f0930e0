"""The jobs of the chapter ``p2_task_arithmetic`` (P2 §5.1: Tables 1, 2, 5), declared from its plan.

:func:`jobs` reads :func:`repro.p2.task_arithmetic.plan.arithmetic_plan` and :func:`repro.p2.arithmetic.protocol_settings`
as ``notebooks/p2_task_arithmetic.md`` does: per seed, every zoo method × task (:func:`repro.p2.zoo.method_jobs`: the fine-tunes
and the TaLoS masks they train in), one cached ``p2-arith`` result per Table-1 method
(:func:`repro.p2.arithmetic.run_method`), and on the first seed the Table 5 merges
(:func:`repro.p2.arithmetic.merging_scheme`).  The model family is the notebook's (``Profile.for_p2``).
"""

from __future__ import annotations

from typing import Any

from repro.data.families import dev_size
from repro.jobs import EVAL_PASS, DataUse, JobSpec, make_job
from repro.p2.arithmetic import ARITHMETIC_METHODS, MERGE_SCHEMES, TABLE1_METHODS, protocol_settings
from repro.p2.methods import P2_METHODS
from repro.p2.task_arithmetic.plan import arithmetic_plan
from repro.p2.zoo import data_how, zoo_jobs
from repro.profiles import Profile

NOTEBOOK = "p2_task_arithmetic"
#: the roles of the Table 1-2 protocol results and of the Table 5 merges (how runs.py finds them)
TABLE12_ROLE, TABLE5_ROLE = "table1-2", "table5"


def _eval_cost(prof: Profile, tasks: list[str], n_alphas: int, n_val: int, n_test: int) -> float:
    """Evaluated example-passes of one method's addition + negation sweeps.  ``n_val`` 0 (the whole dev split)
    counts each task's dev size where it is known without reading data (:func:`repro.data.families.dev_size`),
    else 1,000, as does ``n_test`` 0."""
    val = [n_val or dev_size(t, prof) or 1000 for t in tasks]
    return EVAL_PASS * sum(2 * n_alphas * v + 3 * (n_test or 1000) for v in val)


def jobs(profile: Profile, seed: int = 13, model_family: str = "", *, n_val: int | None = None,
         n_test: int | None = None, alpha_stride: int | None = None, adamerging_steps: int | None = None,
         **overrides: Any) -> list[JobSpec]:
    """Every cached artifact of ``p2_task_arithmetic`` on ``profile`` for ``model_family`` ("" = the profile's);
    ``n_val`` ... ``adamerging_steps``: the notebook's protocol parameters (:func:`protocol_settings`), ``overrides``
    its plan's (tasks, n_seeds)."""
    prof = profile.for_p2(model_family, NOTEBOOK)
    plan = arithmetic_plan(prof, **overrides)
    tasks, control = plan.task_list(prof), prof.p2_control
    settings = protocol_settings(prof, n_val=n_val, n_test=n_test, alpha_stride=alpha_stride,
                                 adamerging_steps=adamerging_steps)
    how = data_how(prof)
    out: list[JobSpec] = []
    for i, s in enumerate(plan.seeds(prof, seed)):
        zoo = zoo_jobs(prof, NOTEBOOK, tasks, s)
        for js in zoo.values():
            out += js
        vectors = {m: [zoo[(m, t)][-1] for t in tasks] for m in P2_METHODS}
        uses = [DataUse(t, how, prof.k_shot, s, need=(("dev", settings["n_val"]),)) for t in tasks]
        if control:
            uses.append(DataUse(control, how, prof.k_shot, s, need=(("dev", settings["n_val"]),)))
        common = dict(seed=s, tasks=tasks, control=control, n_val=settings["n_val"], n_test=settings["n_test"],
                      alphas=settings["alphas"], model=prof.model)
        arith: dict[str, JobSpec] = {}
        for key in TABLE1_METHODS:
            src = ARITHMETIC_METHODS[key].source
            out.append(arith.setdefault(key, make_job(
                "arithmetic", "repro.p2.arithmetic.run_method", prof, NOTEBOOK, deps=vectors[src],
                cost=_eval_cost(prof, tasks, len(settings["alphas"]), settings["n_val"], settings["n_test"]),
                uses=uses, role=TABLE12_ROLE, key=key, negation=bool(control), **common)))
        if i == 0:  # Table 5 on the first seed
            for src in ("ft", "talos"):
                for scheme in MERGE_SCHEMES:
                    steps = settings["adamerging_steps"] if scheme.startswith("adamerging") else 0
                    # merging_scheme reads the Table-1 results of its source (and of TIES for ft's "ties")
                    reads = [arith[m] for m in (src, "ties" if src == "ft" and scheme == "ties" else "") if m in arith]
                    out.append(make_job(
                        "merge", "repro.p2.arithmetic.merging_scheme", prof, NOTEBOOK, deps=[*vectors[src], *reads],
                        role=TABLE5_ROLE,
                        cost=_eval_cost(prof, tasks, len(settings["alphas"]), settings["n_val"], settings["n_test"])
                        + steps * len(tasks) * settings["n_val"],
                        uses=uses, source=src, scheme=scheme, adamerging_steps=settings["adamerging_steps"],
                        **common))  # the notebook passes the protocol's AdaMerging steps to every scheme
    return out


__all__ = ["NOTEBOOK", "TABLE12_ROLE", "TABLE5_ROLE", "jobs"]
