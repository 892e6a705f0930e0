"""Which notebooks exist and what they take: ``book/_toc.yml`` discovery, the ``parameters`` cell, and the
validation / coercion of parameters before any kernel starts."""

from __future__ import annotations

import ast
import logging
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from repro.paths import book_dir, notebooks_dir
from repro.profiles import PROFILES

KERNEL = "python3"


class ParameterError(ValueError):
    """Bad notebook parameters / profile / notebook name (the message lists the valid choices)."""


# --------------------------------------------------------------------------------------------------------
# locations
# --------------------------------------------------------------------------------------------------------


def book_notebooks() -> list[str]:
    """The notebooks of the book, in ``book/_toc.yml`` order (entries ``executed/<name>``)."""
    import yaml

    toc = yaml.safe_load((book_dir() / "_toc.yml").read_text())
    names: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            f = node.get("file")
            if isinstance(f, str) and f.startswith("executed/"):
                name = f.split("/", 1)[1].removesuffix(".ipynb")
                if (notebooks_dir() / f"{name}.md").exists() and name not in names:
                    names.append(name)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(toc)
    return names


def list_notebooks() -> list[str]:
    """Every runnable notebook: the book's (toc order), then any other ``notebooks/*.md``."""
    names = book_notebooks()
    return names + sorted(p.stem for p in notebooks_dir().glob("*.md") if p.stem not in names)


def notebook_path(name: str | Path) -> Path:
    """``p1_localization``, ``p1_localization.md`` or a path to a ``.md``/``.ipynb`` notebook."""
    p = Path(name)
    if p.suffix in (".md", ".ipynb") and p.exists():
        return p.resolve()
    cand = notebooks_dir() / f"{p.stem if p.suffix == '.md' else p.name}.md"
    if cand.exists():
        return cand
    raise ParameterError(f"unknown notebook {str(name)!r}; choose one of {list_notebooks()}")


def notebook_title(name: str) -> str:
    for line in notebook_path(name).read_text().splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return name


# --------------------------------------------------------------------------------------------------------
# notebooks and parameters
# --------------------------------------------------------------------------------------------------------
def read_notebook(path: str | Path):
    """A notebook as an nbformat node, jupytext sources converted in memory; kernel forced to ``python3``."""
    import jupytext
    import nbformat

    path = Path(path)
    nb = jupytext.read(path) if path.suffix == ".md" else nbformat.read(path, as_version=4)
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": KERNEL}
    nb.metadata.setdefault("language_info", {"name": "python"})
    nb.metadata.pop("jupytext", None)
    return nb


@dataclass(frozen=True)
class NotebookParam:
    name: str
    type: str | None  # the annotation as written (or None)
    default: str  # the default's source text
    help: str = ""

    def describe(self) -> str:
        t = f": {self.type}" if self.type else ""
        h = f"  # {self.help}" if self.help else ""
        return f"{self.name}{t} = {self.default}{h}"


def _parameters_cell(nb) -> str | None:
    for cell in nb.cells:
        if cell.cell_type == "code" and "parameters" in cell.get("metadata", {}).get("tags", []):
            return cell.source
    return None


def notebook_parameters(name: str | Path) -> dict[str, NotebookParam]:
    """The parameters of a notebook's ``parameters``-tagged cell, with their annotated types and defaults.

    Names come from ``papermill.inspect_notebook`` and from parsing the cell (papermill skips annotations such as
    ``str | None``); types from the annotation.
    """
    import nbformat
    import papermill

    nb = read_notebook(notebook_path(name))
    source = _parameters_cell(nb)
    if source is None:
        return {}
    params: dict[str, NotebookParam] = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp_nb = Path(tmp) / "nb.ipynb"
        nbformat.write(nb, tmp_nb)
        pm_logger = logging.getLogger("papermill")
        level = pm_logger.level
        pm_logger.setLevel(logging.ERROR)  # "Unable to parse line ..." for comments with '='; ast below reads them
        try:
            inspected = papermill.inspect_notebook(str(tmp_nb))
        finally:
            pm_logger.setLevel(level)
        for p in inspected.values():
            t = None if p["inferred_type_name"] == "None" else p["inferred_type_name"]
            params[p["name"]] = NotebookParam(p["name"], t, p["default"], p.get("help", ""))
    lines = source.splitlines()
    for node in ast.parse(source).body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            name_, ann = node.target.id, ast.unparse(node.annotation)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name_, ann = node.targets[0].id, None
        else:
            continue
        line = lines[node.lineno - 1]
        comment = line.split("#", 1)[1].strip() if "#" in line[node.value.end_col_offset:] else ""
        old = params.get(name_)
        params[name_] = NotebookParam(name_, ann or (old.type if old else None), ast.unparse(node.value),
                                      comment or (old.help if old else ""))
    return params


_BASE_TYPES = {"str": "str", "int": "int", "float": "float", "bool": "bool", "list": "list", "dict": "dict",
               "tuple": "tuple", "List": "list", "Dict": "dict", "Tuple": "tuple", "Sequence": "list",
               "Any": "any", "None": "none", "NoneType": "none"}


def _allowed(param: NotebookParam) -> set[str]:
    """Type names a value may have: from the annotation, else from the default's literal type."""
    if param.type:
        out: set[str] = set()
        ann = param.type.replace(" ", "")
        m = re.fullmatch(r"(?:typing\.)?Optional\[(.*)\]", ann)
        if m:
            out.add("none")
            ann = m.group(1)
        for part in ann.split("|"):
            base = re.split(r"\[", part, maxsplit=1)[0].removeprefix("typing.")
            out.add(_BASE_TYPES.get(base, "any"))
        return out
    try:
        default = ast.literal_eval(param.default)
    except (ValueError, SyntaxError):
        return {"any"}
    if default is None:
        return {"any"}
    return {_type_name(default)}


def _type_name(v: Any) -> str:
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "bool"
    for t in (int, float, str, list, dict, tuple):
        if isinstance(v, t):
            return t.__name__
    return type(v).__name__


def _coerce(param: NotebookParam, value: Any) -> Any:
    allowed = _allowed(param)
    kind = _type_name(value)
    if "any" in allowed or kind in allowed:
        return list(value) if kind == "tuple" and "list" in allowed else value
    if kind == "int" and "float" in allowed:
        return float(value)
    if kind == "tuple" and "list" in allowed:
        return list(value)
    if kind == "list" and "tuple" in allowed:
        return value
    want = param.type or " | ".join(sorted(allowed))
    raise ParameterError(f"parameter {param.name!r} must be {want} (declared `{param.describe()}`), "
                         f"got {value!r} of type {type(value).__name__}")


def parse_cli_value(text: str) -> Any:
    """A ``-p key value`` value as YAML (``13`` → int, ``0.5`` → float, ``true``, ``null``, ``[1, 2]``), else the
    string itself."""
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def validate_params(name: str, profile: str, params: Mapping[str, Any] | None = None,
                    declared: Mapping[str, NotebookParam] | None = None) -> dict[str, Any]:
    """Check ``params`` against the notebook's parameters cell before anything runs; return them coerced.

    Rejects an unknown profile (listing ``repro.profiles.PROFILES``), unknown parameter names and wrong types
    (listing the notebook's parameters with their types and defaults).  ``profile`` is added to the result.
    """
    params = dict(params or {})
    if profile not in PROFILES:
        raise ParameterError(f"unknown profile {profile!r}; choose one of {sorted(PROFILES)}")
    if "profile" in params and params["profile"] != profile:
        raise ParameterError(f"parameter profile={params['profile']!r} contradicts --profile {profile!r}")
    declared = dict(declared) if declared is not None else notebook_parameters(name)
    valid = "\n".join(f"    {p.describe()}" for p in declared.values()) or "    (none)"
    unknown = sorted(set(params) - set(declared))
    if unknown:
        raise ParameterError(f"unknown parameter(s) {unknown} for notebook {Path(str(name)).stem!r}; "
                             f"valid parameters:\n{valid}")
    if "profile" not in declared:
        raise ParameterError(f"notebook {name!r} has no `profile` parameter; every notebook must declare one")
    out = {}
    for key, value in params.items():
        try:
            out[key] = _coerce(declared[key], value)
        except ParameterError as e:
            raise ParameterError(f"{e}\n  valid parameters of {Path(str(name)).stem!r}:\n{valid}") from None
    out["profile"] = profile
    return out




def describe_notebooks() -> str:
    """``repro list``: every notebook with its title and parameters."""
    book = set(book_notebooks())
    out = []
    for name in list_notebooks():
        tag = "" if name in book else "  (not in the book)"
        out.append(f"{name}: {notebook_title(name)}{tag}")
        for p in notebook_parameters(name).values():
            out.append(f"    {p.describe()}")
    return "\n".join(out)



