"""The access table: authentication, authorization, the review kinds, its YAML and admin forms."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from simcluster import SimCluster
from simcluster.access import ADMIN_TOKEN, AccessTable, Attributes
from tests.support.kubectl import Kubectl, uses_kubectl

ALICE = "alice-token"


def restricted() -> AccessTable:
    table = AccessTable()
    table.add_token(ALICE, "alice", groups=["dev"], uid="1001")
    table.add_token("prom-token", "prometheus", groups=["monitoring"])
    table.grant(
        users=["alice"],
        verbs=["get", "list", "watch"],
        api_groups=[""],
        resources=["pods"],
        namespaces=["default"],
    )
    table.grant(groups=["dev"], verbs=["create"], api_groups=["apps"], resources=["deployments", "*/scale"])
    table.grant(groups=["monitoring"], verbs=["get"], non_resource_urls=["/metrics", "/debug/*"])
    table.grant(
        users=["alice"], verbs=["get"], api_groups=[""], resources=["configmaps"], resource_names=["app"]
    )
    return table


def test_allow_all_until_the_first_grant() -> None:
    table = AccessTable()
    assert table.allow_all
    assert table.authorize("anyone", [], Attributes("delete", resource="nodes")).allowed
    table.grant(users=["alice"], verbs=["get"], resources=["pods"])
    assert not table.allow_all
    assert not table.authorize("anyone", [], Attributes("delete", resource="nodes")).allowed


@pytest.mark.parametrize(
    ("user", "groups", "attributes", "allowed"),
    [
        ("alice", ["dev"], Attributes("list", resource="pods", namespace="default"), True),
        ("alice", ["dev"], Attributes("list", resource="pods", namespace="kube-system"), False),
        ("alice", ["dev"], Attributes("delete", resource="pods", namespace="default", name="p"), False),
        ("alice", ["dev"], Attributes("get", resource="pods", subresource="log", namespace="default"), False),
        ("bob", ["dev"], Attributes("create", api_group="apps", resource="deployments", namespace="x"), True),
        (
            "bob",
            ["dev"],
            Attributes("update", api_group="apps", resource="replicasets", subresource="scale"),
            False,
        ),
        (
            "bob",
            ["dev"],
            Attributes("create", api_group="apps", resource="statefulsets", subresource="scale"),
            True,
        ),
        ("bob", ["dev"], Attributes("create", api_group="", resource="deployments"), False),
        ("prometheus", ["monitoring"], Attributes("get", path="/metrics"), True),
        ("prometheus", ["monitoring"], Attributes("get", path="/debug/pprof/heap"), True),
        ("prometheus", ["monitoring"], Attributes("post", path="/metrics"), False),
        ("bob", ["dev"], Attributes("get", path="/metrics"), False),
        ("alice", [], Attributes("get", resource="configmaps", namespace="default", name="app"), True),
        ("alice", [], Attributes("get", resource="configmaps", namespace="default", name="other"), False),
        ("root", ["system:masters"], Attributes("delete", resource="nodes", name="n"), True),
        # upstream's default roles: discovery for the authenticated, health for everyone
        ("bob", ["system:authenticated"], Attributes("get", path="/apis/apps/v1"), True),
        ("system:anonymous", ["system:unauthenticated"], Attributes("get", path="/apis"), False),
        ("system:anonymous", ["system:unauthenticated"], Attributes("get", path="/healthz"), True),
    ],
)
def test_rules_match_like_rbac(user: str, groups: list[str], attributes: Attributes, allowed: bool) -> None:
    assert restricted().authorize(user, groups, attributes).allowed is allowed


def test_tokens_authenticate_and_the_yaml_form_round_trips(tmp_path: Path) -> None:
    table = restricted()
    alice = table.authenticate(ALICE)
    assert alice is not None
    assert (alice.username, alice.uid, alice.groups) == ("alice", "1001", ("dev", "system:authenticated"))
    assert table.authenticate("nope") is None
    path = tmp_path / "access.yaml"
    path.write_text(yaml.safe_dump({k: v for k, v in table.describe().items() if k != "allowAll"}))
    loaded = AccessTable.from_file(path)
    assert loaded.describe() == table.describe()


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"rules": [{"verbs": ["get"]}]}, "a grant needs users or groups"),
        ({"tokens": [{"user": "x"}]}, "tokens[0]: token and user are required"),
        ({"rules": [{"users": ["a"], "verb": ["get"]}]}, "rules[0]: unknown field(s) verb"),
        ({"rules": [{"users": "a"}]}, "rules[0].users: expected a list of strings"),
        ({"users": []}, "unknown field(s) users"),
    ],
)
def test_bad_configurations_are_refused_and_leave_the_table_unchanged(config: dict, message: str) -> None:
    table = restricted()
    before = table.describe()
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        table.load(config)
    assert table.describe() == before


# ---- over HTTP ---------------------------------------------------------------------------------


@pytest.fixture
async def guarded() -> AsyncIterator[SimCluster]:
    async with SimCluster(nodes=1, access=restricted()) as sim:
        yield sim


async def call(
    sim: SimCluster, method: str, path: str, token: str | None = None, **kw: Any
) -> tuple[int, Any]:
    headers = {**kw.pop("headers", {}), **({"Authorization": f"Bearer {token}"} if token else {})}
    async with (
        aiohttp.ClientSession() as http,
        http.request(method, sim.url + path, headers=headers, **kw) as resp,
    ):
        return resp.status, await resp.json()


async def test_requests_are_authenticated_and_authorized(guarded: SimCluster) -> None:
    assert (await call(guarded, "GET", "/api/v1/namespaces/default/pods", ALICE))[0] == 200
    status, body = await call(guarded, "GET", "/api/v1/namespaces/default/pods", "wrong")
    assert (status, body["reason"], body["message"]) == (401, "Unauthorized", "Unauthorized")
    status, body = await call(guarded, "DELETE", "/api/v1/namespaces/default/pods/p", ALICE)
    assert (status, body["reason"]) == (403, "Forbidden")
    assert body["message"] == (
        'pods "p" is forbidden: User "alice" cannot delete resource "pods" in API group "" '
        'in the namespace "default"'
    )
    status, body = await call(guarded, "GET", "/apis/apps/v1/deployments")
    assert body["message"] == (
        'deployments.apps is forbidden: User "system:anonymous" cannot list resource "deployments" '
        'in API group "apps" at the cluster scope'
    )
    status, body = await call(guarded, "GET", "/apis", "prom-token")
    assert status == 200  # discovery: every authenticated user
    status, body = await call(guarded, "GET", "/apis")
    assert (status, body["message"]) == (403, 'forbidden: User "system:anonymous" cannot get path "/apis"')
    # the endpoint's own kubeconfig user is in system:masters
    assert (await call(guarded, "DELETE", "/api/v1/nodes/node-0000", ADMIN_TOKEN))[0] == 200


async def test_impersonation_needs_the_impersonate_verb(guarded: SimCluster) -> None:
    headers = {"Impersonate-User": "alice"}
    status, body = await call(
        guarded, "GET", "/api/v1/namespaces/default/pods", "prom-token", headers=headers
    )
    assert status == 403
    assert 'User "prometheus" cannot impersonate resource "users"' in body["message"]
    status, _ = await call(guarded, "GET", "/api/v1/namespaces/default/pods", ADMIN_TOKEN, headers=headers)
    assert status == 200


def review(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    group = "authentication.k8s.io" if kind == "TokenReview" else "authorization.k8s.io"
    return {"apiVersion": f"{group}/v1", "kind": kind, "spec": spec}


async def test_token_review_and_subject_access_review(guarded: SimCluster) -> None:
    path = "/apis/authentication.k8s.io/v1/tokenreviews"
    status, body = await call(
        guarded, "POST", path, ADMIN_TOKEN, json=review("TokenReview", {"token": ALICE})
    )
    assert status == 201
    assert body["status"] == {
        "authenticated": True,
        "user": {"username": "alice", "uid": "1001", "groups": ["dev", "system:authenticated"]},
    }
    _, body = await call(guarded, "POST", path, ADMIN_TOKEN, json=review("TokenReview", {"token": "nope"}))
    assert body["status"] == {"user": {}}

    path = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
    metrics = {"nonResourceAttributes": {"path": "/metrics", "verb": "get"}}
    for user, groups, allowed in (("prometheus", ["monitoring"], True), ("alice", ["dev"], False)):
        spec = {**metrics, "user": user, "groups": groups}
        status, body = await call(
            guarded, "POST", path, ADMIN_TOKEN, json=review("SubjectAccessReview", spec)
        )
        assert (status, body["status"]["allowed"]) == (201, allowed)
    spec = {
        "resourceAttributes": {"verb": "list", "resource": "pods", "namespace": "default"},
        "user": "alice",
    }
    _, body = await call(guarded, "POST", path, ADMIN_TOKEN, json=review("SubjectAccessReview", spec))
    assert body["status"]["allowed"] is True
    status, body = await call(guarded, "POST", path, ADMIN_TOKEN, json=review("SubjectAccessReview", metrics))
    assert (status, body["message"]) == (
        422,
        'SubjectAccessReview.authorization.k8s.io "" is invalid: spec.user: Invalid value: "": '
        "at least one of user or group must be specified",
    )


async def test_self_reviews_answer_for_the_caller(guarded: SimCluster) -> None:
    path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
    spec = {"resourceAttributes": {"verb": "watch", "resource": "pods", "namespace": "default"}}
    for token, allowed in ((ALICE, True), ("prom-token", False)):
        _, body = await call(guarded, "POST", path, token, json=review("SelfSubjectAccessReview", spec))
        assert body["status"]["allowed"] is allowed
    path = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"
    _, body = await call(
        guarded, "POST", path, ALICE, json=review("SelfSubjectRulesReview", {"namespace": "default"})
    )
    assert {"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["pods"]} in body["status"][
        "resourceRules"
    ]
    assert {
        "verbs": ["get"],
        "apiGroups": [""],
        "resources": ["configmaps"],
        "resourceNames": ["app"],
    } in body["status"]["resourceRules"]
    _, body = await call(
        guarded, "POST", path, ALICE, json=review("SelfSubjectRulesReview", {"namespace": "other"})
    )
    assert {"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["pods"]} not in body[
        "status"
    ]["resourceRules"]
    path = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    _, answer = await call(guarded, "POST", path, ALICE, json=body)
    assert answer["status"]["userInfo"]["username"] == "alice"


async def test_the_table_is_replaced_at_run_time(sim: SimCluster) -> None:
    assert (await call(sim, "GET", "/_sim/access"))[1]["allowAll"] is True
    config = {
        "tokens": [{"token": "t", "user": "u"}],
        "rules": [{"users": ["u"], "verbs": ["list"], "resources": ["nodes"]}],
    }
    status, body = await call(sim, "PUT", "/_sim/access", data=yaml.safe_dump(config))
    assert (status, body["allowAll"]) == (200, False)
    assert (await call(sim, "GET", "/api/v1/nodes", "t"))[0] == 200
    assert (await call(sim, "GET", "/api/v1/namespaces", "t"))[0] == 403
    status, body = await call(sim, "PUT", "/_sim/access", data="rules: [{verbs: [get]}]")
    assert (status, body["message"]) == (400, "bad access configuration: a grant needs users or groups")
    assert (await call(sim, "DELETE", "/_sim/access"))[1]["allowAll"] is True
    assert (await call(sim, "GET", "/api/v1/namespaces"))[0] == 200


# ---- kubectl auth can-i ------------------------------------------------------------------------


@pytest.fixture
async def kubectl(tmp_path: Path) -> AsyncIterator[Kubectl]:
    # kubectl sends no credentials over plain HTTP, so it is anonymous here and acts as others
    # by impersonation, which the table grants it
    table = restricted()
    table.grant(
        users=["system:anonymous"], verbs=["impersonate"], api_groups=[""], resources=["users", "groups"]
    )
    table.grant(
        groups=["system:unauthenticated"],
        verbs=["get"],
        non_resource_urls=["/api", "/api/*", "/apis", "/apis/*"],
    )
    async with SimCluster(nodes=1, access=table) as sim:
        yield Kubectl(sim, sim.write_kubeconfig(tmp_path / "kubeconfig"), tmp_path)


@uses_kubectl
async def test_kubectl_auth_can_i(kubectl: Kubectl) -> None:
    assert (await kubectl("auth", "can-i", "list", "pods", "--as", "alice")).strip() == "yes"
    denied = await kubectl.run("auth", "can-i", "delete", "pods", "--as", "alice", check=False)
    assert (denied.code, denied.out.strip()) == (1, "no")
    assert (
        await kubectl.run("auth", "can-i", "list", "pods", "-n", "kube-system", "--as", "alice", check=False)
    ).code == 1
    scale = ["auth", "can-i", "create", "deployments.apps/scale", "--as", "bob", "--as-group", "dev"]
    assert (await kubectl(*scale)).strip() == "yes"
    assert (
        await kubectl("auth", "can-i", "get", "/metrics", "--as", "p", "--as-group", "monitoring")
    ).strip() == "yes"

    listed = (await kubectl("auth", "can-i", "--list", "--as", "alice")).splitlines()
    assert listed[0].split() == ["Resources", "Non-Resource", "URLs", "Resource", "Names", "Verbs"]
    rows = {line.split()[0]: line.split()[1:] for line in listed[1:] if not line.startswith(" ")}
    assert rows["pods"] == ["[]", "[]", "[get", "list", "watch]"]
    assert rows["configmaps"] == ["[]", "[app]", "[get]"]
    assert "selfsubjectaccessreviews.authorization.k8s.io" in rows

    whoami = await kubectl("auth", "whoami", "--as", "alice", "--as-group", "dev")
    assert whoami.split() == [
        "ATTRIBUTE",
        "VALUE",
        "Username",
        "alice",
        "Groups",
        "[dev",
        "system:authenticated]",
    ]


@uses_kubectl
async def test_kubectl_auth_can_i_with_allow_all(tmp_path: Path) -> None:
    async with SimCluster(nodes=1) as sim:
        kubectl = Kubectl(sim, sim.write_kubeconfig(tmp_path / "kubeconfig"), tmp_path)
        assert (await kubectl("auth", "can-i", "delete", "nodes")).strip() == "yes"
        listed = (await kubectl("auth", "can-i", "--list")).splitlines()
        assert [line.split() for line in listed[1:]] == [["*.*", "[]", "[]", "[*]"], ["[*]", "[]", "[*]"]]
