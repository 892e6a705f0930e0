"""Every claim of every chapter says which tasks decided it: each ``add_claim`` call in a ``claims.py`` passes
``tasks=`` (``()`` for a claim about code or cost), directly or in the ``**`` arguments it builds."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "repro"
FILES = sorted(SRC.rglob("claims.py"))


def _calls(path: Path) -> list[ast.Call]:
    return [n for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "add_claim"]


def test_every_claims_module_is_checked():
    names = {f.relative_to(SRC).parent.as_posix() for f in FILES}
    assert {"p1/localization", "p1/calibration_ood", "p1/appendix", "p1/multitask_continual", "p2/task_arithmetic",
            "p2/sensitivity", "p2/disentanglement", "p2/structure_cost", "p2/appendix", "bench"} <= names


def test_every_add_claim_passes_its_tasks():
    missing = []
    for f in FILES:
        src = f.read_text(encoding="utf-8")
        for call in _calls(f):
            kw = {k.arg for k in call.keywords}
            spread = [k.value for k in call.keywords if k.arg is None]
            # a ** argument that is a dict(...) / name built with tasks= in the same module counts
            if "tasks" in kw or any(isinstance(v, ast.Name) and f"{v.id} = dict(tasks=" in src for v in spread):
                continue
            missing.append(f"{f.relative_to(SRC)}:{call.lineno}")
    assert not missing, f"add_claim without tasks= (pass tasks=() for a claim no task decides): {missing}"
