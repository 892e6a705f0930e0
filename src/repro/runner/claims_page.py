"""The claims page body (``book/executed/claims_body.md``): every claim of every results JSON, with its verdict."""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from repro.runner.notebooks import notebook_title

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|$#])")
VERDICT = {True: "✓ holds", False: "✗ does not hold", None: "○ not tested"}


def _md(x: Any) -> str:
    if x is None or x == "":
        return "—"
    s = str(x).replace("\n", " ")
    return _MD_SPECIAL.sub(r"\\\1", s)


def claims_markdown(profile: str, results: Mapping[str, Mapping[str, Any]], notebooks: Sequence[str]) -> str:
    """The claims table for one profile: every claim of every notebook's results JSON, with its verdict."""
    counts = {True: 0, False: 0, None: 0}
    for name in notebooks:
        for c in results.get(name, {}).get("claims", []):
            counts[c["holds"]] += 1
    total = sum(counts.values())
    out = [f"Profile **{profile}** — {total} claims: {counts[True]} hold, {counts[False]} do not hold, "
           f"{counts[None]} not tested yet.", ""]
    for name in notebooks:
        title = notebook_title(name)
        out += [f"## {_md(title)}", ""]
        res = results.get(name)
        if res is None:
            out += [f"Notebook `{name}` has no results for the `{profile}` profile in this build "
                    f"(run `repro book --profile {profile} --only {name}`).", ""]
            continue
        out += [f"From {{doc}}`executed/{name}` (`results/{profile}/{name}.json`).", "",
                "| id | claim | paper | ours | verdict | note |", "|---|---|---|---|---|---|"]
        for c in res["claims"]:
            out.append(f"| `{c['id']}` | {_md(c['text'])} | {_md(c['paper'])} | {_md(c['ours'])} | "
                       f"{VERDICT[c['holds']]} | {_md(c['note'])} |")
        out.append("")
    return "\n".join(out)

