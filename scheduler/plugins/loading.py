"""Out-of-tree plugins: found through entry points or ``--plugin``, merged with the in-tree ones.

A distribution declares its plugins as entry points::

    [project.entry-points."pyscheduler.plugins"]
    CostByLabel = "mypkg.plugin:CostByLabel"

and ``pyscheduler run`` finds them once installed in the same environment. ``--plugin
module:Class`` (or ``path/to/file.py:Class``) adds one without packaging. A plugin is a class with
a ``name`` (the entry point's name must match it) and a constructor ``Class(args, handle)``; see
``scheduler.framework``. Two plugins of one name (in-tree, or from two sources) are an error
naming both.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import inspect
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scheduler.framework import PluginFactory
from scheduler.plugins.registry import in_tree_registry

ENTRY_POINT_GROUP = "pyscheduler.plugins"
IN_TREE = "in-tree"


class PluginLoadError(Exception):
    """An out-of-tree plugin that cannot be used; the message names it and where it came from."""


@dataclass(frozen=True, slots=True)
class PluginSource:
    name: str
    factory: PluginFactory
    origin: str  # "in-tree", "distribution NAME VERSION (module:Class)" or "--plugin SPEC"

    @property
    def args_type(self) -> type | None:
        declared = getattr(self.factory, "args_type", None)
        return declared if isinstance(declared, type) else None

    @property
    def watches(self) -> tuple[str, ...]:
        return tuple(getattr(self.factory, "watches", ()) or ())


def load_registry(plugin_specs: Iterable[str] = (), *, entry_points: bool = True) -> dict[str, PluginSource]:
    """Every available plugin by name: in-tree, then installed distributions, then ``--plugin``."""
    sources = {name: PluginSource(name, factory, IN_TREE) for name, factory in in_tree_registry().items()}
    found: list[PluginSource] = []
    if entry_points:
        found.extend(_from_entry_points())
    found.extend(_from_spec(spec) for spec in plugin_specs)
    for source in found:
        if source.name in sources:
            other = sources[source.name]
            raise PluginLoadError(
                f"two plugins are named {source.name!r}: {other.origin} and {source.origin}"
            )
        sources[source.name] = source
    return sources


def factories(sources: Mapping[str, PluginSource]) -> dict[str, PluginFactory]:
    return {name: source.factory for name, source in sources.items()}


def declared_args(sources: Mapping[str, PluginSource]) -> dict[str, type]:
    """The args dataclass of each plugin that declares one (for the config loader): the
    out-of-tree ones and in-tree ones such as Coscheduling (upstream's built-in plugins have
    their args types in scheduler.config instead)."""
    return {name: source.args_type for name, source in sources.items() if source.args_type is not None}


def _from_entry_points() -> list[PluginSource]:
    found = []
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        distribution = entry.dist
        origin = (
            f"distribution {distribution.name} {distribution.version} ({entry.value})"
            if distribution is not None
            else f"entry point {entry.value}"
        )
        try:
            factory = entry.load()
        except Exception as exc:  # a broken package must not look like a missing plugin
            raise PluginLoadError(f"plugin {entry.name!r} from {origin} cannot be imported: {exc}") from exc
        found.append(_checked(entry.name, factory, origin))
    return found


def _from_spec(spec: str) -> PluginSource:
    """``module:Class`` or ``path/to/file.py:Class``."""
    target, _, attribute = spec.rpartition(":")
    if not target or not attribute:
        raise PluginLoadError(f"--plugin {spec}: expected module:Class or path/to/file.py:Class")
    origin = f"--plugin {spec}"
    try:
        module = _import_file(target) if target.endswith(".py") else importlib.import_module(target)
        factory = getattr(module, attribute)
    except (ImportError, AttributeError, OSError, SyntaxError) as exc:
        raise PluginLoadError(f"{origin}: {exc}") from exc
    return _checked(getattr(factory, "name", attribute), factory, origin)


def _import_file(path: str) -> Any:
    file = Path(path)
    if not file.is_file():
        raise ImportError(f"no such file {path}")
    module_name = f"pyscheduler_plugin_{file.stem}"
    spec = importlib.util.spec_from_file_location(module_name, file)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def _checked(name: str, factory: Any, origin: str) -> PluginSource:
    if not inspect.isclass(factory) and not callable(factory):
        raise PluginLoadError(f"plugin {name!r} from {origin} is not a class")
    declared = getattr(factory, "name", None)
    if not isinstance(declared, str) or not declared:
        raise PluginLoadError(f"plugin {name!r} from {origin} has no `name` attribute")
    if declared != name:
        raise PluginLoadError(f"plugin {name!r} from {origin} names itself {declared!r}")
    args_type = getattr(factory, "args_type", None)
    if args_type is not None and not (
        isinstance(args_type, type) and hasattr(args_type, "__dataclass_fields__")
    ):
        raise PluginLoadError(f"plugin {name!r} from {origin}: args_type must be a dataclass")
    watches = getattr(factory, "watches", ())
    if not isinstance(watches, tuple | list) or not all(isinstance(w, str) for w in watches):
        raise PluginLoadError(
            f'plugin {name!r} from {origin}: watches must be a tuple of "group/version/plural"'
        )
    return PluginSource(name, factory, origin)
