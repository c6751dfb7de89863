from __future__ import annotations

from scheduler.config.args import ARGS_TYPES
from scheduler.framework import (
    BatchFilterPlugin,
    BatchScorePlugin,
    BindPlugin,
    EnqueueExtensions,
    FilterPlugin,
    PreEnqueuePlugin,
    QueueSortPlugin,
    ScorePlugin,
)
from scheduler.plugins import in_tree_registry, names
from scheduler.testing.builders import FakeHandle

HOT_FILTERS = {
    names.NODE_UNSCHEDULABLE,
    names.NODE_NAME,
    names.TAINT_TOLERATION,
    names.NODE_AFFINITY,
    names.NODE_RESOURCES_FIT,
    names.NODE_PORTS,
}
HOT_SCORERS = {
    names.TAINT_TOLERATION,
    names.NODE_AFFINITY,
    names.NODE_RESOURCES_FIT,
    names.NODE_RESOURCES_BALANCED_ALLOCATION,
    names.IMAGE_LOCALITY,
}


def build_all() -> dict:
    handle = FakeHandle()
    return {
        name: factory(ARGS_TYPES[name]() if name in ARGS_TYPES else None, handle)
        for name, factory in in_tree_registry().items()
    }


def test_every_plugin_is_registered_under_its_own_name() -> None:
    for name, plugin in build_all().items():
        assert plugin.name == name


def test_every_plugin_builds_from_default_args_and_from_none() -> None:
    handle = FakeHandle()
    for factory in in_tree_registry().values():
        factory(None, handle)


def test_hot_plugins_offer_both_the_per_node_and_the_batch_form() -> None:
    plugins = build_all()
    for name in HOT_FILTERS:
        assert isinstance(plugins[name], FilterPlugin) and isinstance(plugins[name], BatchFilterPlugin), name
    for name in HOT_SCORERS:
        assert isinstance(plugins[name], ScorePlugin) and isinstance(plugins[name], BatchScorePlugin), name


def test_extension_points_land_where_upstream_has_them() -> None:
    plugins = build_all()
    assert isinstance(plugins[names.PRIORITY_SORT], QueueSortPlugin)
    assert isinstance(plugins[names.SCHEDULING_GATES], PreEnqueuePlugin)
    assert isinstance(plugins[names.DEFAULT_BINDER], BindPlugin)
    for name in HOT_FILTERS | {names.SCHEDULING_GATES}:
        assert isinstance(plugins[name], EnqueueExtensions), name
        assert list(plugins[name].events_to_register()), name


def test_the_registry_is_a_fresh_mapping_each_time() -> None:
    first = in_tree_registry()
    first["Custom"] = object  # type: ignore[assignment]
    assert "Custom" not in in_tree_registry()
