"""The review kinds: POST-only objects answered from the access table, never stored.

TokenReview and SelfSubjectReview (authentication.k8s.io/v1) say who a token or the caller
is; SelfSubjectAccessReview, SubjectAccessReview, LocalSubjectAccessReview and
SelfSubjectRulesReview (authorization.k8s.io/v1) say what someone may do. Each answer is the
request object with `status` filled in, as upstream's REST handlers return it.
"""

from __future__ import annotations

from typing import Any

from simcluster.access import AccessTable, Attributes, Rule, UserInfo
from simcluster.errors import ApiError, bad_request
from simcluster.resources import ResourceType

Obj = dict[str, Any]


def _invalid(kind: str, group: str, field: str, message: str) -> ApiError:
    return ApiError(
        422,
        "Invalid",
        f'{kind}.{group} "" is invalid: {field}: {message}',
        details={"kind": kind, "group": group, "causes": [{"reason": "FieldValueInvalid", "field": field}]},
    )


def _attributes(kind: str, spec: Obj) -> Attributes:
    resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if (resource is None) == (non_resource is None):
        raise _invalid(
            kind,
            "authorization.k8s.io",
            "spec.resourceAttributes",
            'Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes '
            "must be specified",
        )
    if non_resource is not None:
        return Attributes(non_resource.get("verb", ""), path=non_resource.get("path", ""))
    assert resource is not None  # exactly one of the two is set (checked above)
    return Attributes(
        resource.get("verb", ""),
        api_group=resource.get("group", ""),
        resource=resource.get("resource", ""),
        subresource=resource.get("subresource", ""),
        name=resource.get("name", ""),
        namespace=resource.get("namespace", ""),
    )


def _answer(rt: ResourceType, body: Obj, status: Obj) -> Obj:
    meta = dict(body.get("metadata") or {})
    meta.setdefault("creationTimestamp", None)
    return {
        "kind": rt.kind,
        "apiVersion": rt.group_version,
        "metadata": meta,
        "spec": body.get("spec") or {},
        "status": status,
    }


def _access_status(table: AccessTable, user: str, groups: tuple[str, ...], attributes: Attributes) -> Obj:
    decision = table.authorize(user, groups, attributes)
    status: Obj = {"allowed": decision.allowed}
    if decision.reason:
        status["reason"] = decision.reason
    return status


def _rules_status(rules: list[Rule]) -> Obj:
    resource_rules, non_resource_rules = [], []
    for rule in rules:
        if rule.resources:
            entry: Obj = {
                "verbs": list(rule.verbs),
                "apiGroups": list(rule.api_groups),
                "resources": list(rule.resources),
            }
            if rule.resource_names:
                entry["resourceNames"] = list(rule.resource_names)
            resource_rules.append(entry)
        if rule.non_resource_urls:
            urls = list(rule.non_resource_urls)
            non_resource_rules.append({"verbs": list(rule.verbs), "nonResourceURLs": urls})
    return {"resourceRules": resource_rules, "nonResourceRules": non_resource_rules, "incomplete": False}


def review(table: AccessTable, caller: UserInfo, rt: ResourceType, namespace: str | None, body: Any) -> Obj:
    """Answer one review POSTed by `caller`."""
    if not isinstance(body, dict):
        raise bad_request("the body of the request must be a JSON object")
    spec = body.get("spec") or {}
    kind = rt.kind
    if kind == "TokenReview":
        if not spec.get("token"):
            raise _invalid(kind, "authentication.k8s.io", "spec.token", "Required value")
        found = table.authenticate(spec["token"])
        status: Obj = {"user": {}}
        if found is not None:
            status = {"authenticated": True, "user": found.as_json()}
            if spec.get("audiences"):
                status["audiences"] = spec["audiences"]
        return _answer(rt, body, status)
    if kind == "SelfSubjectReview":
        return _answer(rt, body, {"userInfo": caller.as_json()})
    if kind == "SelfSubjectRulesReview":
        rules = table.rules_for(caller.username, caller.groups, spec.get("namespace", ""))
        return _answer(rt, body, _rules_status(rules))
    attributes = _attributes(kind, spec)
    if kind == "SelfSubjectAccessReview":
        return _answer(rt, body, _access_status(table, caller.username, caller.groups, attributes))
    if not spec.get("user") and not spec.get("groups"):
        why = 'Invalid value: "": at least one of user or group must be specified'
        raise _invalid(kind, "authorization.k8s.io", "spec.user", why)
    if kind == "LocalSubjectAccessReview" and (
        attributes.namespace != namespace or not attributes.resource_request
    ):
        raise _invalid(
            kind,
            "authorization.k8s.io",
            "spec.resourceAttributes.namespace",
            f'Invalid value: "{attributes.namespace}": must match metadata.namespace',
        )
    groups = tuple(spec.get("groups") or ())
    return _answer(rt, body, _access_status(table, spec.get("user", ""), groups, attributes))
