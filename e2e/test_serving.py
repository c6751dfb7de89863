"""Secure serving as an operator meets it: HTTPS, the probes open to anyone, /metrics only for a
caller allowed to `get` it (the chart's metrics-reader ClusterRole; that caller reading it is
test_scheduling's metrics test), 401 for a bad token."""

from __future__ import annotations

import json
import urllib.error
from collections.abc import Callable
from typing import Any

import pytest
from conftest import Scheduler
from kube import CommandFailed, Kubectl


@pytest.fixture
def secure(scheduler: Scheduler) -> Scheduler:
    if scheduler.plain_http:
        pytest.skip("the scheduler under test serves plain HTTP (--plain-http): no authorization")
    return scheduler


def refusal(call: Callable[[], str]) -> tuple[int, dict[str, Any]]:
    """The HTTP status and the Status body of a refused GET."""
    with pytest.raises(urllib.error.HTTPError) as refused:
        call()
    return refused.value.code, json.loads(refused.value.read())


def test_metrics_are_refused_to_anonymous_callers(secure: Scheduler) -> None:
    if not secure.installed:
        code, status = refusal(lambda: secure.get_anonymous("/metrics"))
        assert (code, status["reason"]) == (403, "Forbidden")
        return
    # Through the API server's pod proxy, which forwards no credentials: the scheduler's own 403.
    with pytest.raises(CommandFailed) as refused:
        secure.get_anonymous("/metrics")
    assert 'User "system:anonymous" cannot get path "/metrics"' in refused.value.output


def test_metrics_are_refused_to_a_token_without_the_metrics_reader_role(
    secure: Scheduler, kubectl: Kubectl
) -> None:
    if not secure.installed:
        pytest.skip("--scheduler=external: the suite knows no service account without the role")
    # The scheduler's own service account: it may create reviews, not read /metrics.
    token = kubectl("create", "token", secure.fullname, "-n", secure.namespace, "--duration=10m").strip()
    code, status = refusal(lambda: secure.get("/metrics", token=token))
    assert (code, status["reason"]) == (403, "Forbidden")
    user = f"system:serviceaccount:{secure.namespace}:{secure.fullname}"
    assert f'User "{user}" cannot get path "/metrics"' in status["message"]


def test_an_invalid_token_is_unauthorized_even_for_the_probes(secure: Scheduler) -> None:
    code, status = refusal(lambda: secure.get("/readyz", token="not-a-token"))
    assert (code, status["reason"]) == (401, "Unauthorized")
