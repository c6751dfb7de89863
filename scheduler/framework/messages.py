"""The FailedScheduling message, worded exactly as kube-scheduler words it.

Shared by the scheduling cycle and by PostFilter plugins (preemption reports its own
``0/N nodes are available: ...`` sentence the same way).
"""

from __future__ import annotations

from collections import Counter

from scheduler.framework.interface import Diagnosis


def fit_error_message(num_all_nodes: int, diagnosis: Diagnosis) -> str:
    """``0/N nodes are available: <count> <reason>, ... <postfilter>.`` exactly as upstream words it."""
    message = f"0/{num_all_nodes} nodes are available:"
    if diagnosis.pre_filter_msg:
        message += f" {diagnosis.pre_filter_msg}."
    else:
        counts = Counter(reason for status in diagnosis.node_to_status.values() for reason in status.reasons)
        absent = num_all_nodes - len(diagnosis.node_to_status)
        if absent > 0 and diagnosis.absent_nodes_status is not None:
            # nodes a PreFilter result excluded share one status
            for reason in diagnosis.absent_nodes_status.reasons:
                counts[reason] += absent
        histogram = sorted(f"{count} {reason}" for reason, count in counts.items())
        if histogram:
            message += f" {', '.join(histogram)}."
    if diagnosis.post_filter_msg:
        # PostFilter messages carry their own final period.
        message += f" {diagnosis.post_filter_msg}"
    return message
