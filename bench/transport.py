"""The API client's own HTTP transport against aiohttp's client: CPU per request.

    python -m bench.transport [--requests 3000] [--runs 3]

The scheduler speaks HTTP/1.1 to the API server through ``scheduler.client.transport`` rather
than a general client; this keeps that choice measured. The local endpoint runs in its own
process (``pyscheduler sim-cluster --no-kubelet``), so only the client's CPU is counted: this
process's CPU time over ``--requests`` sequential GETs of one node (a ~1 KB JSON answer) on one
keep-alive connection, divided by the requests, for

- ``HttpPool`` (the transport the scheduler uses);
- aiohttp's ClientSession with ``trust_env=False`` (proxies worked out once, as the scheduler does);
- aiohttp's ClientSession with ``trust_env=True`` (what kubernetes_asyncio creates: the
  environment and ``~/.netrc`` are read for every request).

Each client is measured ``--runs`` times, interleaved; min and median are printed. Other load
on the machine adds to every figure alike (±20% on a shared 2-core machine). Figures are
printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable

import aiohttp

from scheduler.client.transport import Endpoint, HttpPool
from simcluster.access import ADMIN_TOKEN

PATH = "/api/v1/nodes/node-0000"
HEADERS = {"Authorization": f"Bearer {ADMIN_TOKEN}", "Accept": "application/json"}

Client = Callable[[str, int], Awaitable[float]]


async def own_transport(url: str, requests: int) -> float:
    """CPU seconds for ``requests`` GETs through HttpPool."""
    pool = HttpPool(Endpoint.from_url(url), max_connections=1)
    headers = list(HEADERS.items())
    try:
        await pool.request("GET", PATH, headers, None)  # the connection, outside the measurement
        started = time.process_time()
        for _ in range(requests):
            response = await pool.request("GET", PATH, headers, None)
            if response.status != 200:
                raise RuntimeError(f"GET {PATH}: {response.status}")
        return time.process_time() - started
    finally:
        await pool.close()


def aiohttp_client(trust_env: bool) -> Client:
    async def measure(url: str, requests: int) -> float:
        connector = aiohttp.TCPConnector(limit=1)
        async with aiohttp.ClientSession(connector=connector, trust_env=trust_env) as session:

            async def get() -> None:
                async with session.get(url + PATH, headers=HEADERS) as response:
                    await response.read()
                    if response.status != 200:
                        raise RuntimeError(f"GET {PATH}: {response.status}")

            await get()
            started = time.process_time()
            for _ in range(requests):
                await get()
            return time.process_time() - started

    return measure


CLIENTS: dict[str, Client] = {
    "own transport (HttpPool)": own_transport,
    "aiohttp, trust_env=False": aiohttp_client(False),
    "aiohttp, trust_env=True": aiohttp_client(True),
}


async def main(args: argparse.Namespace) -> None:
    sim = subprocess.Popen(
        [sys.executable, "-m", "scheduler", "sim-cluster", "--no-kubelet", "--nodes", "1"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert sim.stdout is not None
        url = sim.stdout.readline().split()[3]  # "sim-cluster listening on URL with N nodes"
        figures: dict[str, list[float]] = {name: [] for name in CLIENTS}
        for _ in range(args.runs):
            for name, client in CLIENTS.items():
                figures[name].append(await client(url, args.requests) / args.requests * 1e6)
        print(f"client CPU per GET ({args.requests} sequential requests, {args.runs} runs):")
        for name, values in figures.items():
            print(f"  {name:<26} min {min(values):5.0f} µs, median {statistics.median(values):5.0f} µs")
    finally:
        sim.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            sim.wait(10)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench.transport", description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--runs", type=int, default=3)
    asyncio.run(main(parser.parse_args()))
