"""The outcome of a simulation as a readable text report and as JSON (``-o json``)."""

from __future__ import annotations

from typing import Any

from scheduler.simulate.engine import Outcome, Usage
from scheduler.simulate.fit import Fit


def to_json(outcome: Outcome) -> dict[str, Any]:
    """The JSON form; the HTML report renders the same document."""
    doc: dict[str, Any] = {
        "placements": [
            {"pod": p.pod, "source": p.source, "node": p.node, "devices": list(p.devices)}
            for p in outcome.placements
        ],
        "pending": [
            {
                "pod": p.pod,
                "source": p.source,
                "reason": p.reason,
                "message": p.message,
                "suggestions": list(p.suggestions),
            }
            for p in outcome.pending
        ],
        "preempted": list(outcome.preempted),
        "alsoPlaced": [{"pod": p.pod, "node": p.node} for p in outcome.also_placed],
        "utilization": [
            {
                "node": name,
                "zone": outcome.zones.get(name, ""),
                "state": _state(outcome, name),
                "cpu": _pair(outcome.before.get(name), usage, "cpu"),
                "memory": _pair(outcome.before.get(name), usage, "memory"),
            }
            for name, usage in sorted(_after(outcome).items())
        ],
        "zones": _zones(outcome),
        "warnings": list(outcome.warnings),
        "applied": list(outcome.applied),
        "ignored": list(outcome.ignored),
        "nodesAdded": list(outcome.nodes_added),
        "nodesRemoved": list(outcome.nodes_removed),
        "drained": list(outcome.drained),
        "evictions": [
            {"pod": e.pod, "node": e.node, "result": e.result, "message": e.message}
            for e in outcome.evictions
        ],
    }
    if outcome.fit is not None:
        doc["fit"] = _fit(outcome.fit)
    if outcome.capacity is not None:
        cap = outcome.capacity
        doc["capacity"] = {
            "pod": cap.pod,
            "fits": cap.fits,
            "perNode": dict(sorted(cap.per_node.items())),
            "stoppedBy": cap.stopped_by,
            "limitReached": cap.limit_reached,
        }
    return doc


def _after(outcome: Outcome) -> dict[str, Usage]:
    """Every node's usage after; a removed node holds nothing of its allocatable."""
    after = dict(outcome.after)
    for name in outcome.nodes_removed:
        if name in outcome.before:
            before = outcome.before[name]
            after[name] = Usage(0, before.cpu_allocatable, 0, before.memory_allocatable)
    return after


def _state(outcome: Outcome, name: str) -> str:
    if name in outcome.nodes_removed:
        return "removed"
    if name in outcome.nodes_added:
        return "added"
    return "drained" if name in outcome.drained else ""


def _zones(outcome: Outcome) -> list[dict[str, Any]]:
    """Per zone (nodes without the zone label: ""), the sums of the nodes' figures."""
    sums: dict[str, dict[str, Any]] = {}
    after = _after(outcome)
    for name in sorted(set(outcome.before) | set(after)):
        zone = outcome.zones.get(name, "")
        entry = sums.setdefault(zone, {"zone": zone, "nodesBefore": 0, "nodesAfter": 0})
        for resource in ("cpu", "memory"):
            pair = entry.setdefault(
                resource, {"allocatableBefore": 0, "allocatable": 0, "before": 0, "after": 0}
            )
            if name in outcome.before:
                b = _pair(outcome.before[name], outcome.before[name], resource)
                pair["allocatableBefore"] += b["allocatable"]
                pair["before"] += b["before"]
            if name in after and name not in outcome.nodes_removed:
                a = _pair(None, after[name], resource)
                pair["allocatable"] += a["allocatable"]
                pair["after"] += a["after"]
        entry["nodesBefore"] += name in outcome.before
        entry["nodesAfter"] += name in after and name not in outcome.nodes_removed
    return [sums[zone] for zone in sorted(sums)]


def _fit(fit: Fit) -> dict[str, Any]:
    return {
        "template": fit.template,
        "pods": fit.pods,
        "nodes": fit.nodes,
        "bound": fit.bound,
        "tried": {str(count): left for count, left in sorted(fit.tried.items())},
        "stillPending": fit.still_pending,
    }


def _pair(before: Usage | None, after: Usage, resource: str) -> dict[str, int]:
    """Requested before and after and allocatable; cpu in millicores, memory in bytes."""
    if resource == "cpu":
        return {
            "allocatable": after.cpu_allocatable,
            "before": before.cpu_requested if before else 0,
            "after": after.cpu_requested,
        }
    return {
        "allocatable": after.memory_allocatable,
        "before": before.memory_requested if before else 0,
        "after": after.memory_requested,
    }


def percent(used: int, total: int) -> str:
    return f"{100 * used / total:.0f}%" if total else "-"


def memory_text(value: int) -> str:
    for unit, size in (("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
        if value >= size:
            return f"{value / size:.1f}{unit}".replace(".0" + unit, unit)
    return str(value)


def to_text(outcome: Outcome, max_nodes: int = 50) -> str:
    """The what-ifs, placements, pending pods with their reasons, cpu per zone, and utilization
    of the nodes that changed (every node when the cluster has at most ``max_nodes``)."""
    lines: list[str] = []
    for warning in outcome.warnings:
        lines.append(f"warning: {warning}")
    for ignored in outcome.ignored:
        lines.append(f"ignored {ignored} (the scheduler does not read it)")
    for name in outcome.nodes_added:
        lines.append(f"added node {name}")
    for name in outcome.nodes_removed:
        lines.append(f"removed node {name}")
    for name in outcome.drained:
        lines.append(f"drained node {name}")
    for e in outcome.evictions:
        what = {
            "replaced": "evicted, its controller makes a new one",
            "gone": "evicted, nothing recreates it",
            "removed": "deleted with its node",
        }
        text = what.get(e.result, f"eviction blocked: {e.message}")
        lines.append(f"{e.pod} on {e.node}: {text}")
    if outcome.placements:
        width = max(len(p.pod) for p in outcome.placements)
        lines.append(f"{'POD':<{width}}  NODE                          FROM")
        for placed in outcome.placements:
            devices = f"  devices: {', '.join(placed.devices)}" if placed.devices else ""
            lines.append(f"{placed.pod:<{width}}  {placed.node:<28}  {placed.source}{devices}")
    total = len(outcome.placements) + len(outcome.pending)
    lines.append(f"{len(outcome.placements)} of {total} added pods scheduled, {len(outcome.pending)} pending")
    for p in outcome.pending:
        lines.append(f"pending {p.pod} ({p.source}): {p.reason}: {p.message}".rstrip(": "))
        lines += [f"  suggestion: {suggestion}" for suggestion in p.suggestions]
    for victim in outcome.preempted:
        lines.append(f"preempted {victim}")
    for taken in outcome.also_placed:
        lines.append(f"also scheduled {taken.pod} on {taken.node} (pending in the snapshot)")
    if outcome.fit is not None:
        lines.append(_fit_text(outcome.fit))
    cap = outcome.capacity
    if cap is not None:
        more = "at least " if cap.limit_reached else ""
        lines.append(f"capacity: {more}{cap.fits} more cop{'y' if cap.fits == 1 else 'ies'} of {cap.pod} fit")
        for node, count in sorted(cap.per_node.items()):
            lines.append(f"  {node}: {count}")
        if cap.stopped_by:
            lines.append(f"the next one: {cap.stopped_by}")
        elif cap.limit_reached:
            lines.append("stopped at --capacity-limit")
    after_all = _after(outcome)
    changed = [
        n for n, u in sorted(after_all.items()) if len(after_all) <= max_nodes or u != outcome.before.get(n)
    ]
    zones = _zones(outcome)
    if any(z["zone"] for z in zones):
        lines.append("")
        lines.append(f"{'ZONE':<20}  {'NODES':>7}  {'CPU BEFORE':>16}  {'CPU AFTER':>16}")
        for z in zones:
            cpu = z["cpu"]
            lines.append(
                f"{z['zone'] or '(none)':<20}  {z['nodesBefore']:>3}→{z['nodesAfter']:<3}  "
                f"{_cell(cpu['before'], cpu['allocatableBefore'], 'cpu'):>16}  "
                f"{_cell(cpu['after'], cpu['allocatable'], 'cpu'):>16}"
            )
    if changed:
        lines.append("")
        lines.append(
            f"{'NODE':<28}  {'CPU BEFORE':>16}  {'CPU AFTER':>16}  "
            f"{'MEMORY BEFORE':>18}  {'MEMORY AFTER':>18}"
        )
        for name in changed:
            after, before = after_all[name], outcome.before.get(name)
            b_cpu, b_mem = (before.cpu_requested, before.memory_requested) if before else (0, 0)
            lines.append(
                f"{name:<28}  {_cell(b_cpu, after.cpu_allocatable, 'cpu'):>16}  "
                f"{_cell(after.cpu_requested, after.cpu_allocatable, 'cpu'):>16}  "
                f"{_cell(b_mem, after.memory_allocatable, 'memory'):>18}  "
                f"{_cell(after.memory_requested, after.memory_allocatable, 'memory'):>18}"
            )
    return "\n".join(lines)


def _fit_text(fit: Fit) -> str:
    if not fit.pods:
        return f"fit: nothing is pending, no node like {fit.template} is needed"
    tried = ", ".join(f"{count}: {left} pending" for count, left in sorted(fit.tried.items()))
    if fit.nodes is None:
        why = f" ({fit.still_pending})" if fit.still_pending else ""
        return (
            f"fit: cannot fit the {fit.pods} pending pod(s) with up to {fit.bound} nodes like "
            f"{fit.template}{why}; tried {tried}"
        )
    return f"fit: {fit.nodes} node(s) like {fit.template} place all {fit.pods} pending pod(s); tried {tried}"


def _cell(used: int, total: int, resource: str) -> str:
    shown = f"{used}m" if resource == "cpu" else memory_text(used)
    return f"{shown} ({percent(used, total)})"
