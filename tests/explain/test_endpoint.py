"""/debug/explain on the scheduler's port: guarded as /metrics is, answering from its cache;
`pyscheduler explain --server` asks it."""

from __future__ import annotations

from typing import Any

import aiohttp
from aiohttp import web

from simcluster.access import ADMIN_TOKEN
from tests.support.cluster import eventually, pod_manifest, scheduled_condition
from tests.support.explain import kubeconfig, run_explain

DEBUGGER_TOKEN = "debugger-token"
STRANGER_TOKEN = "stranger-token"


async def get(url: str, token: str | None = None) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with aiohttp.ClientSession() as http, http.get(url, headers=headers, ssl=False) as response:
        return response.status, await response.json()


async def test_debug_explain_needs_a_user_allowed_to_get_it(cluster, start_scheduler, capsys, tmp_path):
    cluster.access.add_token(DEBUGGER_TOKEN, "alice", groups=["debuggers"])
    cluster.access.add_token(STRANGER_TOKEN, "bob", groups=["dev"])
    cluster.access.grant(groups=["debuggers"], verbs=["get"], non_resource_urls=["/debug/explain"])
    app = await start_scheduler(cluster)
    await cluster.create("pods", pod_manifest("picky", cpu="2", nodeSelector={"disk": "ssd"}))
    condition = await eventually(lambda: scheduled_condition(cluster, "picky"))
    assert app.server is not None
    url = f"{app.server.url}/debug/explain?namespace=default&name=picky"

    assert (await get(url))[0] == 403  # anonymous
    status, body = await get(url, "no-such-token")
    assert (status, body["reason"]) == (401, "Unauthorized")
    status, body = await get(url, STRANGER_TOKEN)
    assert (status, body["reason"]) == (403, "Forbidden")
    assert 'cannot get path "/debug/explain"' in body["message"]

    status, body = await get(url, DEBUGGER_TOKEN)
    assert status == 200
    assert body["message"] == condition["message"]  # the running scheduler's own cache
    assert {row["node"] for row in body["rejected"]} == {
        "small-0000",
        "small-0001",
        "gpu-0000",
        "big-0000",
        "big-0001",
    }
    status, body = await get(url.replace("picky", "nope"), DEBUGGER_TOKEN)
    assert status == 404 and body["error"] == "pod default/nope not found (or it has finished)"

    # the command: the token from the kubeconfig (the sim's admin), or --token
    code, answer, _ = await run_explain(
        capsys,
        "picky",
        "--server",
        app.server.url,
        "--insecure-skip-tls-verify",
        "--kubeconfig",
        kubeconfig(cluster, tmp_path),
        "-o",
        "json",
    )
    assert code == 0 and answer["message"] == condition["message"]
    code, _, err = await run_explain(
        capsys, "picky", "--server", app.server.url, "--insecure-skip-tls-verify", "--token", STRANGER_TOKEN
    )
    assert code == 1 and "answered 403" in err
    code, _, err = await run_explain(capsys, "picky", "--server", app.server.url, "--token", ADMIN_TOKEN)
    assert code == 1 and "cannot reach" in err  # a self-signed certificate, not verified


async def test_an_answer_that_is_not_an_explanation_is_refused(capsys):
    async def answer(request: web.Request) -> web.Response:
        return web.Response(text=request.query["name"], content_type="application/json")

    app = web.Application()
    app.router.add_get("/debug/explain", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        for body in ("[1]", '{"nodes": 3}', "<html>proxy</html>"):
            code, _, err = await run_explain(
                capsys, body, "--server", f"http://127.0.0.1:{port}", "--token", "t"
            )
            assert code == 1 and "answered something that is not an explanation" in err, (body, err)
    finally:
        await runner.cleanup()
