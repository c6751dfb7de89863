"""Example out-of-tree plugins for pyscheduler (entry points in pyproject.toml):

- CostByLabel: Score, prefers the cheapest nodes by a label (spot before on-demand).
- MaintenanceWindow: Permit, holds pods while a ConfigMap says a maintenance window is open.
"""

from pyscheduler_example_plugins.cost import CostByLabel, CostByLabelArgs
from pyscheduler_example_plugins.maintenance import MaintenanceWindow, MaintenanceWindowArgs

__all__ = ["CostByLabel", "CostByLabelArgs", "MaintenanceWindow", "MaintenanceWindowArgs"]
