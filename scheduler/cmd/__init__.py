"""The commands of `pyscheduler` (``scheduler.cli`` dispatches to them), one module each.

Each exposes ``add_arguments(parser)`` and ``main(args) -> int`` (the exit code) and holds the
command's flags and exit codes; the work is done below: `run` starts ``scheduler.app``'s
SchedulerApp, `explain`, `simulate` and `snapshot` drive the engines of ``scheduler.explain``
and ``scheduler.simulate``, `sim-cluster` and `demo` the local endpoint (``simcluster``). Nothing
below this package imports it.
"""
