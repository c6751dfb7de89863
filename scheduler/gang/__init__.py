"""The Workload API's pod-group scheduling (GenericWorkload): group membership, the pod-group
cycle, placements and the pod-group metrics. See docs/gang.md."""
