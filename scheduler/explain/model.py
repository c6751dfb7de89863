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
class CycleView:
    """What the next scheduling cycle would do for the pod, step by step as ``schedule_pod``:
    take its nominated node or the batch's hint (OpportunisticBatching) if it fits, else search
    the node order from the scheduler's rotating start index until ``wanted`` feasible nodes are
    found (percentageOfNodesToScore) and score those, normalized over those only."""

    start_index: int  # where the search starts in the node order
    wanted: int  # numFeasibleNodesToFind for this pod's candidates
    hint: str = ""  # the node the batch would hint ("" none)
    taken: str = ""  # the nominated or hinted node the cycle takes without searching ("" none)
    scores: list[NodeScore] = field(default_factory=list)  # the nodes it would score, highest first
    top: list[str] = field(default_factory=list)  # those sharing the highest total

    def to_dict(self) -> dict[str, Any]:
        return {
            "startIndex": self.start_index,
            "numFeasibleNodesToFind": self.wanted,
            "batchHint": self.hint,
            "takenWithoutScoring": self.taken,
            "scores": [_score_dict(s) for s in self.scores],
            "top": self.top,
        }


def _score_dict(score: NodeScore) -> dict[str, Any]:
    return {"node": score.node, "plugins": score.plugins, "extenders": score.extenders, "total": score.total}


def _score_of(data: dict[str, Any]) -> NodeScore:
    return NodeScore(data["node"], dict(data["plugins"]), data["extenders"], data["total"])


def _cycle_of(data: dict[str, Any] | None) -> CycleView | None:
    if not data:
        return None
    return CycleView(
        int(data["startIndex"]),
        int(data["numFeasibleNodesToFind"]),
        str(data.get("batchHint", "")),
        str(data.get("takenWithoutScoring", "")),
        [_score_of(s) for s in data.get("scores") or ()],
        list(data.get("top") or ()),
    )


@dataclass(slots=True)
class Explanation:
    pod: str  # namespace/name
    profile: str
    num_nodes: int
    rejected: list[NodeVerdict] = field(default_factory=list)  # in the scheduler's node order
    score_plugins: list[str] = field(default_factory=list)
    # every feasible node, scored and normalized over all of them, highest total first
    scores: list[NodeScore] = field(default_factory=list)
    top: list[str] = field(default_factory=list)  # the nodes of ``scores`` sharing the highest total
    cycle: CycleView | None = None  # what the next cycle would do (None: pending, or not asked)
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
            "scores": [_score_dict(s) for s in self.scores],
            "cycle": None if self.cycle is None else self.cycle.to_dict(),
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
        scores=[_score_of(s) for s in data.get("scores") or ()],
        top=list(data.get("top") or ()),
        cycle=_cycle_of(data.get("cycle")),
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
