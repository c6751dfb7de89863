"""Out-of-tree plugins: found through entry points and --plugin, typed args, watched kinds, and the
errors that stop start-up with exit code 2."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from pathlib import Path

import orjson
import pytest

from scheduler.cli import main
from scheduler.config import ConfigError, load_config
from scheduler.plugins.loading import PluginLoadError, declared_args, load_registry

PLUGIN = '''
from dataclasses import dataclass, field

from scheduler.framework import CycleState, NodeInfo, Pod


@dataclass
class LabelCostArgs:
    label: str = "lifecycle"
    cost_by_value: dict[str, int] = field(default_factory=lambda: {"spot": 10, "on-demand": 100})

    def validate(self) -> list[str]:
        return [f"costByValue.{k}: must be between 0 and 100" for k, v in self.cost_by_value.items()
                if not 0 <= v <= 100]


class LabelCost:
    """Prefers cheap nodes: 100 - the cost of the node's label value."""

    name = "LabelCost"
    args_type = LabelCostArgs
    watches = ("v1/configmaps",)

    def __init__(self, args: LabelCostArgs, handle) -> None:
        self.args = args
        self.handle = handle

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        value = node_info.node.labels.get(self.args.label, "")
        return 100 - self.args.cost_by_value.get(value, 100)


class Broken:
    name = "Broken"

    def __init__(self, args, handle) -> None:
        raise ValueError("needs a token")

    def score(self, state, pod, node_info) -> int:
        return 0
'''


@pytest.fixture
def plugin_file(tmp_path: Path) -> Path:
    path = tmp_path / "label_cost.py"
    path.write_text(PLUGIN)
    return path


def config(tmp_path: Path, extra: str = "", plugin: str = "LabelCost") -> str:
    path = tmp_path / "config.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            apiVersion: kubescheduler.config.k8s.io/v1
            kind: KubeSchedulerConfiguration
            profiles:
              - schedulerName: pyscheduler
                plugins:
                  multiPoint:
                    enabled: [{{name: {plugin}, weight: 2}}]
            """
        )
        + textwrap.indent(textwrap.dedent(extra), "    ")
    )
    return str(path)


def test_a_plugin_from_a_file_is_registered_with_its_args_type(plugin_file: Path) -> None:
    sources = load_registry([f"{plugin_file}:LabelCost"], entry_points=False)
    source = sources["LabelCost"]
    assert source.origin == f"--plugin {plugin_file}:LabelCost"
    assert source.watches == ("v1/configmaps",)
    assert declared_args(sources)["LabelCost"].__name__ == "LabelCostArgs"


def test_typed_args_are_decoded_defaulted_and_shown_in_configz(plugin_file: Path, tmp_path: Path) -> None:
    sources = load_registry([f"{plugin_file}:LabelCost"], entry_points=False)
    extra = """\
        pluginConfig:
          - name: LabelCost
            args: {costByValue: {spot: 5}}
    """
    cfg = load_config(config(tmp_path, extra), declared_args(sources))
    args = cfg.profiles[0].plugin_config["LabelCost"]
    assert (args.label, args.cost_by_value) == ("lifecycle", {"spot": 5})
    wire = {entry["name"]: entry["args"] for entry in cfg.to_dict()["profiles"][0]["pluginConfig"]}
    assert wire["LabelCost"] == {"label": "lifecycle", "costByValue": {"spot": 5}}


def test_a_plugin_enabled_without_plugin_config_gets_its_defaults(plugin_file: Path, tmp_path: Path) -> None:
    sources = load_registry([f"{plugin_file}:LabelCost"], entry_points=False)
    cfg = load_config(config(tmp_path), declared_args(sources))
    assert cfg.profiles[0].plugin_config["LabelCost"].cost_by_value == {"spot": 10, "on-demand": 100}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ("{colour: red}", "profiles[0].pluginConfig[0].args.colour: unknown field"),
        ("{costByValue: {spot: cheap}}", "profiles[0].pluginConfig[0].args.costByValue.spot: Invalid value"),
        ("{label: 7}", "profiles[0].pluginConfig[0].args.label: Invalid value: 7: must be a string"),
        ("{costByValue: {spot: 500}}", "profiles[0].pluginConfig[0].args.costByValue.spot: must be between"),
    ],
)
def test_bad_args_are_refused_naming_the_field(
    plugin_file: Path, tmp_path: Path, args: str, message: str
) -> None:
    sources = load_registry([f"{plugin_file}:LabelCost"], entry_points=False)
    extra = f"""\
        pluginConfig:
          - name: LabelCost
            args: {args}
    """
    with pytest.raises(ConfigError) as caught:
        load_config(config(tmp_path, extra), declared_args(sources))
    assert message in str(caught.value)


def test_pyscheduler_run_exits_2_naming_a_bad_args_field(plugin_file, tmp_path, capsys) -> None:
    extra = """\
        pluginConfig:
          - name: LabelCost
            args: {colour: red}
    """
    code = main(["run", "--config", config(tmp_path, extra), "--plugin", f"{plugin_file}:LabelCost"])
    assert code == 2
    assert "profiles[0].pluginConfig[0].args.colour: unknown field" in capsys.readouterr().err


def test_a_plugin_whose_constructor_raises_stops_start_up_naming_it(plugin_file, tmp_path, capsys) -> None:
    code = main(["run", "--config", config(tmp_path, plugin="Broken"), "--plugin", f"{plugin_file}:Broken"])
    assert code == 2
    err = capsys.readouterr().err
    assert "plugin 'Broken' could not be built from no pluginConfig entry: needs a token" in err
    assert "profiles[0] (pyscheduler)" in err


def test_two_plugins_of_one_name_are_refused_naming_both(tmp_path: Path) -> None:
    clash = tmp_path / "clash.py"
    clash.write_text("class Fit:\n    name = 'NodeResourcesFit'\n    def __init__(self, a, h): pass\n")
    with pytest.raises(
        PluginLoadError, match="two plugins are named 'NodeResourcesFit': in-tree and --plugin"
    ):
        load_registry([f"{clash}:Fit"], entry_points=False)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no_such_module:Thing", "No module named 'no_such_module'"),
        ("{file}:Missing", "has no attribute 'Missing'"),
        ("justamodule", "expected module:Class"),
    ],
)
def test_an_unusable_plugin_spec_says_why(plugin_file: Path, spec: str, message: str) -> None:
    with pytest.raises(PluginLoadError, match=message):
        load_registry([spec.format(file=plugin_file)], entry_points=False)


def installed_distribution(site: Path, plugin_file: Path) -> None:
    """What `pip install` leaves behind for a distribution declaring one plugin entry point."""
    (site / "labelcost").mkdir(parents=True)
    (site / "labelcost" / "__init__.py").write_text(plugin_file.read_text())
    info = site / "labelcost-1.2.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: labelcost\nVersion: 1.2.0\n")
    (info / "entry_points.txt").write_text("[pyscheduler.plugins]\nLabelCost = labelcost:LabelCost\n")


def test_an_installed_distributions_entry_point_is_found(tmp_path, plugin_file, monkeypatch) -> None:
    installed_distribution(tmp_path / "site", plugin_file)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    sources = load_registry()
    assert sources["LabelCost"].origin == "distribution labelcost 1.2.0 (labelcost:LabelCost)"


def test_pyscheduler_plugins_lists_an_installed_plugin_with_its_args(tmp_path, plugin_file) -> None:
    installed_distribution(tmp_path / "site", plugin_file)
    env_path = f"{tmp_path / 'site'}"
    proc = asyncio.run(_run(sys.executable, "-m", "scheduler", "plugins", "-o", "json", pythonpath=env_path))
    listed = {entry["name"]: entry for entry in orjson.loads(proc)}
    entry = listed["LabelCost"]
    assert entry["extensionPoints"] == ["score"]
    assert entry["watches"] == ["v1/configmaps"]
    assert {"name": "label", "type": "str", "default": "lifecycle"} in entry["args"]
    assert "NodeResourcesFit" in listed


async def _run(*argv: str, pythonpath: str) -> bytes:
    import os

    env = {**os.environ, "PYTHONPATH": pythonpath}
    proc = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE, env=env)
    out, _ = await proc.communicate()
    assert proc.returncode == 0
    return out


async def test_a_watched_kind_gets_an_informer_a_lister_and_gates_readiness(plugin_file, tmp_path) -> None:
    from scheduler.app import SchedulerApp
    from scheduler.plugins.loading import factories
    from scheduler.policy import watched_kinds
    from scheduler.serving.options import ServingOptions
    from simcluster import SimCluster

    sources = load_registry([f"{plugin_file}:LabelCost"], entry_points=False)
    cfg = load_config(config(tmp_path), declared_args(sources))
    cfg.leader_election.leader_elect = False
    assert watched_kinds(cfg, sources) == ["v1/configmaps"]
    async with SimCluster(nodes=1, kubelet=False) as sim:
        await sim.create(
            "configmaps", {"metadata": {"name": "window", "namespace": "default"}, "data": {"a": "b"}}
        )
        app = SchedulerApp(
            cfg,
            kubeconfig=str(sim.write_kubeconfig(tmp_path / "kc")),
            serving=ServingOptions("127.0.0.1", 0),
            registry=factories(sources),
            watches=watched_kinds(cfg, sources),
        )
        task = asyncio.create_task(app.run())
        try:
            assert await app.wait_ready(10)
            assert "v1/configmaps" in app.informers.synced()
            plugin = app.frameworks["pyscheduler"].plugins["LabelCost"]
            assert plugin.handle.lister("v1/configmaps").get("default/window")["data"] == {"a": "b"}
        finally:
            app.shutting_down.set()
            await asyncio.wait_for(task, 15)


async def test_a_watched_kind_the_cluster_does_not_serve_stops_start_up(tmp_path) -> None:
    from scheduler.app import SchedulerApp
    from scheduler.config import default_config
    from scheduler.serving.options import ServingOptions
    from simcluster import SimCluster

    cfg = default_config()
    cfg.leader_election.leader_elect = False
    async with SimCluster(nodes=1, kubelet=False) as sim:
        app = SchedulerApp(
            cfg,
            kubeconfig=str(sim.write_kubeconfig(tmp_path / "kc")),
            serving=ServingOptions("127.0.0.1", 0),
            watches=["example.com/v1/widgets"],
        )
        assert await asyncio.wait_for(app.run(), 15) == 2
