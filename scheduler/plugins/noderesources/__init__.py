"""Resource plugins: NodeResourcesFit (filter + strategy scoring) and NodeResourcesBalancedAllocation."""

from scheduler.plugins.noderesources.balanced_allocation import BalancedAllocation
from scheduler.plugins.noderesources.fit import Fit

__all__ = ["BalancedAllocation", "Fit"]
