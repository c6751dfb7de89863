"""Coscheduling: scheduler-plugins' gang scheduling over the PodGroup CRD (scheduling.x-k8s.io/v1alpha1).

The pods of a group (label ``scheduling.x-k8s.io/pod-group``) are placed all together or not
at all: they wait at Permit, keeping their nodes reserved, until ``minMember`` of them are
placed, and a member that fits nowhere releases the whole group. docs/gang.md says how to use it
and which scheduler-plugins release it follows.
"""

from scheduler.plugins.coscheduling.args import CoschedulingArgs
from scheduler.plugins.coscheduling.plugin import Coscheduling
from scheduler.plugins.coscheduling.podgroup import POD_GROUP_LABEL, PODGROUPS, PodGroup

__all__ = ["PODGROUPS", "POD_GROUP_LABEL", "Coscheduling", "CoschedulingArgs", "PodGroup"]
