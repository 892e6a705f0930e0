"""Which notebooks exist and what they take: ``book/_toc.yml`` discovery, the ``parameters`` cell, and the
validation / coercion of parameters before any kernel starts."""

from __future__ import annotations

import ast
import logging
import math
import re
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping

import nbformat
import yaml

from repro.chapters import chapter_names
from repro.paths import notebooks_dir, resolve_path
from repro.plans import read_ranges
from repro.profiles import PROFILES

KERNEL = "python3"


class ParameterError(ValueError):
    """Bad notebook parameters / profile / notebook name (the message lists the valid choices)."""


# --------------------------------------------------------------------------------------------------------
# locations
# --------------------------------------------------------------------------------------------------------


def book_notebooks() -> list[str]:
    """The notebooks of the book, in book order: the chapter registry (:func:`repro.chapters.chapter_names`)."""
    return list(chapter_names())


#: in a parallel build (``--jobs`` > 1) the two longest notebooks start first, the rest keep the book's order.
#: Chapters that reuse another's artifacts (the P1 chapters reuse p1_localization's FT models and grafts, the P2
#: chapters the P2 zoo of p2_task_arithmetic) need no ordering: the artifact store's file lock makes a notebook
#: that asks for an artifact another kernel is computing wait for it and load it, so nothing is trained twice, and
#: the notebook meanwhile does its other work.  (Measured 2026-11-24: making them wait for the whole chapter left
#: one of the two cores idle for 30+ minutes while p1_localization ran.)
STARTS_FIRST: tuple[str, ...] = ("p1_localization", "p2_task_arithmetic")


def schedule_order(names: list[str]) -> list[str]:
    """``names`` in the order a parallel build starts them: :data:`STARTS_FIRST`, then the book's order."""
    return sorted(names, key=lambda n: (STARTS_FIRST.index(n) if n in STARTS_FIRST else len(STARTS_FIRST)))


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


#: Data files a notebook reads besides code and ``book/reference``, by the parameter that names them: their
#: contents enter that notebook's cache key (:func:`repro.runner.execute.cache_key`), so a new
#: ``results/bench.json`` re-renders the Performance page and leaves the P1 / P2 notebooks cached.
INPUT_FILES: dict[str, tuple[str, ...]] = {"performance": ("bench_file",)}


def input_files(name: str | Path, params: Mapping[str, Any]) -> dict[str, Path]:
    """``{parameter: path}`` of the data files notebook ``name`` reads (:data:`INPUT_FILES`): the parameter's
    value in ``params``, else its default in the parameters cell; relative paths against the repository root."""
    stem = Path(str(name)).stem
    wanted = INPUT_FILES.get(stem, ())
    if not wanted:
        return {}
    missing = [p for p in wanted if p not in params]
    declared = notebook_parameters(name) if missing else {}
    out: dict[str, Path] = {}
    for p in wanted:
        if p in params:
            value = params[p]
        elif p in declared:
            value = ast.literal_eval(declared[p].default)
        else:
            raise ParameterError(f"notebook {stem!r} declares no parameter {p!r} (listed in INPUT_FILES); add it to "
                                 f"its parameters cell or drop it from repro.runner.notebooks.INPUT_FILES")
        if isinstance(value, str) and value:
            out[p] = resolve_path(value)
    return out


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
    import jupytext  # heavy (~0.4 s): only to read a notebook

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
    import papermill  # heavy (~1 s): only to execute a notebook

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


@dataclass(frozen=True)
class _Type:
    """A parameter's type: the kinds a value may have, and for lists / tuples the type of their elements."""
    kinds: frozenset[str]
    item: "_Type | None" = None

    def __str__(self) -> str:
        parts = []
        for k in sorted(self.kinds - {"none"}):
            parts.append(f"{k}[{self.item}]" if k in ("list", "tuple") and self.item else k)
        return " | ".join(parts + (["None"] if "none" in self.kinds else []))


ANY = _Type(frozenset({"any"}))


def _split_top(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` outside brackets."""
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += (ch == "[") - (ch == "]")
        if ch == sep and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    return out + [cur]


def _parse_annotation(ann: str) -> _Type:
    """``Optional[list[float]]``, ``list[str] | None``, ``tuple[int, ...]``, ... as a :class:`_Type`."""
    kinds: set[str] = set()
    item: _Type | None = None
    for part in _split_top(ann.replace(" ", ""), "|"):
        m = re.fullmatch(r"(?:typing\.)?(\w+)(?:\[(.*)\])?", part)
        if not m:
            kinds.add("any")
            continue
        base, args = m.group(1), m.group(2)
        if base in ("Optional", "Union") and args:
            for t in [_parse_annotation(a) for a in _split_top(args, ",")]:
                kinds |= t.kinds
                item = item or t.item
            kinds |= {"none"} if base == "Optional" else set()
            continue
        kind = _BASE_TYPES.get(base, "any")
        kinds.add(kind)
        if kind in ("list", "tuple") and args:
            elems = [_parse_annotation(a) for a in _split_top(args, ",") if a != "..."]
            item = _Type(frozenset().union(*(t.kinds for t in elems)), elems[0].item) if elems else None
    return _Type(frozenset(kinds), item)


def _type_of_value(v: Any) -> _Type:
    """The type a literal default implies (``[0.1, 1]`` → list[float]; ``None`` → anything)."""
    kind = _type_name(v)
    if kind == "none":
        return ANY
    if kind in ("list", "tuple") and v:
        kinds = {_type_name(x) for x in v}
        if kinds == {"int", "float"}:
            kinds = {"float"}
        item = _type_of_value(v[0]) if len(kinds) == 1 else ANY
        return _Type(frozenset({kind}), _Type(frozenset(kinds), item.item))
    return _Type(frozenset({kind}))


def _declared_type(param: NotebookParam) -> _Type:
    """From the annotation, else from the default's literal type."""
    if param.type:
        return _parse_annotation(param.type)
    try:
        return _type_of_value(ast.literal_eval(param.default))
    except (ValueError, SyntaxError):
        return ANY


def _allowed(param: NotebookParam) -> set[str]:
    """Type names a value may have (top level)."""
    return set(_declared_type(param).kinds)


def _type_name(v: Any) -> str:
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "bool"
    for t in (int, float, str, list, dict, tuple):
        if isinstance(v, t):
            return t.__name__
    return type(v).__name__


def _check_type(t: _Type, value: Any, where: str) -> Any:
    """``value`` checked against ``t`` (elements too), ints widened to float; raises ParameterError."""
    kind = _type_name(value)
    if "any" not in t.kinds and kind not in t.kinds:
        if kind == "int" and "float" in t.kinds:
            value, kind = float(value), "float"
        elif kind == "tuple" and "list" in t.kinds:
            kind = "list"
        elif not (kind == "list" and "tuple" in t.kinds):
            raise ParameterError(f"{where} must be {t}, got {value!r} of type {type(value).__name__}")
    if kind == "tuple" and "list" in t.kinds:
        value = list(value)
    if kind in ("list", "tuple") and t.item is not None:
        value = [_check_type(t.item, x, f"{where}: element {i}") for i, x in enumerate(value)]
    return value


def _coerce(param: NotebookParam, value: Any, item: str | None = None) -> Any:
    """``value`` checked against the parameter's declared type; ``item`` is the element type of a list parameter
    whose annotation does not say (from :data:`PARAMETER_RULES`)."""
    t = _declared_type(param)
    if item and t.item is None and t.kinds & {"list", "tuple"}:
        t = _Type(t.kinds, _Type(frozenset({item})))
    want = param.type or str(t)
    try:
        return _check_type(t, value, f"parameter {param.name!r}")
    except ParameterError as e:
        msg = str(e)
        if ": element" not in msg:
            msg = (f"parameter {param.name!r} must be {want} (declared `{param.describe()}`), "
                   f"got {value!r} of type {type(value).__name__}")
        raise ParameterError(msg) from None


# --------------------------------------------------------------------------------------------------------
# what parameter names mean: element types and ranges the parameters cell cannot express
# --------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ParamRule:
    """Element type of an untyped list parameter, and the range of its numbers (each element of a list)."""
    item: str | None = None
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    meaning: str = ""
    example: str = ""

    def interval(self) -> str:
        def fmt(x: float) -> str:
            return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"
        lo = "-inf" if self.low is None else fmt(self.low)
        hi = "inf" if self.high is None else fmt(self.high)
        left = "(" if self.low_open or self.low is None else "["
        right = ")" if self.high_open or self.high is None else "]"
        return f"{left}{lo}, {hi}{right}"

    def admits(self, x: float) -> bool:
        if self.low is not None and (x < self.low or (self.low_open and x == self.low)):
            return False
        return not (self.high is not None and (x > self.high or (self.high_open and x == self.high)))


#: the largest learning rate a notebook parameter may ask for (float32 holds up to 3.4e38; P1's graft lr is 1e7)
MAX_LR = 1e30
_FRACTION = dict(low=0.0, high=1.0, low_open=True)
#: ``(notebook:)name`` pattern → rule; the first full match wins (notebook-specific entries first).
PARAMETER_RULES: tuple[tuple[str, ParamRule], ...] = (
    ("p2_appendix:sparsities", ParamRule("float", 0.0, 1.0, high_open=True, example="'[0, 0.5, 0.9]'",
                                         meaning="TaLoS sparsity k, the share masked out; 0 = plain fine-tuning")),
    (r"(.+_)?(sparsities|densities)", ParamRule("float", **_FRACTION, example="'[1e-3, 1e-2]'",
                                                 meaning="region sizes as fractions of the parameters")),
    (r"(.+_)?(sparsity|density|fraction)", ParamRule("float", **_FRACTION, example="0.01",
                                                     meaning="a share of the parameters")),
    (r".+_bases?", ParamRule("float", 0.0, 1.0, example="'[0, 1e-5]'",
                             meaning="gamma_base sparsities; 0 = empty base")),
    (r"(.+_)?lr", ParamRule("float", 0.0, MAX_LR, low_open=True, example="1e7",
                            meaning="a learning rate; larger ones overflow float32 updates")),
    (r"(.+_)?alphas", ParamRule("float", example="'[0.5, 1.0]'", meaning="interpolation coefficients")),
    (r"(.+_)?(tasks|sources|sequence)|peft", ParamRule("str", example="'[SST-2, QNLI]'", meaning="names")),
    (r"(.+_)?seed", ParamRule("int", 0.0, float(2**32 - 1), example="13",
                              meaning="a random seed: numpy and torch take 0 .. 2**32 - 1")),
    (r"n_(seeds|fisher)", ParamRule("int", 1.0, example="2", meaning="a count of at least 1")),
    (r"(.+_)?(steps|every|checkpoint|k|examples|points)|n_.+|iterations|warmup|seed",
     ParamRule("int", 0.0, example="100", meaning="a count")),
)


#: ``{notebook: {field: range}}``: the ranges declared on the chapter plans' fields (``repro.plans.ranged``), read
#: from the JSON the plans write (the runner imports no chapter).  A parameter named after a plan field is checked
#: against that field's range; :data:`PARAMETER_RULES` give the element type, meaning and example, and the range of
#: the parameters that are not plan fields (seed, graft_lr, graft_steps, ...).
PLAN_RANGES: dict[str, dict[str, dict[str, Any]]] = read_ranges()


def parameter_rule(notebook: str, name: str) -> ParamRule | None:
    """The rule of parameter ``name`` of ``notebook``: the first matching pattern's, with the range of the plan field
    of that name where the chapter's plan declares one."""
    rule = next((r for pattern, r in PARAMETER_RULES
                 if re.fullmatch(pattern, f"{notebook}:{name}" if ":" in pattern else name)), None)
    span = PLAN_RANGES.get(notebook, {}).get(name)
    if span is not None:
        rule = replace(rule or ParamRule(meaning=f"the range of the plan field {name}", example="1"),
                       low=span["low"], high=span["high"], low_open=span["low_open"], high_open=span["high_open"])
    return rule


def _check_range(name: str, value: Any, rule: ParamRule | None) -> None:
    """Every number in ``value`` (a scalar or a list) finite and inside the rule's range."""
    numbers = value if isinstance(value, list) else [value]
    for i, x in enumerate(numbers):
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            continue
        where = f"parameter {name!r}" + (f": element {i}" if isinstance(value, list) else "")
        if not math.isfinite(x):
            raise ParameterError(f"{where} is {x!r}: it must be a finite number")
        if rule is not None and not rule.admits(x):
            raise ParameterError(f"{where} is {x!r}, outside {rule.interval()} ({rule.meaning}); "
                                 f"e.g. -p {name} {rule.example}")


_YAML11_MISSED_FLOAT = re.compile(r"[-+]?(\d+(\.\d*)?|\.\d+)[eE][-+]?\d+")


def _yaml11_floats(v: Any) -> Any:
    """Exponent floats that YAML 1.1 leaves as strings (``1e7``, ``1e-3``) as floats, as papermill reads them."""
    if isinstance(v, str) and _YAML11_MISSED_FLOAT.fullmatch(v.strip()):
        return float(v)
    if isinstance(v, list):
        return [_yaml11_floats(x) for x in v]
    if isinstance(v, dict):
        return {k: _yaml11_floats(x) for k, x in v.items()}
    return v


def parse_cli_value(text: str) -> Any:
    """A ``-p key value`` value as YAML (``13`` → int, ``0.5`` and ``1e7`` → float, ``true``, ``null``,
    ``[1e-3, 1e-2]``), else the string itself."""
    try:
        return _yaml11_floats(yaml.safe_load(text))
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
    stem = Path(str(name)).stem
    for key, value in params.items():
        rule = parameter_rule(stem, key)
        try:
            out[key] = _coerce(declared[key], value, rule.item if rule else None)
        except ParameterError as e:
            raise ParameterError(f"{e}\n  valid parameters of {Path(str(name)).stem!r}:\n{valid}") from None
        _check_range(key, out[key], rule)  # the message says the range and an example: no listing needed
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



