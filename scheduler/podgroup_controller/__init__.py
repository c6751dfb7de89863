"""`pyscheduler podgroup-controller`: keeps the status of scheduler-plugins' PodGroups.

A kopf operator that watches PodGroups (scheduling.x-k8s.io/v1alpha1) and the pods labelled
``scheduling.x-k8s.io/pod-group``, and writes each group's phase, pod counts,
scheduleStartTime and occupiedBy as scheduler-plugins' PodGroup controller does (see
``status``). kopf only delivers the events; reads and status writes go through pyscheduler's
own API client and kubeconfig loader.
"""
