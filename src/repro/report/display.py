"""How results read on a page: one table style, one glue helper, one verdict box.

- :func:`style_table` formats a table for reading, the same way on every page: percentages with one decimal,
  counts as integers, sparsity as the papers print it (``0.01%``), differences with a sign, the 95 % CI in one
  column where there is one, ``—`` for a missing number.
- The ``fmt_*`` functions are the one number-formatting family (tables, claims page, paper-vs-ours, bench lines).
- :func:`glue` puts one formatted number into the page's narrative (myst-nb glue), so no number is typed by hand.
- :class:`ClaimView` is what :meth:`repro.report.results.Results.add_claim` returns: the claim dict, displayed in
  a notebook as a verdict box (the verdict, ours vs the paper, n, seeds and the CI); :func:`verdict_box` builds the
  box for any claim.
"""

from __future__ import annotations

import dataclasses
import html
import math
import re
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd

from repro.departures import Departure, departures_for
from repro.report.verdicts import op_symbol, seeds_text, verdict_of

#: Column names read as percentages (fractions ≤ 1 are shown ×100).
PERCENT_COLUMNS = re.compile(r"(?i)^(acc|accuracy|f1|acc_f1|ece|agreement|abs_acc|norm_acc|targ_acc|cont_acc|"
                             r"rel|recovery|overlap|iou)(_.*)?$|.*(%|_pct|_acc)$")
COUNT_COLUMNS = re.compile(r"(?i)^(n|n_.*|.*_n|params|parameters|size|count|trainable|steps|examples|.*_params|"
                           r".*_size|.*_count|seeds?|shots|k)$")
SIGNED_COLUMNS = re.compile(r"(?i)^(Δ|delta|diff|gap|gain).*|.*(_delta|_gap|_gain|−.*)$")
BOX_CLASS = {"holds": "tip", "does-not-hold": "danger", "inconclusive": "warning", "not-testable": "note"}


def plotting() -> tuple[Any, Any]:
    """``(matplotlib.pyplot, seaborn)``, imported on first use: the one place figures get them (seaborn takes about
    2 s to import, and only the pages that draw need it)."""
    import matplotlib.pyplot as plt  # heavy (with seaborn, ~2 s): figures only
    import seaborn as sns  # heavy: figures only

    return plt, sns


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def fmt_pct(v: Any, fraction: bool = False) -> str:
    """``92.3%``: one decimal; ``fraction`` multiplies by 100 first."""
    return "—" if _missing(v) else f"{100 * float(v) if fraction else float(v):.1f}%"


def fmt_count(v: Any) -> str:
    """``17,088``: an integer with a thousands separator."""
    return "—" if _missing(v) else f"{int(round(float(v))):,}"


def fmt_sparsity(v: Any, missing: str = "—") -> str:
    """Sparsity as the papers print it: the percentage of parameters, ``0.01%`` (FT = ``100%``)."""
    return missing if _missing(v) else f"{float(v):g}%"


def fmt_signed(v: Any, digits: int = 1) -> str:
    """A difference with its sign, ``+1.2`` / ``−0.4``."""
    if _missing(v):
        return "—"
    text = f"{float(v):+.{digits}f}"
    return ("±" + text[1:]) if float(text) == 0 else text.replace("-", "−")  # no "−0.0"


def fmt_float(v: Any) -> str:
    """Three significant digits, no exponent for everyday magnitudes."""
    if _missing(v):
        return "—"
    x = float(v)
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    return f"{x:.{max(0, min(6, 2 - int(math.floor(math.log10(abs(x))))))}f}"


def fmt_value(x: float | None, unit: str, std: float | None = None, signed: bool = False) -> str:
    """A value with its unit and optional ± std: ``92.3%``, ``+1.2 pp``, ``0.0123 s``, ``0.57``."""
    if _missing(x):
        return "—"
    digits = 4 if unit == "s" else (2 if abs(x) < 10 and unit not in ("%", "pp") else 1)
    s = f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"
    if not _missing(std):
        s += f" ± {std:.{digits}f}"
    if unit == "%":
        return s + ("%" if std is None else " %")
    return f"{s} {unit}" if unit else s


def fmt_index(x: Any) -> str:
    """An index value: counts as integers (``17,088``, not ``17088.0``), nothing for None."""
    if _missing(x):
        return ""
    if isinstance(x, float) and x.is_integer():
        return f"{int(x):,}"
    if isinstance(x, int) and not isinstance(x, bool):
        return f"{x:,}" if abs(x) >= 10000 else str(x)
    return str(x)


def fmt_short(x: Any) -> str:
    """A plain-text cell (the bench's lines): ``-`` for None, a float to 4 significant digits, anything else as is."""
    if x is None:
        return "-"
    return f"{x:.4g}" if isinstance(x, float) else str(x)


def _all_integral(s: pd.Series) -> bool:
    vals = [v for v in s if not _missing(v)]
    return bool(vals) and all(isinstance(v, (int, float)) and not isinstance(v, bool) and float(v).is_integer()
                              for v in vals)


def style_table(data: pd.DataFrame | Sequence[Mapping[str, Any]], *, percent: Iterable[str] = (),
                counts: Iterable[str] = (), signed: Iterable[str] = (), fractions: bool | None = None,
                index: Sequence[str] | None = None) -> pd.DataFrame:
    """The table as strings for reading (see the module docstring); pass column names to override the guesses.

    A percentage column whose values are all ≤ 1 is read as fractions unless ``fractions=False``.  Columns
    ``ci_low`` and ``ci_high`` become one ``95% CI`` column.  ``index`` names columns to keep as the index.
    """
    df = pd.DataFrame(data).copy() if not isinstance(data, pd.DataFrame) else data.copy()
    if df.index.nlevels > 1 or df.index.name is not None:
        df = df.reset_index()
    percent, counts, signed = set(percent), set(counts), set(signed)
    out = pd.DataFrame(index=df.index)
    ci = {"ci_low", "ci_high"} <= set(df.columns)
    for col in df.columns:
        if col in ("ci_low", "ci_high"):
            continue
        s = df[col]
        name = str(col)
        numeric = pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)
        if pd.api.types.is_bool_dtype(s) or (not numeric and not all(
                _missing(v) or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in s)):
            out[col] = ["—" if _missing(v) else str(v) for v in s]
            continue
        if name == "sparsity":
            out[col] = [fmt_sparsity(v) for v in s]
        elif name in signed or (name not in percent and name not in counts and SIGNED_COLUMNS.match(name)):
            out[col] = [fmt_signed(v) for v in s]
        elif name in percent or (name not in counts and PERCENT_COLUMNS.match(name)):
            frac = fractions if fractions is not None else all(abs(float(v)) <= 1.0 for v in s if not _missing(v))
            out[col] = [fmt_pct(v, fraction=frac) for v in s]
        elif name in counts or COUNT_COLUMNS.match(name) or _all_integral(s):
            out[col] = [fmt_count(v) for v in s]
        else:
            out[col] = [fmt_float(v) for v in s]
    if ci:
        out["95% CI"] = [("—" if _missing(lo) or _missing(hi) else f"[{fmt_float(lo)}, {fmt_float(hi)}]")
                         for lo, hi in zip(df["ci_low"], df["ci_high"])]
    if index:
        out = out.set_index(list(index))
    else:
        out = out.reset_index(drop=True)
    return out


def glue(name: str, value: Any, kind: str = "float") -> str:
    """Format ``value`` (``kind``: pct, fraction (shown as %), count, sparsity, signed, float, text) and glue it
    under ``name`` for ``{glue:text}`\\`name\\``` in the narrative; returns the text."""
    fmt = {"pct": fmt_pct, "fraction": lambda v: fmt_pct(v, fraction=True), "count": fmt_count,
           "sparsity": fmt_sparsity, "signed": fmt_signed, "float": fmt_float, "text": str}
    if kind not in fmt:
        raise ValueError(f"glue kind {kind!r} unknown; use one of {sorted(fmt)}")
    text = fmt[kind](value)
    _myst_glue(name, text)
    return text


def _myst_glue(name: str, value: Any) -> None:
    """Glue ``value`` under ``name`` for the page (myst-nb); nothing outside the book tooling."""
    try:
        from myst_nb import glue as _glue  # optional heavy dependency (the book tooling), only while a page runs
    except ImportError:
        return
    _glue(name, value, display=False)


def _evidence_line(ev: Mapping[str, Any] | None) -> str:
    if not ev:
        return "A point comparison without a confidence interval."
    return (f"n = {ev['n_examples']:,} test examples · {seeds_text(ev['seeds'])} · statistic "
            f"{fmt_float(ev['statistic'])}, 95% CI [{fmt_float(ev['ci_low'])}, {fmt_float(ev['ci_high'])}]; "
            f"the claim needs {op_symbol(ev)} {fmt_float(ev['margin'])} ({ev['test']}).")


def verdict_box(claim: Mapping[str, Any]) -> str:
    """The HTML verdict box (an admonition) of one claim."""
    verdict = verdict_of(claim)
    e = html.escape
    label = verdict.replace("-", " ")
    tag = " · beyond the paper" if claim.get("beyond_paper") else ""
    parts = [f'<div class="admonition {BOX_CLASS[verdict]} verdict-box">',
             f'<p class="admonition-title">Verdict: {e(label)} — {e(str(claim["id"]))}{e(tag)}</p>',
             f"<p>{e(str(claim['text']))}</p>",
             f"<p><strong>Ours:</strong> {e(str(claim.get('ours') or '—'))}<br>"
             f"<strong>Paper:</strong> {e(str(claim.get('paper') or '—'))}</p>",
             f"<p>{e(_evidence_line(claim.get('evidence')))}</p>"]
    if claim.get("note"):
        parts.append(f"<p><em>{e(str(claim['note']))}</em></p>")
    return "\n".join(parts + ["</div>"])


def describe(obj: Any) -> str:
    """A plan, a recipe or a dict as one readable line (``tasks SST-2, QNLI; n_eval 64``), never a raw repr."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        obj = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    if isinstance(obj, Mapping):
        return "; ".join(f"{k} {_value_text(v)}" for k, v in obj.items())
    return _value_text(obj)


def _value_text(v: Any) -> str:
    if isinstance(v, Mapping) or (dataclasses.is_dataclass(v) and not isinstance(v, type)):
        return f"({describe(v)})"
    if isinstance(v, (list, tuple, set, frozenset)):
        return ", ".join(_value_text(x) for x in v) if v else "none"
    if v is None:
        return "default"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


class Rows(list):
    """A table's or figure's rows as stored; a notebook shows nothing for them (its table shows them formatted)."""

    def _ipython_display_(self) -> None:
        return None


#: Where a notebook page links the departures page (``book/executed/<page>.html`` -> ``book/departures.html``)
DEPARTURES_PAGE = "../departures.html"


class DepartureNote:
    """The departures of the paper profile that touch one table, as a line of links to the departures page."""

    def __init__(self, table_id: str, records: Sequence[Departure]) -> None:
        self.table_id, self.records = table_id, list(records)

    def _repr_html_(self) -> str:
        links = "; ".join(f'<a href="{DEPARTURES_PAGE}#{d.key}">{html.escape(d.what)}</a>' for d in self.records)
        return (f'<p class="repro-departures"><b>Where the paper profile departs from the paper here</b> '
                f"({html.escape(self.table_id)}): {links}.</p>")

    def _repr_markdown_(self) -> str:
        return ("**Where the paper profile departs from the paper here** "
                f"({self.table_id}): " + "; ".join(f"{d.what} ({d.key})" for d in self.records) + ".")


def show(obj: Any) -> None:
    """Display ``obj`` in the running IPython kernel (a notebook cell's output); nothing outside one or for None."""
    if obj is None:
        return
    try:  # IPython is there wherever a notebook runs; plain scripts and tests have no kernel to show it in
        from IPython import display as ipython_display, get_ipython  # optional: only inside a notebook kernel
    except ImportError:
        return
    if get_ipython() is not None:
        ipython_display.display(obj)


def departure_note(table_id: str) -> DepartureNote | None:
    """The note for table ``table_id``: the records of :func:`repro.departures.departures_for` on its base id
    (``p1-table2-ece`` counts under ``p1-table2`` too), or None when no departure touches it."""
    base = "-".join(table_id.split("-")[:2])
    records = {d.key: d for tid in dict.fromkeys((table_id, base)) for d in departures_for(tid)}
    return DepartureNote(table_id, list(records.values())) if records else None


class ClaimView(dict):
    """A claim (a plain dict for code and JSON) that a notebook displays as its verdict box."""

    def _repr_html_(self) -> str:
        return verdict_box(self)


class VerdictBoxes:
    """Several claims' verdict boxes as one output (e.g. every claim of one table)."""

    def __init__(self, claims: Iterable[Mapping[str, Any]]) -> None:
        self.claims = list(claims)

    def _repr_html_(self) -> str:
        return "\n".join(verdict_box(c) for c in self.claims)

    def __repr__(self) -> str:
        return "\n".join(f"{c['id']}: {verdict_of(c)}" for c in self.claims)


BADGE_CLASS = {"holds": "success", "does-not-hold": "danger", "inconclusive": "warning", "not-testable": "secondary"}


def _badge(verdict: str) -> str:
    c = BADGE_CLASS[verdict]
    return (f'<span class="sd-sphinx-override sd-badge sd-bg-{c} sd-bg-text-{c}">'
            f'{html.escape(verdict.replace("-", " "))}</span>')


def _ci_short(ev: Mapping[str, Any] | None) -> str:
    if not ev:
        return "no CI"
    return (f"{fmt_float(ev['statistic'])} [{fmt_float(ev['ci_low'])}, {fmt_float(ev['ci_high'])}] · "
            f"n {ev['n_examples']:,} · {ev['seeds']} seed{'s' if ev['seeds'] != 1 else ''}")


class VerdictSummary:
    """A chapter's claims at a glance: one line each (badge, id, claim, ours vs paper, CI), for the page top."""

    def __init__(self, claims: Iterable[Mapping[str, Any]]) -> None:
        self.claims = list(claims)

    def _repr_html_(self) -> str:
        e = html.escape
        rows = []
        for c in self.claims:
            text = str(c["text"])
            short = text if len(text) <= 120 else text[:117].rsplit(" ", 1)[0] + " …"
            tag = " <em>(beyond the paper)</em>" if c.get("beyond_paper") else ""
            rows.append(f"<tr><td>{_badge(verdict_of(c))}</td><td><code>{e(str(c['id']))}</code>{tag}<br>"
                        f"{e(short)}</td><td>ours {e(str(c.get('ours') or '—'))[:90]}<br>paper "
                        f"{e(str(c.get('paper') or '—'))[:70]}</td><td>{e(_ci_short(c.get('evidence')))}</td></tr>")
        return ('<table class="verdict-summary"><thead><tr><th>verdict</th><th>claim</th><th>ours vs paper</th>'
                "<th>statistic [95% CI]</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>")

    def __repr__(self) -> str:
        return "\n".join(f"{c['id']}: {verdict_of(c)}" for c in self.claims)


def glue_verdicts(claims: Iterable[Mapping[str, Any]], key: str = "verdicts") -> VerdictSummary:
    """Glue the chapter's :class:`VerdictSummary` under ``key``: the page shows it at the top with
    ``{glue:} verdicts``, before any code, although the claims are decided at the end."""
    summary = VerdictSummary(claims)
    _myst_glue(key, summary)
    return summary


class Notice:
    """One plain sentence under a table (an empty notice shows nothing)."""

    def __init__(self, text: str = "") -> None:
        self.text = text

    def _repr_html_(self) -> str | None:
        return f'<p class="table-notice"><em>{html.escape(self.text)}</em></p>' if self.text else None

    def _repr_markdown_(self) -> str | None:
        return f"*{self.text}*" if self.text else None

    def __repr__(self) -> str:
        return self.text

    def __bool__(self) -> bool:
        return bool(self.text)


def graft_notice(metas: Iterable[Mapping[str, Any] | None], what: str = "grafts") -> Notice:
    """The sentence a table shows when some of its grafts are degenerate (the ``"degenerate"`` reasons that
    :meth:`repro.core.grafting.GraftResult.degenerate` records in a graft's metadata); empty when none is."""
    metas = [m or {} for m in metas]
    flat = [str(r) for m in metas for r in (m.get("degenerate") or [])]
    same = sum(1 for m in metas if any("scored the same" in str(r) for r in (m.get("degenerate") or [])))
    empty = sum(1 for m in metas if any("empty" in str(r) for r in (m.get("degenerate") or [])))
    if not flat:
        return Notice()
    parts = []
    if same:
        parts.append(f"in {same} of the {len(metas)} {what} here every graft step scored the same on the "
                     "train + dev examples, so the kept region was not chosen by the search (it is the first "
                     "step's region)")
    if empty:
        parts.append(f"{empty} of the {len(metas)} {what} selected no parameter at all")
    other = len(flat) - sum(1 for r in flat if "scored the same" in r or "empty" in r)
    if other:
        parts.append(f"{other} other graft notice{'s' if other != 1 else ''} were recorded")
    text = "; ".join(parts)
    return Notice(f"Note: {text}.")


def verdicts(claims: Iterable[Mapping[str, Any]], prefix: str = "") -> VerdictBoxes:
    """The verdict boxes of the claims whose id starts with ``prefix`` (e.g. ``res.claims, "p1-table2"``)."""
    return VerdictBoxes(c for c in claims if str(c["id"]).startswith(prefix))


__all__ = ["ClaimView", "Notice", "Rows", "VerdictBoxes", "VerdictSummary", "describe", "glue_verdicts", "graft_notice",
           "fmt_count", "fmt_float", "fmt_index", "fmt_pct", "fmt_short", "fmt_signed", "plotting",
           "fmt_sparsity", "fmt_value", "glue",
           "style_table", "verdict_box", "verdicts"]
