"""PodTopologySpread plugin (upstream's ``podtopologyspread``)."""

from scheduler.plugins.podtopologyspread.filtering import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
)
from scheduler.plugins.podtopologyspread.plugin import PodTopologySpread

__all__ = ["ERR_REASON_CONSTRAINTS_NOT_MATCH", "ERR_REASON_NODE_LABEL_NOT_MATCH", "PodTopologySpread"]
