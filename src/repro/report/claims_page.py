"""The book's Claims page (MyST markdown): a verdict summary per paper, what this build ran, and one compact row per claim.

:func:`claims_page_markdown` renders it from the notebooks' results JSON (:mod:`repro.report.results`):

- per paper, the count of each verdict (holds / does not hold / inconclusive / not testable); claims tagged
  ``beyond_paper`` are counted apart and listed in their own section;
- per paper, the same counts split by the data that decided them (:func:`data_of`): verdicts decided on real data
  (at least one deciding task is real), on generated data only, and claims no task decides (costs, counts);
- what was run: the profile and model, and per notebook the tasks, seeds, test-set sizes and run time;
- one row per claim, a sphinx-design dropdown whose title is the row (id linked to its section, one-line claim,
  verdict badge, ours vs paper, CI) and whose body holds the full claim text, the numbers, the note, the data of
  each deciding task (real / generated, source) and, for a claim pooled over tasks, the per-task verdicts.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from repro.data.provenance import TaskProvenance, provenance_tally
from repro.report.display import fmt_float
from repro.report.results import claim_verdict
from repro.report.verdicts import op_symbol, seeds_text

BADGE: dict[str, str] = {"holds": "{bdg-success}`holds`", "does-not-hold": "{bdg-danger}`does not hold`",
                         "inconclusive": "{bdg-warning}`inconclusive`", "not-testable": "{bdg-secondary}`not testable`"}
VERDICT_ORDER: tuple[str, ...] = ("holds", "does-not-hold", "inconclusive", "not-testable")
PAPERS: dict[str, str] = {"p1": "P1 · grafting (ICML 2023)", "p2": "P2 · TaLoS (ICLR 2025)"}
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|$#{}])")
_TASK_KEYS = re.compile(r"(^|_)(tasks?|sources|sequence|pairs)$")
_SIZE_KEYS = ("n_eval", "n_test", "n_test_ablation")


class ClaimsPageError(ValueError):
    """The claims of a build cannot be rendered (e.g. one id in two notebooks)."""


def md_escape(x: Any) -> str:
    """Text for inline MyST: one line, markdown specials escaped, ``—`` for nothing."""
    if x is None or x == "":
        return "—"
    return _MD_SPECIAL.sub(r"\\\1", str(x).replace("\n", " ").strip())


def one_line(text: str, width: int = 110) -> str:
    """The claim's first sentence, cut at a word boundary to ``width`` characters."""
    text = " ".join(str(text).split())
    first = text
    for m in re.finditer(r"\.(\s|$)", text):
        head = text[:m.start() + 1]
        if len(head) >= 25 and not re.search(r"(\b(Fig|Figs|Eq|Tab|e\.g|i\.e|vs|al)\.|\d\.)$", head):
            first = head
            break
    if len(first) <= width:
        return first
    return first[:width].rsplit(" ", 1)[0].rstrip(",;:") + " …"


def is_exact(evidence: Mapping[str, Any] | None) -> bool:
    """Evidence of a deterministic quantity (a region's size, an overlap, a timing ratio of one run): its ``test``
    starts with "exact" and it carries no interval (``ci_low == ci_high == statistic``)."""
    return bool(evidence) and str(evidence.get("test", "")).startswith("exact") and \
        evidence["ci_low"] == evidence["ci_high"] == evidence["statistic"]


def ci_text(evidence: Mapping[str, Any] | None) -> str:
    """``0.97 [0.95, 0.99] ≥ 0.95 · n 872 · 3 seeds`` (the statistic, its 95 % CI, the bound, the data size);
    ``0.0089 exact ≤ 0.01 · n 9 · 3 seeds`` for an exact quantity."""
    if not evidence:
        return "point rule, no CI"
    if is_exact(evidence):
        return (f"{fmt_float(evidence['statistic'])} exact {op_symbol(evidence)} {fmt_float(evidence['margin'])} · "
                f"n {evidence['n_examples']} · {seeds_text(evidence['seeds'])}")
    return (f"{fmt_float(evidence['statistic'])} [{fmt_float(evidence['ci_low'])}, "
            f"{fmt_float(evidence['ci_high'])}] {op_symbol(evidence)} {fmt_float(evidence['margin'])} · "
            f"n {evidence['n_examples']} · {seeds_text(evidence['seeds'])}")


def tally(claims: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Count of each verdict."""
    counts = {v: 0 for v in VERDICT_ORDER}
    for c in claims:
        counts[claim_verdict(c)] += 1
    return counts


DATA_KINDS: dict[str, str] = {"real": "real data", "generated": "generated data only", "none": "no task data"}


def data_of(claim: Mapping[str, Any]) -> str:
    """What decided a claim: ``"real"`` if any of its deciding tasks is real, ``"generated"`` if all are generated,
    ``"none"`` for a claim no task decides (``data`` empty or absent)."""
    data = claim.get("data") or []
    if not data:
        return "none"
    return provenance_tally([TaskProvenance(**{k: d[k] for k in ("task", "kind", "source", "title", "licence",
                                                                 "label_rule")}) for d in data])


def data_tally(claims: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """Verdict counts (:func:`tally`) per data kind of :data:`DATA_KINDS`."""
    claims = list(claims)
    return {k: tally(c for c in claims if data_of(c) == k) for k in DATA_KINDS}


def data_line(counts: Mapping[str, Mapping[str, int]]) -> str:
    """``real data: 5 hold, 2 do not hold · generated data only: … · no task data: …`` (zero counts left out)."""
    words = {"holds": "hold", "does-not-hold": "do not hold", "inconclusive": "inconclusive",
             "not-testable": "not testable"}
    parts = []
    for k, label in DATA_KINDS.items():
        c = counts[k]
        shown = ", ".join(f"{c[v]} {words[v]}" for v in VERDICT_ORDER if c[v]) or "none"
        parts.append(f"{label}: {shown}")
    return " · ".join(parts)


def paper_of(claim: Mapping[str, Any]) -> str:
    return str(claim["id"]).split("-", 1)[0]


def _plan_of(meta: Mapping[str, Any]) -> dict[str, Any]:
    """Tasks, seeds and test sizes of one notebook's run, from its ``meta['plan']`` or its parameters."""
    plan = dict(meta.get("plan") or {})
    params = dict(meta.get("params") or {})
    if "tasks" not in plan:
        tasks: list[str] = []
        for k, v in params.items():
            if not _TASK_KEYS.search(k) and k not in ("mask_task", "cost_task", "drift_task", "track_task"):
                continue
            for t in (v if isinstance(v, list) else [v]):
                for name in (t if isinstance(t, list) else [t]):
                    if isinstance(name, str) and name not in tasks:
                        tasks.append(name)
        plan["tasks"] = tasks
    if "seeds" not in plan:
        plan["seeds"] = params.get("seeds") or ([params["seed"]] if "seed" in params else [])
    if "n_test" not in plan:
        sizes = [params[k] for k in _SIZE_KEYS if isinstance(params.get(k), int)]
        plan["n_test"] = sizes[0] if sizes else None
    return plan


def _anchor(executed: Path | None, claim_id: str) -> str:
    """The HTML id of the section of ``executed`` (an executed .ipynb) about the claim's table or figure, or ''."""
    if executed is None or not executed.exists():
        return ""
    m = re.match(r"p[12]-(table|fig)(\d+)", claim_id)
    if not m:
        return ""
    word = r"Tables?" if m.group(1) == "table" else r"Fig(?:ure)?s?\.?"
    pattern = re.compile(rf"{word}\s*(?:\d+[a-z]?\s*(?:[,–-]|and)\s*)*{m.group(2)}[a-z]?\b")
    try:
        cells = json.loads(executed.read_text())["cells"]
    except (OSError, ValueError, KeyError):
        return ""
    for cell in cells:
        if cell.get("cell_type") != "markdown":
            continue
        for line in "".join(cell.get("source", "")).splitlines():
            h = re.match(r"^#{2,3}\s+(.*)$", line)
            if h and pattern.search(h.group(1)):
                return _make_id(h.group(1))
    return ""


def _make_id(title: str) -> str:
    """The id Sphinx gives a section with this title (docutils' ``make_id``)."""
    try:
        from docutils.nodes import make_id  # optional: comes with Sphinx
    except ImportError:  # pragma: no cover - docutils comes with Sphinx
        return ""
    plain = re.sub(r"[`*]", "", re.sub(r"\{[a-z:]+\}`([^`]*)`", r"\1", title))
    return make_id(plain)


def claim_row(claim: Mapping[str, Any], notebook: str, executed: Path | None = None) -> list[str]:
    """One claim as a dropdown whose title is the compact row."""
    verdict = claim_verdict(claim)
    anchor = _anchor(executed, claim["id"])
    href = f"executed/{notebook}.html" + (f"#{anchor}" if anchor else "")
    ours, paper = md_escape(claim.get("ours")), md_escape(claim.get("paper"))
    title = (f"{BADGE[verdict]} `{claim['id']}` {md_escape(one_line(claim['text']))} "
             f'<span class="claim-meta">ours {md_escape(one_line(str(claim.get("ours") or "—"), 70))} · paper '
             f'{md_escape(one_line(str(claim.get("paper") or "—"), 60))} · {_ci_label(claim.get("evidence"))}{md_escape(ci_text(claim.get("evidence")))}'
             f"</span>")
    body = [f"**Claim.** {md_escape(claim['text'])}", "",
            f"**Paper:** {paper}  ", f"**Ours:** {ours}  ",
            f"**Verdict:** {verdict.replace('-', ' ')} — {md_escape(_ci_long(claim.get('evidence')))}", ""]
    if claim.get("note"):
        body += [f"**Note.** {md_escape(claim['note'])}", ""]
    body += [f"**Data.** {md_escape(_data_text(claim))}", ""]
    per_task = (claim.get("evidence") or {}).get("per_task")
    if per_task:
        body += ["**Per task.** " + md_escape("; ".join(
            f"{t}: {v['verdict'].replace('-', ' ')}, {fmt_float(v['statistic'])} [{fmt_float(v['ci_low'])}, "
            f"{fmt_float(v['ci_high'])}]" for t, v in per_task.items())), ""]
    body += [f'<a href="{href}">Go to the section in {md_escape(notebook)}</a>', ""]
    return [f"::::{{dropdown}} {title}", ":class-container: claim-row", "", *body, "::::", ""]


def _data_text(claim: Mapping[str, Any]) -> str:
    data = claim.get("data")
    if data is None:
        return "not recorded"
    if not data:
        return "no task decides this claim (code or cost)"
    return "; ".join(f"{d['task']}: {d['kind']} ({d['source']})" for d in data)


def _ci_label(evidence: Mapping[str, Any] | None) -> str:
    return "CI " if evidence and not is_exact(evidence) else ""


def _ci_long(evidence: Mapping[str, Any] | None) -> str:
    if not evidence:
        return "a point comparison without a confidence interval"
    op = {">=": "≥", "<=": "≤"}.get(evidence.get("op", ">="), evidence.get("op", ">="))
    if is_exact(evidence):
        return (f"exact value {fmt_float(evidence['statistic'])} (no sampling error, so no CI), claim: value {op} "
                f"{fmt_float(evidence['margin'])}; n = {evidence['n_examples']}, {evidence['seeds']} seed(s); "
                f"{evidence['test']}")
    return (f"statistic {fmt_float(evidence['statistic'])}, 95 % CI [{fmt_float(evidence['ci_low'])}, "
            f"{fmt_float(evidence['ci_high'])}], claim: statistic {op} {fmt_float(evidence['margin'])}; "
            f"{evidence['n_examples']} examples, {evidence['seeds']} seed(s); {evidence['test']}")


def _summary_table(rows: Sequence[tuple[str, Mapping[str, int]]]) -> list[str]:
    out = ["| | holds | does not hold | inconclusive | not testable | total |", "|---|---:|---:|---:|---:|---:|"]
    for label, c in rows:
        out.append(f"| {label} | {c['holds']} | {c['does-not-hold']} | {c['inconclusive']} | {c['not-testable']} | "
                   f"{sum(c.values())} |")
    return out + [""]


def claims_page_markdown(profile: str, results: Mapping[str, Mapping[str, Any]], notebooks: Sequence[str], *,
                         model: str = "", titles: Mapping[str, str] | None = None,
                         seconds: Mapping[str, float] | None = None, built: str = "",
                         executed_dir: Path | None = None, matrix: str = "", families: str = "") -> str:
    """The Claims page body for one profile (included by ``book/claims.md``).

    ``matrix``: the claims across settings (:func:`repro.report.matrix.matrix_markdown`), placed after "What was
    run"; ``families``: which model family ran which pages (:func:`repro.report.matrix.families_line`), in the
    profile line."""
    titles, seconds = dict(titles or {}), dict(seconds or {})
    where: dict[str, str] = {}
    for name in notebooks:
        for c in results.get(name, {}).get("claims", []):
            if c["id"] in where:
                raise ClaimsPageError(f"claim id {c['id']!r} appears in {where[c['id']]} and {name}; claim ids must "
                                      f"be unique across the book (give one of them its own '-slug')")
            where[c["id"]] = name
    claims = [(name, c) for name in notebooks for c in results.get(name, {}).get("claims", [])]
    paper_claims = [(n, c) for n, c in claims if not c.get("beyond_paper")]
    beyond = [(n, c) for n, c in claims if c.get("beyond_paper")]

    out = ["## Does it reproduce?", ""]
    rows = [(PAPERS[p], tally(c for _, c in paper_claims if paper_of(c) == p)) for p in PAPERS]
    if beyond:
        rows.append(("beyond the papers (not counted above)", tally(c for _, c in beyond)))
    out += ["<!-- summary-start -->", ""] + _summary_table(rows)
    out += ["Which data decided each verdict (a verdict counts as real when one of its deciding tasks is real):", ""]
    out += _summary_table([(f"{PAPERS[p]} · {label}", data_tally(c for _, c in paper_claims if paper_of(c) == p)[k])
                           for p in PAPERS for k, label in DATA_KINDS.items()])
    out += [f"- **{PAPERS[p]}**: " + md_escape(data_line(data_tally(c for _, c in paper_claims if paper_of(c) == p)))
            for p in PAPERS] + [""]
    out += [f"Profile **{profile}**" + (f" ({md_escape(model)})" if model else "")
            + (f", built {md_escape(built)}" if built else "") + "." + (f" {md_escape(families)}" if families else "") + " A verdict reads the 95 % CI of the claim's "
            "statistic (paired bootstrap over test examples and seeds): **holds** when the claim's inequality holds "
            "at the CI's conservative end, **does not hold** when the opposite holds at the other end, "
            "**inconclusive** otherwise; **not testable** says why in its note. Open a row for the full claim.", "",
            "<!-- summary-end -->", ""]

    out += ["## What was run", "", "| chapter | tasks | seeds | test examples | run time |", "|---|---|---:|---:|---:|"]
    for name in notebooks:
        res = results.get(name)
        if res is None:
            out.append(f"| {md_escape(titles.get(name, name))} | not executed for this profile | | | |")
            continue
        plan = _plan_of(res.get("meta", {}))
        ns = sorted({c["evidence"]["n_examples"] for c in res["claims"] if c.get("evidence")
                     and not is_exact(c["evidence"])})  # exact claims count regions or masks, not test examples
        n_test = (f"{ns[0]}–{ns[-1]}" if len(ns) > 1 else str(ns[0])) if ns else (plan.get("n_test") or "—")
        secs = seconds.get(name)
        out.append(f"| {md_escape(titles.get(name, name))} | {md_escape(', '.join(map(str, plan['tasks'])) or '—')} "
                   f"| {len(plan['seeds']) or '—'} | {n_test} | {'—' if secs is None else f'{secs:.0f} s'} |")
    out.append("")

    if matrix:
        out += [matrix, ""]
        out += ["## Every claim of this build", "", f"The claims of the **{md_escape(profile)}** build, one per row; "
                "open a row for the full claim, the note, the data and a link to its section.", ""]

    for p, label in PAPERS.items():
        out += [f"## {label}", ""]
        for name in notebooks:
            mine = [c for n, c in paper_claims if n == name and paper_of(c) == p]
            if not mine:
                continue
            out += [f"### {md_escape(titles.get(name, name))}", ""]
            ex = executed_dir / f"{name}.ipynb" if executed_dir else None
            for c in mine:
                out += claim_row(c, name, ex)
    out += ["## Beyond the papers", ""]
    if not beyond:
        out += ["No claim of this build goes beyond the papers.", ""]
    for name, c in beyond:
        ex = executed_dir / f"{name}.ipynb" if executed_dir else None
        out += claim_row(c, name, ex)
    return "\n".join(out)


__all__ = ["BADGE", "ClaimsPageError", "DATA_KINDS", "PAPERS", "VERDICT_ORDER", "ci_text", "claim_row",
           "claims_page_markdown", "data_line", "data_of", "data_tally", "is_exact", "md_escape", "one_line", "tally"]
