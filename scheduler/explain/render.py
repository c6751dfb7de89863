"""An explanation as text for a terminal: a few headed sections, tables aligned in columns."""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.explain.model import Explanation


def table(rows: Sequence[Sequence[str]]) -> list[str]:
    """Left-aligned columns separated by two spaces; the first row is the header."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows
    ]


def render(explanation: Explanation) -> str:
    e = explanation
    lines = [f"Pod {e.pod} (profile {e.profile}), {e.num_nodes} node(s)"]
    if e.error:
        lines.append(f"Error: {e.error} (a cycle would fail and retry the pod)")
        return "\n".join(lines) + "\n"
    if e.chosen:
        lines.append(f"Would be placed on: {e.chosen} ({e.why_chosen})")
    else:
        lines.append("Would stay pending.")
        lines.append(f"FailedScheduling: {e.message}")
    if e.scores:
        lines += ["", f"Feasible nodes ({len(e.scores)}), weighted scores:"]
        extenders = any(s.extenders for s in e.scores)
        header = ["NODE", *e.score_plugins, *(["Extenders"] if extenders else []), "TOTAL"]
        rows = [header]
        for score in e.scores:
            marker = " *" if score.node in e.top else ""
            cells = [str(score.plugins[name]) for name in e.score_plugins]
            rows.append(
                [score.node, *cells, *([str(score.extenders)] if extenders else []), f"{score.total}{marker}"]
            )
        lines += table(rows)
        if len(e.top) > 1:
            lines.append(f"(* the top set: {', '.join(e.top)})")
    if e.rejected:
        lines += ["", f"Rejected nodes ({len(e.rejected)}):"]
        lines += table(
            [["NODE", "PLUGIN", "CODE", "REASON"]]
            + [[v.node, v.plugin or "-", v.code, ", ".join(v.reasons)] for v in e.rejected]
        )
    if e.preemption is not None:
        p = e.preemption
        lines.append("")
        if p.node:
            violations = f", {p.pdb_violations} PodDisruptionBudget violation(s)" if p.pdb_violations else ""
            victims = ", ".join(p.victims)
            lines.append(f"PostFilter ({p.plugin}): would nominate {p.node}, evicting {victims}{violations}")
        else:
            lines.append(f"PostFilter ({p.plugin}): no help: {p.message}")
    if e.suggestions:
        lines += ["", "Suggestions:", *(f"  - {s}" for s in e.suggestions)]
    if e.notes:
        lines += ["", "Notes:", *(f"  - {n}" for n in e.notes)]
    return "\n".join(lines) + "\n"
