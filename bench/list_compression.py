"""The scheduler's initial LIST with and without ``Accept-Encoding: gzip``.

    python -m bench.list_compression [--nodes 5000] [--pods 50000] [--runs 3]

The local endpoint runs in its own process (``pyscheduler sim-cluster --no-kubelet``) with
``--nodes`` nodes and ``--pods`` pods (created through the API first; 100m / 128Mi each, some
labels). It gzips answers over 128 KiB at level 1 for clients that ask, as the API server does.
Then the nodes and the pods are listed as the informers list them (pages of 500) through
``KubeClient``, once asking for gzip (the default) and once with the kubeconfig's
``disable-compression``, interleaved ``--runs`` times. Printed for each: the wall time of the
LIST, this process's CPU (decompression included), and the bytes that crossed the connection;
min and median over the runs. The endpoint's CPU (compression) is in the wall time only.

Loopback moves bytes for free, so the wall time here is the worst case for gzip; on a real
network every MB the LIST does not send is ~8 ms at 1 Gbit/s. The machine's other load shows in
the figures (±20% on a shared 2-core machine). Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import statistics
import tempfile
import time
from pathlib import Path

import aiohttp

from bench.e2e import NODE_TEMPLATE, create_pods
from bench.sim_process import sim_cluster_process
from scheduler.client import KubeClient, load_client_config
from scheduler.client.informer import PAGE_SIZE
from scheduler.client.kubeconfig.clientconfig import ClientConfig
from simcluster.access import ADMIN_TOKEN

PATHS = ("/api/v1/nodes", "/api/v1/pods")


@dataclasses.dataclass(slots=True)
class Listing:
    seconds: float
    cpu_seconds: float
    items: int


async def list_all(config: ClientConfig) -> Listing:
    """Every node and pod, page by page, as the informers' initial lists."""
    async with KubeClient(config, qps=0) as client:
        started, cpu = time.perf_counter(), time.process_time()
        items = 0
        for path in PATHS:
            token = ""
            while True:
                params = {"limit": str(PAGE_SIZE), **({"continue": token} if token else {})}
                response = await client.request("GET", path, params=params)
                body = response.body
                items += len(body["items"])
                token = body["metadata"].get("continue") or ""
                if not token:
                    break
        return Listing(time.perf_counter() - started, time.process_time() - cpu, items)


async def wire_bytes(url: str, gzip: bool) -> int:
    """The bytes of every page's body as sent (compressed or not)."""
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}", "Accept-Encoding": "gzip" if gzip else "identity"}
    total = 0
    async with aiohttp.ClientSession(auto_decompress=False, headers=headers) as session:
        for path in PATHS:
            token = ""
            while True:
                params = {"limit": str(PAGE_SIZE), **({"continue": token} if token else {})}
                async with session.get(url + path, params=params) as response:
                    raw = await response.read()
                    total += len(raw)
                async with session.get(
                    url + path, params=params, headers={"Accept-Encoding": "identity"}
                ) as plain:
                    token = (await plain.json())["metadata"].get("continue") or ""
                if not token:
                    break
    return total


async def main(args: argparse.Namespace) -> None:
    with (
        tempfile.TemporaryDirectory() as folder,
        sim_cluster_process(Path(folder), NODE_TEMPLATE.format(count=args.nodes)) as (url, kubeconfig),
    ):
        async with aiohttp.ClientSession() as session:
            namespace = {"metadata": {"name": "bench"}}
            async with session.post(f"{url}/api/v1/namespaces", json=namespace) as created:
                await created.read()
            await create_pods(session, url, 0, args.pods)
        gzipped = await load_client_config(str(kubeconfig))
        plain = dataclasses.replace(gzipped, disable_compression=True)
        figures: dict[str, list[Listing]] = {"gzip": [], "identity": []}
        for _ in range(args.runs):
            figures["gzip"].append(await list_all(gzipped))
            figures["identity"].append(await list_all(plain))
        sizes = {"gzip": await wire_bytes(url, True), "identity": await wire_bytes(url, False)}
    print(f"initial LIST of {args.nodes} nodes and {args.pods} pods, pages of {PAGE_SIZE}, {args.runs} runs:")
    for name, listings in figures.items():
        wall = [listing.seconds for listing in listings]
        cpu = [listing.cpu_seconds for listing in listings]
        print(
            f"  {name:<9} {sizes[name] / 1e6:6.1f} MB on the wire; wall min {min(wall):.2f} s, "
            f"median {statistics.median(wall):.2f} s; client CPU min {min(cpu):.2f} s, "
            f"median {statistics.median(cpu):.2f} s ({listings[0].items} objects)"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        prog="python -m bench.list_compression", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=3)
    asyncio.run(main(parser.parse_args()))
