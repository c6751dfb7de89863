"""How many pod creates/s and bindings/s the simulated API server sustains while serving watchers.

Runs `pyscheduler sim-cluster` as its own process (5,000 nodes by default), opens 3 pod
watchers, creates 10,000 pods, then binds them all, and prints the rates. Figures are
printed, never asserted. Usage: `python -m bench.sim_writes [--nodes N] [--pods N]`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time

import aiohttp
import orjson


def _cpu_seconds(pid: int) -> float:
    """User+system CPU time of the server process, so figures stay meaningful on a shared machine."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return float("nan")


async def _watch(session: aiohttp.ClientSession, url: str, rv: str, counts: list[int], slot: int) -> None:
    params = {"watch": "true", "resourceVersion": rv, "allowWatchBookmarks": "true"}
    async with session.get(f"{url}/api/v1/namespaces/bench/pods", params=params, timeout=None) as resp:
        async for line in resp.content:
            if b'"BOOKMARK"' not in line[:20]:
                counts[slot] += 1


async def _run_all(
    session: aiohttp.ClientSession, requests: list[tuple[str, bytes]], concurrency: int
) -> float:
    queue = iter(requests)
    failures = 0

    async def worker() -> None:
        nonlocal failures
        for url, body in queue:
            async with session.post(url, data=body, headers={"Content-Type": "application/json"}) as resp:
                await resp.read()
                if resp.status >= 300:
                    failures += 1

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - start
    if failures:
        print(f"  warning: {failures} requests failed")
    return elapsed


def _pod(i: int) -> bytes:
    return orjson.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"pod-{i:05d}", "labels": {"app": f"app-{i % 50}"}},
            "spec": {
                "schedulerName": "pyscheduler",
                "containers": [
                    {
                        "name": "c",
                        "image": "nginx",
                        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                    }
                ],
            },
        }
    )


async def bench(url: str, nodes: int, pods: int, watchers: int, concurrency: int, server_pid: int) -> None:
    connector = aiohttp.TCPConnector(limit=concurrency + watchers + 4)
    async with aiohttp.ClientSession(connector=connector) as session:
        ns = orjson.dumps({"metadata": {"name": "bench"}})
        async with session.post(
            f"{url}/api/v1/namespaces", data=ns, headers={"Content-Type": "application/json"}
        ):
            pass
        async with session.get(f"{url}/api/v1/namespaces/bench/pods") as resp:
            rv = (await resp.json())["metadata"]["resourceVersion"]
        counts = [0] * watchers
        tasks = [asyncio.create_task(_watch(session, url, rv, counts, i)) for i in range(watchers)]
        base = f"{url}/api/v1/namespaces/bench/pods"
        creates = [(base, _pod(i)) for i in range(pods)]
        cpu = _cpu_seconds(server_pid)
        elapsed = await _run_all(session, creates, concurrency)
        cpu = _cpu_seconds(server_pid) - cpu
        print(
            f"  creates:  {pods} pods in {elapsed:.2f}s = {pods / elapsed:,.0f}/s "
            f"(server CPU {cpu:.2f}s = {pods / cpu:,.0f} per CPU-second)"
        )
        binds = [
            (
                f"{base}/pod-{i:05d}/binding",
                orjson.dumps(
                    {
                        "metadata": {"name": f"pod-{i:05d}"},
                        "target": {"kind": "Node", "name": f"node-{i % nodes:04d}"},
                    }
                ),
            )
            for i in range(pods)
        ]
        cpu = _cpu_seconds(server_pid)
        elapsed = await _run_all(session, binds, concurrency)
        cpu = _cpu_seconds(server_pid) - cpu
        print(
            f"  bindings: {pods} pods in {elapsed:.2f}s = {pods / elapsed:,.0f}/s "
            f"(server CPU {cpu:.2f}s = {pods / cpu:,.0f} per CPU-second)"
        )
        start = time.perf_counter()
        while min(counts) < 2 * pods and time.perf_counter() - start < 30:
            await asyncio.sleep(0.05)
        print(
            f"  watchers: {watchers} saw {counts} events (expected {2 * pods} each), "
            f"drained {time.perf_counter() - start:.2f}s after the last write"
        )
        start = time.perf_counter()
        async with session.get(f"{url}/api/v1/pods") as resp:
            body = await resp.read()
        print(f"  list:     {pods} pods ({len(body) / 1e6:.1f} MB) in {time.perf_counter() - start:.3f}s")
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--watchers", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--kubelet", action="store_true", help="also run the simulated kubelet (more writes)")
    args = parser.parse_args()
    command = [sys.executable, "-m", "scheduler", "sim-cluster", "--nodes", str(args.nodes)]
    if not args.kubelet:
        command.append("--no-kubelet")
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline() if server.stdout else ""
        if not line.startswith("sim-cluster listening on "):
            print(f"sim-cluster did not start: {line!r}", file=sys.stderr)
            return 1
        url = line.split()[3]
        print(
            f"sim-cluster at {url}: {args.nodes} nodes, {args.pods} pods, {args.watchers} watchers, "
            f"concurrency {args.concurrency}, kubelet {'on' if args.kubelet else 'off'}"
        )
        asyncio.run(bench(url, args.nodes, args.pods, args.watchers, args.concurrency, server.pid))
    finally:
        server.terminate()
        server.wait(timeout=10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
