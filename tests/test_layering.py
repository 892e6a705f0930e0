"""The import rules of CONTRIBUTING, enforced over every module of ``src/repro`` (function-local imports and
``TYPE_CHECKING`` imports included: a rule about what a layer may *know* holds for both).

1. ``core`` never imports ``workbench``, ``p1``, ``p2``, ``report`` or ``runner`` (tensors in, tensors out).
2. ``p1`` and ``p2`` never import each other (each paper's drivers stand alone; the notebook cache key relies on it).
3. ``runner`` never imports ``core``, ``p1``, ``p2``, ``workbench``, ``models`` or ``data`` (it runs kernels).
4. No import cycle between modules.
5. No ``from repro.x import _private`` across modules (make the name public or keep its use in its module).
6. No import cycle between packages: ``repro.core``, ``data``, ``models``, ``p1``, ``p2``, ``bench``, ``report``,
   ``runner``, each chapter package (``repro.p1.localization``, ``repro.p2.task_arithmetic``, …; a paper's section
   modules are the package ``repro.p1`` / ``repro.p2``, so they never import a chapter that imports them) and each
   top-level module (``repro.workbench``, ``repro.profiles``, …).  The module-level rules cannot see these loops.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "repro"

FORBIDDEN: dict[str, set[str]] = {
    "core": {"workbench", "p1", "p2", "report", "runner"},
    "p1": {"p2"},
    "p2": {"p1"},
    "runner": {"core", "p1", "p2", "workbench", "models", "data"},
}

# Known violations that other branches are fixing; the lead empties this list after merging them.
# Each entry is exactly what the test below reports for it.
KNOWN_VIOLATIONS: set[str] = set()


def module_name(path: Path) -> str:
    parts = ("repro", *path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES: dict[str, Path] = {module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def imports(module: str) -> list[tuple[str, str | None]]:
    """``(imported module, imported name or None)`` for every ``repro`` import in ``module``, at any depth."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(a.name, None) for a in node.names if a.name.split(".")[0] == "repro"]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative import: resolve against the package
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            if base.split(".")[0] != "repro":
                continue
            for a in node.names:
                sub = f"{base}.{a.name}"
                out.append((sub, None) if sub in MODULES else (base, a.name))
    return out


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def graph() -> dict[str, set[str]]:
    return {m: {t for t, _ in imports(m) if t in MODULES and t != m} for m in MODULES}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One representative cycle per strongly connected component with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def cycle_path(edges: dict[str, set[str]], component: list[str]) -> list[str]:
    """A closed path through the first module of ``component`` (breadth-first, inside the component)."""
    start, inside = component[0], set(component)
    paths = {start: [start]}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(edges[v] & inside):
            if w == start:
                return paths[v] + [start]
            if w not in paths:
                paths[w] = paths[v] + [w]
                queue.append(w)
    return component


#: the packages below ``repro`` whose subpackages are units of their own (the chapters)
CHAPTER_PARENTS = ("p1", "p2")


def package(module: str) -> str:
    """The package unit of ``module``: a chapter package (``repro.p1.localization``), else the top-level package
    (``repro.data`` for ``repro.data.generated.topic``) or top-level module (``repro.workbench``)."""
    parts = module.split(".")
    if len(parts) > 3 and parts[1] in CHAPTER_PARENTS:
        return ".".join(parts[:3])
    if len(parts) == 3 and parts[1] in CHAPTER_PARENTS and MODULES.get(module, Path()).name == "__init__.py":
        return module  # a chapter package's __init__
    return ".".join(parts[:2])


def package_graph() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for m, targets in graph().items():
        out.setdefault(package(m), set()).update(package(t) for t in targets)
    for p, targets in out.items():
        targets.discard(p)
        targets.discard("repro")
    return out


def violations() -> set[str]:
    out: set[str] = set()
    for m in MODULES:
        for target, name in imports(m):
            if layer(target) in FORBIDDEN.get(layer(m), set()):
                out.add(f"layer: {m} imports {target}")
            if name and name.startswith("_") and not name.startswith("__") and target != m:
                out.add(f"private: {m} imports {target}.{name}")
    edges = graph()
    for comp in cycles(edges):
        out.add("cycle: " + " -> ".join(cycle_path(edges, comp)))
    packages = package_graph()
    for comp in cycles(packages):
        out.add("package cycle: " + " -> ".join(cycle_path(packages, comp)))
    return out


def test_every_module_is_parsed():
    assert len(MODULES) > 40 and "repro.core.masks" in MODULES and "repro.data" in MODULES


def test_import_rules_hold():
    new = sorted(violations() - KNOWN_VIOLATIONS)
    assert not new, "import rules broken (see tests/test_layering.py):\n" + "\n".join(new)


def test_known_violations_are_still_real():
    """An allow-list entry that no longer occurs must be deleted (the list only shrinks)."""
    gone = sorted(KNOWN_VIOLATIONS - violations())
    assert not gone, "fixed: remove from KNOWN_VIOLATIONS:\n" + "\n".join(gone)



# --- function-local imports: few, and each says why ---------------------------------------------------------
#: function-local imports per 1,000 lines of src/repro (issue 21: about 2; fusion_bench, mergekit, peft: 0.8-2.1)
LOCAL_IMPORTS_PER_1000 = 2.5


def local_imports() -> tuple[list[str], int]:
    """``path:line`` of every import inside a function of ``src/repro`` without a comment saying why (on its
    lines or the line above), and the number of such imports in all."""
    bare, n = [], 0
    for path in MODULES.values():
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for fn in ast.walk(ast.parse(text)):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    n += 1
                    said = lines[node.lineno - 1:node.end_lineno] + [lines[node.lineno - 2].strip()[:1]]
                    if not any("#" in line for line in said):
                        bare.append(f"{path.relative_to(SRC)}:{node.lineno}")
    return bare, n


def test_function_local_imports_are_few_and_say_why():
    """An import stays inside a function only for a heavy optional dependency, a cycle, CLI startup or subprocess
    isolation, with a comment saying which (CONTRIBUTING); the rest go at the top of the module."""
    bare, n = local_imports()
    assert not bare, "function-local imports without a reason comment (hoist them, or say why):\n" + "\n".join(bare)
    lines = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in MODULES.values())
    assert 1000 * n / lines <= LOCAL_IMPORTS_PER_1000, f"{n} function-local imports in {lines} lines"

# --- the checker itself, on hand-made modules ----------------------------------------------------------
def test_checker_finds_cycles_and_forbidden_and_private_imports(tmp_path, monkeypatch):
    pkg = tmp_path / "repro"
    (pkg / "core").mkdir(parents=True)
    (pkg / "p1").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "core" / "__init__.py").write_text("")
    (pkg / "p1" / "__init__.py").write_text("")
    (pkg / "core" / "a.py").write_text("def f():\n    from repro.p1 import b\n")  # function-local, forbidden
    (pkg / "p1" / "b.py").write_text("from repro.core.a import _helper\nfrom . import c\n")
    (pkg / "p1" / "c.py").write_text("import repro.core.a\n")
    monkeypatch.setitem(globals(), "SRC", pkg)
    monkeypatch.setitem(globals(), "MODULES", {module_name(p): p for p in sorted(pkg.rglob("*.py"))})
    got = violations()
    assert "layer: repro.core.a imports repro.p1.b" in got
    assert "private: repro.p1.b imports repro.core.a._helper" in got
    assert any(v.startswith("cycle: ") and "repro.core.a" in v and "repro.p1.b" in v for v in got)


def test_checker_finds_package_cycles_without_module_cycles(tmp_path, monkeypatch):
    """data.a → models.b → data.c has no module cycle but a data ⇄ models loop; a section module of p1 importing
    a chapter that imports it is a loop too; chapter → section and chapter → chapter alone are not."""
    pkg = tmp_path / "repro"
    for d in ("data", "models", "p1", "p1/ch", "p1/other"):
        (pkg / d).mkdir(parents=True)
        (pkg / d / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "data" / "a.py").write_text("from repro.models.b import X\n")
    (pkg / "models" / "b.py").write_text("from repro.data.c import Y\n")
    (pkg / "data" / "c.py").write_text("Y = 1\n")
    (pkg / "p1" / "sec.py").write_text("def f():\n    from repro.p1.ch.plan import P\n")
    (pkg / "p1" / "ch" / "plan.py").write_text("from repro.p1.sec import f\nP = 1\n")
    (pkg / "p1" / "other" / "jobs.py").write_text("from repro.p1.ch import plan\nfrom repro.p1 import sec\n")
    monkeypatch.setitem(globals(), "SRC", pkg)
    monkeypatch.setitem(globals(), "MODULES", {module_name(p): p for p in sorted(pkg.rglob("*.py"))})
    got = violations()
    assert not any(v.startswith("cycle: ") and "repro.data" in v for v in got)
    assert "package cycle: repro.data -> repro.models -> repro.data" in got
    assert any(v.startswith("package cycle: ") and "repro.p1.ch" in v and "repro.p1 " in v + " " for v in got)
    assert not any("repro.p1.other" in v for v in got)
