"""Explain: for one pod, what every node's filters said, the scores of the feasible nodes, the
node a cycle would choose, what preemption would do, and the changes that would help.

Built on the scheduler's own cycle code (``scheduler.schedule_one``) and framework; used by
``pyscheduler explain``, ``/debug/explain`` and shadow mode.
"""

from scheduler.explain.evaluate import explain_pod
from scheduler.explain.lookup import ExplainRefused, pending_pod
from scheduler.explain.model import Explanation, NodeScore, NodeVerdict, Preemption
from scheduler.explain.render import render

__all__ = [
    "ExplainRefused",
    "Explanation",
    "NodeScore",
    "NodeVerdict",
    "Preemption",
    "explain_pod",
    "pending_pod",
    "render",
]
