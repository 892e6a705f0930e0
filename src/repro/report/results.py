"""The results JSON every notebook writes: ``<output_dir>/<profile>/<notebook>.json``.

It is the contract between the notebooks (compute) and the book (claims page, cross-notebook summaries)::

    {
      "meta":    {"notebook": "p1_localization", "profile": "cpu", "params": {...}, "created": "...", ...},
      "tables":  {"p1-table2": [{"task": "SST-2", "method": "Graft", "sparsity": 0.01, "metric": "acc",
                                 "value": 91.8, "std": 0.4, "paper": 92.4, "shots": 4096, ...}, ...]},
      "figures": {"p1-fig2": [{"task": "SST-2", "region": "learned", "sparsity": 0.01, "acc": 90.1}, ...]},
      "claims":  [{"id": "p1-table2-recovery", "text": "...", "paper": "...", "ours": "...",
                   "verdict": "holds" | "does-not-hold" | "inconclusive" | "not-testable",
                   "holds": true | false | null, "note": "...", "beyond_paper": false,
                   "evidence": {"n_examples": 872, "seeds": 3, "statistic": 0.97, "ci_low": 0.95,
                                "ci_high": 0.99, "margin": 0.95, "test": "paired bootstrap ...", "op": ">="}}]
    }

Conventions:

- **Ids** follow the papers' numbering: ``p1-table2``, ``p1-fig8``, ``p2-table1``, ``p2-fig2`` (P1 = grafting,
  P2 = TaLoS), optionally with a panel letter (``p1-fig7e``) and a ``-slug`` for a subset or a claim
  (``p1-table2-ece``, ``p1-table2-recovery``).  A claim's id starts with the table/figure id it is about.
- **Units**: ``value``, ``std`` and ``paper`` are in the paper's printed units, so they compare directly:
  percentages for accuracy-like metrics (``92.3`` means 92.3 %; see :data:`PERCENT_METRICS`, and :func:`pct`
  to convert a fraction), seconds and GiB for cost metrics (put the unit in an extra ``unit`` key).
  ``sparsity`` is the percentage of parameters as printed by the paper (``0.01`` = 0.01 %, FT = ``100``),
  or ``None`` where the table has no sparsity column.
- ``paper`` is the printed number for the same cell, or ``None`` (not printed / our own extra row).
- ``verdict`` follows from ``evidence`` (:mod:`repro.report.verdicts`): the claim is ``statistic op margin`` and the
  CI decides.  ``holds`` is kept for compatibility (holds → true, does-not-hold → false, inconclusive and
  not-testable → null); a not-testable claim says why in its ``note``.  Validation rejects a claim whose verdict,
  ``holds`` and evidence disagree.
- ``data`` (optional) lists, for each task whose numbers decide the claim, where its examples come from
  (:func:`repro.data.provenance.task_provenance`: ``task, kind`` = real | generated, ``source, title, licence,
  label_rule``); ``[]`` for a claim about code or cost that no task decides.  ``evidence["per_task"]`` (optional)
  holds the per-task verdicts of a claim pooled or combined over tasks: ``{task: {verdict, statistic, ci_low,
  ci_high}}``.
- ``beyond_paper`` marks a claim of ours that no paper makes (grafted task vectors, cross-paper overlaps): it is
  listed on its own and never counted in a paper's tally.
- Claim ids are unique within a file (:meth:`Results.add_claim` refuses a second claim with the same id).

Build a file with :class:`Results`; :func:`validate` checks one; :func:`paper_vs_ours` shows our numbers next to
the paper's in a notebook.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd

from repro.artifacts import write_json
from repro.data.provenance import KINDS, task_provenance
from repro.paths import resolve_path, results_path
from repro.profiles import Profile, get_profile
from repro.report.display import ClaimView, Rows, departure_note, fmt_index, fmt_sparsity, fmt_value, show
from repro.report.gates import Learned, learning_reason, not_testable, tiny_model_reason, unmeasured
from repro.report.verdicts import HOLDS, VERDICTS, Evidence, VerdictError, check_consistent, verdict_of
from repro import __version__

ID_RE = re.compile(r"^p[12]-(table|fig)[1-9][0-9]*[a-z]?(-[a-z0-9]+)*$")
ROW_KEYS: tuple[str, ...] = ("task", "method", "sparsity", "metric", "value", "std", "paper")
CLAIM_KEYS: tuple[str, ...] = ("id", "text", "paper", "ours", "holds", "note")
TOP_KEYS: tuple[str, ...] = ("tables", "figures", "claims")
NOT_REPRODUCED = "not yet reproduced"

#: Metrics whose printed values are percentages (both papers' vocabularies, see book/reference/README.md).
PERCENT_METRICS: frozenset[str] = frozenset({
    "acc", "f1", "acc_f1", "ece", "agreement", "overlap_iou_pct",
    "abs_acc", "norm_acc", "targ_acc", "cont_acc",
})


class ResultsError(ValueError):
    """A results object does not follow the format described in :mod:`repro.report.results`."""


def pct(x: float | None) -> float | None:
    """A fraction (0.923) as the papers print it (92.3)."""
    return None if x is None else 100.0 * float(x)


# --------------------------------------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------------------------------------
def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _check_id(kind: str, id_: Any) -> None:
    if not isinstance(id_, str) or not ID_RE.match(id_):
        raise ResultsError(
            f"bad {kind} id {id_!r}: ids follow the papers' numbering, e.g. 'p1-table2', 'p1-fig8', 'p2-table1', "
            f"'p2-fig2', optionally with a panel letter and '-slug' ('p1-fig7e', 'p1-table2-ece')")


def validate_row(row: Any, where: str = "row") -> None:
    """One table row: the keys in :data:`ROW_KEYS` with the right types (extra keys allowed)."""
    if not isinstance(row, Mapping):
        raise ResultsError(f"{where}: a row must be a dict, got {type(row).__name__}")
    missing = [k for k in ROW_KEYS if k not in row]
    if missing:
        raise ResultsError(f"{where}: missing keys {missing}; every row needs {list(ROW_KEYS)}")
    for k in ("task", "method", "metric"):
        if not isinstance(row[k], str) or not row[k]:
            raise ResultsError(f"{where}: {k!r} must be a nonempty string, got {row[k]!r}")
    for k in ("sparsity", "value", "std", "paper"):
        if row[k] is not None and not _is_number(row[k]):
            raise ResultsError(f"{where}: {k!r} must be a finite number or None, got {row[k]!r}")


def validate_claim(claim: Any, where: str = "claim") -> None:
    if not isinstance(claim, Mapping):
        raise ResultsError(f"{where}: a claim must be a dict, got {type(claim).__name__}")
    missing = [k for k in CLAIM_KEYS if k not in claim]
    if missing:
        raise ResultsError(f"{where}: missing keys {missing}; every claim needs {list(CLAIM_KEYS)}")
    _check_id("claim", claim["id"])
    if not isinstance(claim["text"], str) or not claim["text"].strip():
        raise ResultsError(f"{where}: 'text' must be a nonempty string")
    if not (claim["holds"] is None or isinstance(claim["holds"], bool)):
        raise ResultsError(f"{where}: 'holds' must be true, false or null, got {claim['holds']!r}")
    if not isinstance(claim["note"], str):
        raise ResultsError(f"{where}: 'note' must be a string")
    for k in ("paper", "ours"):
        if claim[k] is not None and not isinstance(claim[k], (str, int, float)):
            raise ResultsError(f"{where}: {k!r} must be a string, a number or None, got {claim[k]!r}")
    if not isinstance(claim.get("beyond_paper", False), bool):
        raise ResultsError(f"{where}: 'beyond_paper' must be true or false")
    if "data" in claim:
        validate_data(claim["data"], where)
    ev = claim.get("evidence")
    if isinstance(ev, Mapping) and "per_task" in ev:
        validate_per_task(ev["per_task"], where)
    if "verdict" in claim or "evidence" in claim:
        try:
            check_consistent(claim.get("verdict"), claim["holds"], claim.get("evidence"), claim["note"], where)
        except VerdictError as e:
            raise ResultsError(str(e)) from None


DATA_KEYS: tuple[str, ...] = ("task", "kind", "source", "title", "licence", "label_rule")
PER_TASK_KEYS: tuple[str, ...] = ("verdict", "statistic", "ci_low", "ci_high")


def validate_data(data: Any, where: str = "claim") -> None:
    """A claim's ``data``: a list of provenance dicts (:data:`DATA_KEYS`), one per deciding task, kind real or
    generated; ``[]`` for a claim no task decides."""
    if not isinstance(data, list):
        raise ResultsError(f"{where}: 'data' must be a list of task provenance dicts, got {type(data).__name__}")
    for i, d in enumerate(data):
        if not isinstance(d, Mapping):
            raise ResultsError(f"{where}: data[{i}] must be a dict with keys {list(DATA_KEYS)}")
        missing = [k for k in DATA_KEYS if k not in d]
        if missing:
            raise ResultsError(f"{where}: data[{i}] misses {missing}; it needs {list(DATA_KEYS)}")
        if d["kind"] not in KINDS:
            raise ResultsError(f"{where}: data[{i}]['kind'] must be one of {list(KINDS)}, got {d['kind']!r}")
        if not isinstance(d["task"], str) or not d["task"]:
            raise ResultsError(f"{where}: data[{i}]['task'] must be a nonempty string")


def validate_per_task(per_task: Any, where: str = "claim") -> None:
    """``evidence["per_task"]``: ``{task: {verdict, statistic, ci_low, ci_high}}`` with a known verdict."""
    if not isinstance(per_task, Mapping) or not per_task:
        raise ResultsError(f"{where}: evidence['per_task'] must be a nonempty dict task -> verdict")
    for t, v in per_task.items():
        if not isinstance(v, Mapping) or any(k not in v for k in PER_TASK_KEYS):
            raise ResultsError(f"{where}: evidence['per_task'][{t!r}] needs keys {list(PER_TASK_KEYS)}")
        if v["verdict"] not in VERDICTS:
            raise ResultsError(f"{where}: evidence['per_task'][{t!r}]: unknown verdict {v['verdict']!r}")
        for k in ("statistic", "ci_low", "ci_high"):
            if not _is_number(v[k]):
                raise ResultsError(f"{where}: evidence['per_task'][{t!r}][{k!r}] must be a finite number")


def per_task_verdicts(parts: Mapping[str, tuple[str, Evidence]]) -> dict[str, dict[str, Any]]:
    """``evidence["per_task"]`` from per-task ``(verdict, evidence)`` pairs (:func:`repro.report.verdicts.compare`
    or :func:`~repro.report.verdicts.combine_all`'s parts)."""
    return {str(t): {"verdict": v, "statistic": float(e.statistic), "ci_low": float(e.ci_low),
                     "ci_high": float(e.ci_high), "op": e.op, "margin": float(e.margin)} for t, (v, e) in parts.items()}


claim_verdict = verdict_of


def validate(obj: Any, require_nonempty: bool = False) -> None:
    """Raise :class:`ResultsError` (naming the offending entry) unless ``obj`` is a valid results object.

    With ``require_nonempty`` the ``tables`` and ``claims`` must each have at least one entry (the book build
    requires this of every notebook).
    """
    if not isinstance(obj, Mapping):
        raise ResultsError(f"results must be a dict, got {type(obj).__name__}")
    missing = [k for k in TOP_KEYS if k not in obj]
    if missing:
        raise ResultsError(f"results: missing top-level keys {missing}; need {list(TOP_KEYS)} (+ optional 'meta')")
    unknown = set(obj) - set(TOP_KEYS) - {"meta"}
    if unknown:
        raise ResultsError(f"results: unknown top-level keys {sorted(unknown)}; allowed {list(TOP_KEYS) + ['meta']}")
    tables, figures, claims = obj["tables"], obj["figures"], obj["claims"]
    if not isinstance(tables, Mapping):
        raise ResultsError("results: 'tables' must be a dict id -> list of rows")
    for tid, rows in tables.items():
        _check_id("table", tid)
        if not isinstance(rows, list) or not rows:
            raise ResultsError(f"tables[{tid!r}]: must be a nonempty list of rows")
        for i, row in enumerate(rows):
            validate_row(row, f"tables[{tid!r}][{i}]")
    if not isinstance(figures, Mapping):
        raise ResultsError("results: 'figures' must be a dict id -> list of plotted-data rows")
    for fid, rows in figures.items():
        _check_id("figure", fid)
        if not isinstance(rows, list) or not all(isinstance(r, Mapping) for r in rows):
            raise ResultsError(f"figures[{fid!r}]: must be a list of dicts (the plotted data)")
    if not isinstance(claims, list):
        raise ResultsError("results: 'claims' must be a list")
    seen: set[str] = set()
    for i, claim in enumerate(claims):
        validate_claim(claim, f"claims[{i}]")
        if claim["id"] in seen:
            raise ResultsError(f"claims[{i}]: duplicate claim id {claim['id']!r}")
        seen.add(claim["id"])
    if require_nonempty:
        if not tables:
            raise ResultsError("results: 'tables' is empty; every notebook must report at least one table")
        if not claims:
            raise ResultsError("results: 'claims' is empty; every notebook must state at least one claim")
    try:
        json.dumps(obj, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise ResultsError(f"results are not plain JSON: {e}") from e


# --------------------------------------------------------------------------------------------------------
# builder
# --------------------------------------------------------------------------------------------------------
def _clean(x: Any) -> Any:
    """numpy / torch scalars to Python, NaN to None (JSON has no NaN)."""
    if hasattr(x, "item") and not isinstance(x, (list, dict, str)):
        try:
            x = x.item()
        except (ValueError, TypeError):
            pass
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, tuple):
        return [_clean(v) for v in x]
    if isinstance(x, list):
        return [_clean(v) for v in x]
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    return x











class Results:
    """Builder for one notebook's results JSON.

    >>> res = Results("p1_localization", "smoke")
    >>> res.add_table("p1-table2", rows)                      # rows: dicts with ROW_KEYS (+ extras)
    >>> res.add_claim("p1-table2-recovery", "Graft recovers >95% of FT accuracy", paper=">95%", ours="96.1%",
    ...               holds=True, note="4096-shot, 3 seeds")
    >>> res.save("results")                                   # -> results/smoke/p1_localization.json
    """

    def __init__(self, notebook: str, profile: str, params: Mapping[str, Any] | None = None, *,
                 data_profile: Profile | None = None, data_dir: str | Path | None = None) -> None:
        """``data_profile``: the profile whose data the claims read (a P2 notebook's ``for_p2`` profile; default
        the named ``profile``); ``data_dir``: the run's ``--data`` folder (default ``params["data_dir"]``).  Both
        say, once, where each claim's tasks come from (:func:`repro.data.provenance.task_provenance`)."""
        self.notebook = notebook
        self.profile = profile
        self._data_profile = data_profile
        self.data_dir = data_dir if data_dir is not None else (params or {}).get("data_dir")
        self.meta: dict[str, Any] = {
            "notebook": notebook, "profile": profile, "params": _clean(dict(params or {})),
            "repro_version": __version__,
        }
        self.tables: dict[str, list[dict[str, Any]]] = {}
        self.figures: dict[str, list[dict[str, Any]]] = {}
        self.claims: list[dict[str, Any]] = []
        self.learning: dict[str, Learned] = {}

    def record_learning(self, *checks: Learned) -> None:
        """Keep this run's learning checks (:func:`repro.report.gates.learned`), one per task (a later check of a
        task replaces an earlier one), for the claims that judge what fine-tuning achieved: :meth:`learned_on`."""
        for c in checks:
            self.learning[c.task] = c

    def learned_on(self, tasks: Iterable[str]) -> list[Learned]:
        """The recorded learning checks of ``tasks``; a task with none gets a failing :func:`unmeasured` check."""
        return [self.learning.get(t) or unmeasured(t) for t in dict.fromkeys(tasks)]

    def add_table(self, id: str, rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Add (or replace) table ``id``; rows are validated and returned as plain dicts."""
        _check_id("table", id)
        clean = [_clean(dict(r)) for r in rows]
        if not clean:
            raise ResultsError(f"table {id!r}: no rows")
        for i, row in enumerate(clean):
            validate_row(row, f"table {id!r} row {i}")
        self.tables[id] = clean
        show(departure_note(id))  # in a notebook: the departures of the paper profile that touch this table
        return Rows(clean)

    def add_figure(self, id: str, rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Add (or replace) the plotted data of figure ``id`` (a list of flat dicts, e.g. ``df.to_dict('records')``)."""
        _check_id("figure", id)
        clean = [_clean(dict(r)) for r in rows]
        self.figures[id] = clean
        return Rows(clean)

    def provenance(self, tasks: Iterable[str]) -> list[dict[str, Any]]:
        """The provenance dicts of ``tasks`` (each once, in order) as this run reads them."""
        if self._data_profile is None:
            self._data_profile = get_profile(self.profile)
        return [task_provenance(self._data_profile, t, self.data_dir).to_dict() for t in dict.fromkeys(tasks)]

    def add_claim(self, id: str, text: str, paper: Any = None, ours: Any = None, holds: bool | None = None,
                  note: str = "", *, verdict: str | None = None, evidence: Evidence | Mapping[str, Any] | None = None,
                  beyond_paper: bool = False, tasks: Iterable[str] | None = None,
                  learned: Iterable[Learned] | None = None, regions: Mapping[str, float] | None = None,
                  distinct: Mapping[str, bool] | None = None,
                  per_task: Mapping[str, tuple[str, Evidence]] | None = None,
                  measured_on: str | None = None) -> dict[str, Any]:
        """Add one claim; a second claim with the same id is an error (ids are unique).

        Give ``verdict`` and ``evidence`` (from :func:`repro.report.verdicts.compare`); ``holds`` then follows.  A
        rule without a CI may still pass only ``holds`` (true → holds, false → does-not-hold, None →
        not-testable, with the reason in ``note``).  ``beyond_paper`` tags a claim no paper makes.

        ``tasks``: the tasks whose numbers decide the claim; their provenance becomes the claim's ``data``
        (``()`` for a claim about code or cost: ``data = []``).  ``learned`` / ``regions`` / ``distinct`` apply
        the learning gate (:func:`repro.report.gates.learning_reason`): when it fails, the verdict is not-testable
        and the note starts with the failed gate and its numbers.  ``per_task``: the per-task verdicts of a claim
        pooled or combined over tasks, stored as ``evidence["per_task"]``.  ``measured_on``: the model key a cost
        claim (time, memory) was measured on; a tiny random-init model makes it not testable
        (:func:`repro.report.gates.tiny_model_reason`)."""
        if learned is not None or regions is not None or distinct is not None or measured_on is not None:
            reason = tiny_model_reason(measured_on or "") or (
                learning_reason(learned if learned is not None else (), regions, distinct,
                                need_checks=learned is not None)
                if learned is not None or regions is not None or distinct is not None else None)
            if reason and (verdict or {True: "holds", False: "does-not-hold"}.get(holds)) != "not-testable":
                kw = not_testable(reason, note)
                verdict, note, holds = kw["verdict"], kw["note"], None
        if any(c["id"] == id for c in self.claims):
            raise ResultsError(f"claim {id!r} is added twice; claim ids must be unique (give the second one its own "
                               f"'-slug', e.g. {id + '-2'!r})")
        holds = _clean(holds)
        if holds is not None and not isinstance(holds, bool):
            raise ResultsError(f"claim {id!r}: 'holds' must be true, false or None, got {holds!r}")
        if verdict is None:
            verdict = {True: "holds", False: "does-not-hold"}.get(holds, "not-testable")  # type: ignore[arg-type]
            if verdict == "not-testable" and not note.strip():
                note = "not tested in this profile"
        elif holds is not None and holds is not HOLDS.get(verdict):
            raise ResultsError(f"claim {id!r}: holds={holds!r} contradicts verdict {verdict!r}; pass only verdict")
        ev = evidence.to_dict() if isinstance(evidence, Evidence) else (dict(evidence) if evidence else None)
        if per_task:
            if ev is None:
                raise ResultsError(f"claim {id!r}: per_task verdicts need the claim's evidence")
            ev["per_task"] = per_task_verdicts(per_task)
        claim = {"id": id, "text": text, "paper": _clean(paper), "ours": _clean(ours),
                 "holds": HOLDS.get(verdict), "note": note, "verdict": verdict, "evidence": _clean(ev),
                 "beyond_paper": bool(beyond_paper)}
        if tasks is not None:
            if isinstance(tasks, str):
                raise ResultsError(f"claim {id!r}: tasks must be a list of task names, got the string {tasks!r}")
            claim["data"] = _clean(self.provenance(tasks))
        validate_claim(claim, f"claim {id!r}")
        self.claims.append(claim)
        return ClaimView(claim)

    def to_dict(self) -> dict[str, Any]:
        from repro.device import environment_meta  # heavy: repro.device imports torch; reading results needs none

        meta = dict(self.meta, **environment_meta())  # device, training/eval precision, models, versions, commit
        meta["created"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        return {"meta": meta, "tables": self.tables, "figures": self.figures, "claims": self.claims}

    def path(self, output_dir: str | Path = "results") -> Path:
        return results_path(output_dir, self.profile, self.notebook)

    def save(self, output_dir: str | Path = "results") -> Path:
        """Validate, then write ``<output_dir>/<profile>/<notebook>.json`` atomically; returns the path.

        A relative ``output_dir`` is relative to the repository root (:func:`resolve_path`)."""
        obj = self.to_dict()
        validate(obj, require_nonempty=True)
        path = self.path(output_dir)
        write_json(path, obj)
        return path


def load_results(path: str | Path, require_nonempty: bool = False) -> dict[str, Any]:
    """Read and validate one results JSON."""
    path = Path(path)
    try:
        obj = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ResultsError(f"{path}: not valid JSON ({e})") from e
    try:
        validate(obj, require_nonempty=require_nonempty)
    except ResultsError as e:
        raise ResultsError(f"{path}: {e}") from e
    return obj


def load_all(output_dir: str | Path, profile: str) -> dict[str, dict[str, Any]]:
    """Every results JSON of one profile, by notebook name."""
    folder = resolve_path(output_dir) / profile
    return {p.stem: load_results(p) for p in sorted(folder.glob("*.json")) if not p.name.endswith(".cache.json")}


# --------------------------------------------------------------------------------------------------------
# display
# --------------------------------------------------------------------------------------------------------
_INDEX = ("task", "method", "sparsity", "metric")
_NOT_INDEX = set(ROW_KEYS) | {"paper_std", "notes", "src_line", "citation", "unit", "paper_text", "delta_vs_best_other"}


def _unit(row: Mapping[str, Any]) -> str:
    if row.get("unit"):
        return str(row["unit"])
    return "%" if row.get("metric") in PERCENT_METRICS else ""


def paper_vs_ours(rows: Sequence[Mapping[str, Any]] | Mapping[str, Any], formatted: bool = True) -> pd.DataFrame:
    """Our value next to the paper's printed value and the difference, one line per row.

    The index is (task, method, sparsity, metric) plus every extra key whose value varies between rows (e.g.
    ``shots``, ``model``).  ``formatted=True`` (for display) gives strings in the paper's units — ``92.3%``,
    ``± std``, deltas in percentage points (``+0.4 pp``), ``—`` where a number is missing; ``formatted=False``
    gives the numbers: ``ours, ours_std, paper, paper_std, delta`` (delta = ours − paper).  A row's optional
    ``paper_text`` (e.g. ``"0.3–0.5"`` for a range stated in the text) is shown instead of the formatted number.

    ``rows`` may also be a results object / a table dict entry; a dict with ``tables`` is rejected (pass one
    table's rows).
    """
    if isinstance(rows, Mapping):
        raise TypeError("paper_vs_ours takes one table's rows (a list of dicts), e.g. res.tables['p1-table2']")
    rows = [dict(r) for r in rows]
    for i, r in enumerate(rows):
        validate_row(r, f"row {i}")
    extras: list[str] = []
    for r in rows:
        for k in r:
            if k not in _NOT_INDEX and k not in extras:
                extras.append(k)
    varying = [k for k in extras if len({json.dumps(r.get(k), default=str) for r in rows}) > 1]
    index_cols = ["task", "method", "sparsity", "metric"] + varying
    records = []
    for r in rows:
        ours, paper = r["value"], r["paper"]
        delta = None if ours is None or paper is None else ours - paper
        rec = {k: r.get(k) for k in index_cols}
        rec.update(ours=ours, ours_std=r["std"], paper=paper, paper_std=r.get("paper_std"), delta=delta,
                   _unit=_unit(r), _text=r.get("paper_text"))
        records.append(rec)
    df = pd.DataFrame.from_records(records, columns=index_cols + ["ours", "ours_std", "paper", "paper_std", "delta",
                                                                  "_unit", "_text"])
    if not formatted:
        for c in ("ours", "ours_std", "paper", "paper_std", "delta", "sparsity"):
            df[c] = pd.to_numeric(df[c], errors="coerce").astype(float)
        return df.drop(columns=["_unit", "_text"]).set_index(index_cols)
    out = pd.DataFrame({
        **{k: [fmt_index(r[k]) for r in records] for k in index_cols if k != "sparsity"},
        "sparsity": [fmt_sparsity(r["sparsity"], missing="") for r in records],
        "ours": [fmt_value(r["ours"], r["_unit"], r["ours_std"]) for r in records],
        "paper": [r["_text"] or fmt_value(r["paper"], r["_unit"], r["paper_std"]) for r in records],
        "Δ (ours − paper)": [fmt_value(r["delta"], "pp" if r["_unit"] == "%" else r["_unit"], signed=True)
                             for r in records],
    })
    return out.set_index(index_cols)
