"""pyscheduler: a secondary Kubernetes scheduler with kube-scheduler's semantics."""

__version__ = "0.1.0"
