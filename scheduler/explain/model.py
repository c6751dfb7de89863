"""What explain found for one pod: plain data, rendered as a table or as JSON."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class NodeVerdict:
    """One node the filters rejected: the plugin that said no first, and why."""

    node: str
    plugin: str
    code: str  # Unschedulable, UnschedulableAndUnresolvable, Pending
    reasons: list[str]


@dataclass(slots=True)
class NodeScore:
    """One feasible node: each Score plugin's weighted score, extenders' part, and the total."""

    node: str
    plugins: dict[str, int]
    extenders: int
    total: int


@dataclass(slots=True)
class Preemption:
    """PostFilter's dry run: the node preemption would nominate and its victims, or why none helps."""

    plugin: str
    node: str = ""
    victims: list[str] = field(default_factory=list)  # namespace/name, most important first
    pdb_violations: int = 0
    message: str = ""  # why preemption does not help (empty when it would)


@dataclass(slots=True)
class Explanation:
    pod: str  # namespace/name
    profile: str
    num_nodes: int
    rejected: list[NodeVerdict] = field(default_factory=list)  # in the scheduler's node order
    score_plugins: list[str] = field(default_factory=list)
    scores: list[NodeScore] = field(default_factory=list)  # highest total first
    top: list[str] = field(default_factory=list)  # the nodes sharing the highest total
    chosen: str = ""  # where the scheduler would put it now ("" when nowhere)
    why_chosen: str = ""
    message: str = ""  # the FailedScheduling message a cycle would write ("" when it fits)
    error: str = ""  # a plugin or extender error: the cycle would fail and retry
    preemption: Preemption | None = None
    suggestions: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def feasible(self) -> list[str]:
        return [score.node for score in self.scores]

    def reason_counts(self) -> dict[str, int]:
        """Nodes per reason, as the FailedScheduling message counts them."""
        counts: dict[str, int] = {}
        for verdict in self.rejected:
            for reason in verdict.reasons:
                counts[reason] = counts.get(reason, 0) + 1
        return counts

    def to_dict(self) -> dict[str, Any]:
        return {
            "pod": self.pod,
            "profile": self.profile,
            "nodes": self.num_nodes,
            "chosen": self.chosen,
            "whyChosen": self.why_chosen,
            "top": self.top,
            "message": self.message,
            "error": self.error,
            "rejected": [
                {"node": v.node, "plugin": v.plugin, "code": v.code, "reasons": v.reasons}
                for v in self.rejected
            ],
            "reasonCounts": self.reason_counts(),
            "scorePlugins": self.score_plugins,
            "scores": [
                {"node": s.node, "plugins": s.plugins, "extenders": s.extenders, "total": s.total}
                for s in self.scores
            ],
            "postFilter": None
            if self.preemption is None
            else {
                "plugin": self.preemption.plugin,
                "node": self.preemption.node,
                "victims": self.preemption.victims,
                "pdbViolations": self.preemption.pdb_violations,
                "message": self.preemption.message,
            },
            "suggestions": self.suggestions,
            "notes": self.notes,
        }


def explanation_from_dict(data: dict[str, Any]) -> Explanation:
    """The inverse of ``Explanation.to_dict`` (what ``--server`` receives)."""
    post = data.get("postFilter")
    return Explanation(
        pod=str(data.get("pod", "")),
        profile=str(data.get("profile", "")),
        num_nodes=int(data.get("nodes", 0)),
        rejected=[
            NodeVerdict(v["node"], v["plugin"], v["code"], list(v["reasons"]))
            for v in data.get("rejected") or ()
        ],
        score_plugins=list(data.get("scorePlugins") or ()),
        scores=[
            NodeScore(s["node"], dict(s["plugins"]), s["extenders"], s["total"])
            for s in data.get("scores") or ()
        ],
        top=list(data.get("top") or ()),
        chosen=str(data.get("chosen", "")),
        why_chosen=str(data.get("whyChosen", "")),
        message=str(data.get("message", "")),
        error=str(data.get("error", "")),
        preemption=None
        if not post
        else Preemption(
            post["plugin"], post["node"], list(post["victims"]), post["pdbViolations"], post["message"]
        ),
        suggestions=list(data.get("suggestions") or ()),
        notes=list(data.get("notes") or ()),
    )
