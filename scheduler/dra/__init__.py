"""Structured-parameters Dynamic Resource Allocation, as kube-scheduler v1.36.2 allocates devices.

``model`` reads ResourceSlices into pools and devices, ``cel`` evaluates device selectors,
``allocator`` finds devices for a pod's claims on one node, ``claims`` resolves a pod's claims and
keeps the view of allocated devices (with the allocations assumed at Reserve). The plugin that
uses them is ``scheduler.plugins.dynamicresources``.
"""
