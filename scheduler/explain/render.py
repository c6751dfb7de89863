"""An explanation as text for a terminal: a few headed sections, tables aligned in columns."""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.explain.model import Explanation, NodeScore


def table(rows: Sequence[Sequence[str]]) -> list[str]:
    """Left-aligned columns separated by two spaces; the first row is the header."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows
    ]


def _scores(e: Explanation) -> list[str]:
    """The scores a cycle would compute (normalized over the nodes it finds), then those over every
    feasible node; one table when the two are the same."""
    count = len(e.scores)
    cycle = e.cycle
    if cycle is None or not cycle.scores or len(cycle.scores) == count:
        if cycle is not None and cycle.taken:
            title = f"normalized over all of them (a cycle takes {cycle.taken} without scoring)"
        elif cycle is not None and cycle.scores:
            title = "normalized over all of them, as a cycle does (it finds them all)"
        else:
            title = "normalized over all of them"
        return ["", f"Feasible nodes ({count}), weighted scores {title}:", *_score_table(e, e.scores, e.top)]
    scored = len(cycle.scores)
    return [
        "",
        f"A cycle's scores: the {scored} feasible nodes its search finds from position {cycle.start_index} "
        f"of the node order (numFeasibleNodesToFind {cycle.wanted}), normalized over those:",
        *_score_table(e, cycle.scores, cycle.top),
        "",
        f"All feasible nodes ({count}), weighted scores normalized over all {count} (a cycle scores "
        f"only the {scored} above):",
        *_score_table(e, e.scores, e.top),
    ]


def _score_table(e: Explanation, rows: Sequence[NodeScore], top: Sequence[str]) -> list[str]:
    extenders = any(s.extenders for s in rows)
    header = ["NODE", *e.score_plugins, *(["Extenders"] if extenders else []), "TOTAL"]
    cells = [header]
    for score in rows:
        marker = " *" if score.node in top else ""
        plugins = [str(score.plugins[name]) for name in e.score_plugins]
        cells.append(
            [score.node, *plugins, *([str(score.extenders)] if extenders else []), f"{score.total}{marker}"]
        )
    lines = table(cells)
    if len(top) > 1:
        lines.append(f"(* the top set: {', '.join(top)})")
    return lines


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
    if e.cycle is not None and e.cycle.hint:
        taken = "taken" if e.cycle.taken == e.cycle.hint else "does not fit: not taken"
        lines.append(f"Batch hint (OpportunisticBatching): {e.cycle.hint} ({taken})")
    if e.scores:
        lines += _scores(e)
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
