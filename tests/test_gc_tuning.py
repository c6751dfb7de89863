"""The garbage-collector settings `pyscheduler run` applies once its informers have synced."""

from __future__ import annotations

import subprocess
import sys


def test_the_cached_objects_leave_the_collectors_sight_and_young_collections_run_less_often() -> None:
    # in a process of its own: the settings are process-wide
    code = (
        "import gc\n"
        "from scheduler.app import GC_THRESHOLDS, tune_garbage_collector\n"
        "cached = [dict(n=i) for i in range(1000)]\n"
        "assert gc.get_freeze_count() == 0\n"
        "tune_garbage_collector()\n"
        "print(gc.get_threshold() == GC_THRESHOLDS, gc.get_freeze_count() >= 1000)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "True"]


def test_before_the_lists_only_the_thresholds_change() -> None:
    code = (
        "import gc\n"
        "from scheduler.app import GC_THRESHOLDS, relax_garbage_collector\n"
        "relax_garbage_collector()\n"
        "print(gc.get_threshold() == GC_THRESHOLDS, gc.get_freeze_count() == 0, gc.isenabled())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "True", "True"]
