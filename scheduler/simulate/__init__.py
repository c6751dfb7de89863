"""What the real scheduler would do with a cluster: the engine of `pyscheduler snapshot` and
`pyscheduler simulate` (their commands are in ``scheduler.cmd``).

`snapshot` reads a cluster's scheduling-relevant objects into a versioned JSON file;
the simulation loads one (or the live cluster) into the embedded local endpoint, sorts the
manifests to add (`manifests`: workloads expanded by `workloads` and `daemonsets`, the kinds the
scheduler reads applied, the rest ignored), applies the node what-ifs (`nodes`: drain, removal,
added nodes; `fit`: the fewest nodes that place what is pending), runs the real scheduler
against it (`engine`) and reports placements, pending reasons, evictions, utilization per node
and per zone and capacity as text, JSON (`report`) or a self-contained page (`html`).
"""
