"""Who may do what on the local endpoint: bearer tokens, users and RBAC-like rules, in one table.

The table answers authentication (a bearer token's user, for requests and TokenReview) and
authorization (for every request and for SelfSubjectAccessReview, SelfSubjectRulesReview and
SubjectAccessReview). It allows everything until the first grant; from then on a request is
allowed only by a grant, the members of `system:masters` (the endpoint's own kubeconfig user)
and upstream's default roles (discovery and health paths, self reviews) -- as on a cluster
whose authorizer is RBAC.

    table = AccessTable()
    table.add_token("alice-token", "alice", groups=["dev"])
    table.grant(users=["alice"], verbs=["get", "list"], resources=["pods"], namespaces=["default"])
    table.grant(groups=["monitoring"], verbs=["get"], non_resource_urls=["/metrics"])
    user = table.authenticate("alice-token")                     # UserInfo or None
    table.authorize(user.username, user.groups, Attributes("list", resource="pods",
                    namespace="default")).allowed                # True

The same table loads from YAML (`pyscheduler sim-cluster --access FILE`, `SimCluster(access=...)`)
and is replaced at run time through `/_sim/access` (GET shows it, PUT/POST replace it, DELETE
restores allow-all):

    tokens:
      - {token: alice-token, user: alice, uid: "1001", groups: [dev]}
    rules:
      - {users: [alice], verbs: [get, list, watch], apiGroups: [""], resources: [pods],
         namespaces: [default]}
      - {groups: [monitoring], verbs: [get], nonResourceURLs: [/metrics]}
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from simcluster.errors import ApiError

if TYPE_CHECKING:
    from multidict import CIMultiDictProxy

ANONYMOUS = "system:anonymous"
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
MASTERS = "system:masters"
# The identity of the kubeconfig `SimCluster.kubeconfig()` writes, like kubeadm's admin.conf.
ADMIN_TOKEN = "pyscheduler-sim-admin"
ADMIN_USER = "kubernetes-admin"


@dataclass(slots=True, frozen=True)
class UserInfo:
    username: str
    uid: str = ""
    groups: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"username": self.username}
        if self.uid:
            out["uid"] = self.uid
        if self.groups:
            out["groups"] = list(self.groups)
        return out


ANONYMOUS_USER = UserInfo(ANONYMOUS, groups=(UNAUTHENTICATED,))


@dataclass(slots=True, frozen=True)
class Attributes:
    """One request as an authorizer sees it (resource request unless `path` is set)."""

    verb: str
    api_group: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    namespace: str = ""
    path: str = ""

    @property
    def resource_request(self) -> bool:
        return not self.path


@dataclass(slots=True, frozen=True)
class Rule:
    """A PolicyRule with its scope: empty `namespaces` means every namespace and the cluster scope."""

    verbs: tuple[str, ...] = ("*",)
    api_groups: tuple[str, ...] = ("*",)
    resources: tuple[str, ...] = ("*",)
    resource_names: tuple[str, ...] = ()
    namespaces: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()

    def allows(self, a: Attributes) -> bool:
        if "*" not in self.verbs and a.verb not in self.verbs:
            return False
        if not a.resource_request:
            return any(
                url == "*" or url == a.path or (url.endswith("*") and a.path.startswith(url[:-1]))
                for url in self.non_resource_urls
            )
        if self.namespaces and a.namespace not in self.namespaces:
            return False
        if "*" not in self.api_groups and a.api_group not in self.api_groups:
            return False
        combined = f"{a.resource}/{a.subresource}" if a.subresource else a.resource
        if not any(
            r == "*" or r == combined or (a.subresource and r == f"*/{a.subresource}") for r in self.resources
        ):
            return False
        return not self.resource_names or a.name in self.resource_names


@dataclass(slots=True, frozen=True)
class Grant:
    users: tuple[str, ...]
    groups: tuple[str, ...]
    rule: Rule

    def applies(self, username: str, groups: tuple[str, ...]) -> bool:
        return username in self.users or any(g in self.groups for g in groups)


@dataclass(slots=True, frozen=True)
class Decision:
    allowed: bool
    reason: str = ""


_PUBLIC = ("/livez", "/readyz", "/healthz", "/version", "/version/")
_DISCOVERY = (*_PUBLIC, "/openapi", "/openapi/*", "/api", "/api/*", "/apis", "/apis/*")
_DEFAULT_GRANTS = (
    # upstream's system:discovery, system:public-info-viewer and system:basic-user bindings
    Grant(
        (),
        (AUTHENTICATED,),
        Rule(verbs=("get",), resources=(), non_resource_urls=_DISCOVERY),
    ),
    Grant(
        (),
        (AUTHENTICATED, UNAUTHENTICATED),
        Rule(verbs=("get",), resources=(), non_resource_urls=_PUBLIC),
    ),
    Grant(
        (),
        (AUTHENTICATED,),
        Rule(
            verbs=("create",),
            api_groups=("authorization.k8s.io",),
            resources=("selfsubjectaccessreviews", "selfsubjectrulesreviews"),
        ),
    ),
    Grant(
        (),
        (AUTHENTICATED,),
        Rule(verbs=("create",), api_groups=("authentication.k8s.io",), resources=("selfsubjectreviews",)),
    ),
)
_ALL = Rule(non_resource_urls=("*",))


def _strings(value: Any, name: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{name}: expected a list of strings, got {value!r}")
    return tuple(value)


@dataclass
class AccessTable:
    """Tokens and grants; see the module docstring. Mutated in place by the endpoint's admin API."""

    tokens: dict[str, UserInfo] = field(default_factory=dict)
    grants: list[Grant] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.tokens.setdefault(ADMIN_TOKEN, UserInfo(ADMIN_USER, groups=(MASTERS, AUTHENTICATED)))

    @property
    def allow_all(self) -> bool:
        return not self.grants

    # ---- building ------------------------------------------------------------------------

    def add_token(
        self, token: str, user: str, groups: list[str] | tuple[str, ...] = (), uid: str = ""
    ) -> UserInfo:
        """Make `token` authenticate as `user` (also in `system:authenticated`, as upstream adds)."""
        info = UserInfo(user, uid, tuple(dict.fromkeys([*groups, AUTHENTICATED])))
        self.tokens[token] = info
        return info

    def grant(
        self,
        *,
        users: list[str] | tuple[str, ...] = (),
        groups: list[str] | tuple[str, ...] = (),
        verbs: list[str] | tuple[str, ...] = ("*",),
        api_groups: list[str] | tuple[str, ...] = ("*",),
        resources: list[str] | tuple[str, ...] | None = None,
        resource_names: list[str] | tuple[str, ...] = (),
        namespaces: list[str] | tuple[str, ...] = (),
        non_resource_urls: list[str] | tuple[str, ...] = (),
    ) -> None:
        """Allow `verbs` to `users`/`groups`; the first grant ends allow-all.

        `resources` defaults to every resource unless the grant is for `non_resource_urls` only."""
        if not users and not groups:
            raise ValueError("a grant needs users or groups")
        if resources is None:
            resources = () if non_resource_urls else ("*",)
        rule = Rule(
            tuple(verbs), tuple(api_groups), tuple(resources), tuple(resource_names), tuple(namespaces),
            tuple(non_resource_urls),
        )  # fmt: skip
        self.grants.append(Grant(tuple(users), tuple(groups), rule))

    def reset(self) -> None:
        """Back to allow-all with only the admin token."""
        self.tokens.clear()
        self.grants.clear()
        self.__post_init__()

    # ---- answering -----------------------------------------------------------------------

    def authenticate(self, token: str) -> UserInfo | None:
        """The user a bearer token stands for, or None for a token the table does not know."""
        return self.tokens.get(token)

    def authorize(self, user: str, groups: list[str] | tuple[str, ...], attributes: Attributes) -> Decision:
        groups = tuple(groups)
        if self.allow_all:
            return Decision(True)
        if MASTERS in groups:
            return Decision(True, f'allowed by the access table: User "{user}" is in group "{MASTERS}"')
        for grant in (*self.grants, *_DEFAULT_GRANTS):
            if grant.applies(user, groups) and grant.rule.allows(attributes):
                return Decision(True, f'allowed by the access table to User "{user}"')
        return Decision(False)

    def rules_for(self, user: str, groups: list[str] | tuple[str, ...], namespace: str) -> list[Rule]:
        """The rules that apply to a user in a namespace (SelfSubjectRulesReview)."""
        groups = tuple(groups)
        if self.allow_all or MASTERS in groups:
            return [_ALL]
        return [
            g.rule
            for g in (*self.grants, *_DEFAULT_GRANTS)
            if g.applies(user, groups) and (not g.rule.namespaces or namespace in g.rule.namespaces)
        ]

    # ---- configuration (YAML file, /_sim/access) -------------------------------------------

    def load(self, config: dict[str, Any] | None) -> AccessTable:
        """Replace the table with `config` (the YAML form of the module docstring)."""
        config = config or {}
        if not isinstance(config, dict):
            raise ValueError("the access configuration must be a mapping with tokens and rules")
        unknown = set(config) - {"tokens", "rules"}
        if unknown:
            raise ValueError(f"unknown field(s) {', '.join(sorted(unknown))}")
        tokens, grants = dict(self.tokens), list(self.grants)
        self.reset()
        try:
            for i, entry in enumerate(config.get("tokens") or []):
                if not isinstance(entry, dict) or not entry.get("token") or not entry.get("user"):
                    raise ValueError(f"tokens[{i}]: token and user are required")
                self.add_token(
                    str(entry["token"]),
                    str(entry["user"]),
                    _strings(entry.get("groups"), f"tokens[{i}].groups"),
                    str(entry.get("uid", "")),
                )
            for i, rule in enumerate(config.get("rules") or []):
                if not isinstance(rule, dict):
                    raise ValueError(f"rules[{i}]: expected a mapping")
                known = {
                    "users", "groups", "verbs", "apiGroups", "resources", "resourceNames", "namespaces",
                    "nonResourceURLs",
                }  # fmt: skip
                if set(rule) - known:
                    raise ValueError(f"rules[{i}]: unknown field(s) {', '.join(sorted(set(rule) - known))}")
                resources = rule.get("resources")
                self.grant(
                    users=_strings(rule.get("users"), f"rules[{i}].users"),
                    groups=_strings(rule.get("groups"), f"rules[{i}].groups"),
                    verbs=_strings(rule.get("verbs"), f"rules[{i}].verbs") or ("*",),
                    api_groups=_strings(rule.get("apiGroups"), f"rules[{i}].apiGroups") or ("*",),
                    resources=None if resources is None else _strings(resources, f"rules[{i}].resources"),
                    resource_names=_strings(rule.get("resourceNames"), f"rules[{i}].resourceNames"),
                    namespaces=_strings(rule.get("namespaces"), f"rules[{i}].namespaces"),
                    non_resource_urls=_strings(rule.get("nonResourceURLs"), f"rules[{i}].nonResourceURLs"),
                )
        except ValueError:
            self.tokens, self.grants = tokens, grants
            raise
        return self

    @classmethod
    def from_file(cls, path: str | Path) -> AccessTable:
        try:
            config = yaml.safe_load(Path(path).read_text())
        except (OSError, yaml.YAMLError) as err:
            raise ValueError(f"cannot read {path}: {err}") from err
        return cls().load(config)

    def describe(self) -> dict[str, Any]:
        """The table in its configuration form (tokens included: it is a local test endpoint)."""
        return {
            "allowAll": self.allow_all,
            "tokens": [
                {"token": token, "user": info.username, "uid": info.uid, "groups": list(info.groups)}
                for token, info in self.tokens.items()
            ],
            "rules": [
                {
                    "users": list(g.users),
                    "groups": list(g.groups),
                    "verbs": list(g.rule.verbs),
                    "apiGroups": list(g.rule.api_groups),
                    "resources": list(g.rule.resources),
                    "resourceNames": list(g.rule.resource_names),
                    "namespaces": list(g.rule.namespaces),
                    "nonResourceURLs": list(g.rule.non_resource_urls),
                }
                for g in self.grants
            ],
        }


# ---- the HTTP side: who is asking, and the answer when they may not ----------------------


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def forbidden(user: str, a: Attributes) -> ApiError:
    """403 worded as upstream's authorization filter words it."""
    if not a.resource_request:
        return ApiError(403, "Forbidden", f'forbidden: User "{user}" cannot {a.verb} path "{a.path}"')
    resource = f"{a.resource}/{a.subresource}" if a.subresource else a.resource
    where = f'in the namespace "{a.namespace}"' if a.namespace else "at the cluster scope"
    why = f'User "{user}" cannot {a.verb} resource "{resource}" in API group "{a.api_group}" {where}'
    qualified = f"{a.resource}.{a.api_group}" if a.api_group else a.resource
    subject = f'{qualified} "{a.name}"' if a.name else qualified
    details: dict[str, Any] = {"kind": a.resource}
    if a.name:
        details["name"] = a.name
    if a.api_group:
        details["group"] = a.api_group
    return ApiError(403, "Forbidden", f"{subject} is forbidden: {why}", details=details)


def caller(table: AccessTable, headers: CIMultiDictProxy[str]) -> UserInfo:
    """The user a request acts as: its bearer token's (401 if unknown), anonymous without one,
    or the one it impersonates (`Impersonate-User`, `Impersonate-Group`, `Impersonate-Uid`)
    when the token's user may impersonate."""
    header = headers.get("Authorization", "")
    user = ANONYMOUS_USER
    if header:
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise unauthorized()
        found = table.authenticate(token.strip())
        if found is None:
            raise unauthorized()
        user = found
    as_user = headers.get("Impersonate-User")
    if not as_user:
        return user
    impersonate = headers.getall("Impersonate-Group", [])
    checks = [Attributes("impersonate", resource="users", name=as_user)]
    checks += [Attributes("impersonate", resource="groups", name=g) for g in impersonate]
    for attributes in checks:
        if not table.authorize(user.username, user.groups, attributes).allowed:
            raise forbidden(user.username, attributes)
    groups = [*impersonate, AUTHENTICATED] if as_user != ANONYMOUS else [*impersonate]
    return UserInfo(as_user, headers.get("Impersonate-Uid", ""), tuple(dict.fromkeys(groups)))
