"""The in-tree plugins, one module (or package) per plugin, named after upstream's folders."""

from scheduler.plugins.registry import in_tree_registry

__all__ = ["in_tree_registry"]
