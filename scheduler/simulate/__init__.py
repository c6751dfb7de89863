"""What the real scheduler would do with a cluster: the engine of `pyscheduler snapshot` and
`pyscheduler simulate` (their commands are in ``scheduler.cmd``).

`snapshot` reads a cluster's scheduling-relevant objects into a versioned JSON file;
the simulation loads one (or the live cluster) into the embedded local endpoint, adds workloads
(`workloads`), runs the real scheduler against it (`engine`) and reports placements, pending
reasons, utilization and capacity as text, JSON (`report`) or a self-contained page (`html`).
"""
