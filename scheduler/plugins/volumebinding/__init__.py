"""The VolumeBinding plugin (see plugin.py); storage.py holds the PV/PVC helpers others share."""

from scheduler.plugins.volumebinding.plugin import VolumeBinding

__all__ = ["VolumeBinding"]
