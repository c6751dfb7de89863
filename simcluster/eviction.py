"""`pods/eviction` (policy/v1 Eviction): a delete that PodDisruptionBudgets may refuse.

Follows upstream's EvictionREST: pods that are not running (or already terminating) go at
once; otherwise the one PDB selecting the pod must allow a disruption, which the eviction
uses up (status.disruptionsAllowed - 1, the pod listed in disruptedPods) before the pod gets
its DisruptionTarget condition and is deleted. A refusal is 429 TooManyRequests with
upstream's message, which `kubectl drain` retries.
"""

from __future__ import annotations

from typing import Any

from simcluster import errors
from simcluster.api import Api, now
from simcluster.errors import ApiError
from simcluster.resources import BY_STORE_NAME
from simcluster.selectors import labels_match, selector_requirements

Obj = dict[str, Any]
PODS, PDBS = BY_STORE_NAME["pods"], BY_STORE_NAME["poddisruptionbudgets"]
SUCCESS: Obj = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
_REFUSED = "Cannot evict pod as it would violate the pod's disruption budget."


def _too_many(message: str, retry_after: int) -> ApiError:
    return ApiError(
        429,
        "TooManyRequests",
        _REFUSED,
        details={
            "causes": [{"reason": "DisruptionBudget", "message": message}],
            "retryAfterSeconds": retry_after,
        },
        retry_after=retry_after or None,
    )


def _ready(pod: Obj) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or ()
    )


def _delete_options(eviction: Obj, dry_run: list[str]) -> Obj:
    options = dict(eviction.get("deleteOptions") or {})
    if not options.get("dryRun"):
        options["dryRun"] = dry_run
    elif dry_run and dry_run != options["dryRun"]:
        raise errors.bad_request(
            f"Non-matching dry-run options in request and content: {dry_run} and {options['dryRun']}"
        )
    return options


def _with_version(options: Obj, pod: Obj) -> Obj:
    pre = dict(options.get("preconditions") or {})
    pre.setdefault("resourceVersion", pod["metadata"]["resourceVersion"])
    return {**options, "preconditions": pre}


def _check_and_decrement(api: Api, pdb: Obj, pod_name: str, dry_run: bool) -> None:
    meta, status = pdb["metadata"], pdb.get("status") or {}
    name = meta["name"]
    if status.get("observedGeneration", 0) < meta.get("generation", 0):
        raise _too_many(f"The disruption budget {name} is still being processed by the server.", 10)
    allowed = status.get("disruptionsAllowed", 0)
    if allowed < 0:
        raise ApiError(
            403,
            "Forbidden",
            f'poddisruptionbudgets.policy "{name}" is forbidden: pdb disruptions allowed is negative',
        )
    if allowed == 0:
        healthy, desired = status.get("currentHealthy", 0), status.get("desiredHealthy", 0)
        if healthy <= desired:
            why = f"The disruption budget {name} needs {desired} healthy pods and has {healthy} currently"
        else:
            why = f"The disruption budget {name} does not allow evicting pods currently"
        raise _too_many(why, 0)
    if dry_run:
        return
    new_status = {**status, "disruptionsAllowed": allowed - 1}
    new_status["disruptedPods"] = {**(status.get("disruptedPods") or {}), pod_name: now()}
    if allowed - 1 == 0:
        new_status["conditions"] = [
            c for c in status.get("conditions") or () if c.get("type") != "DisruptionAllowed"
        ] + [
            {
                "type": "DisruptionAllowed",
                "status": "False",
                "reason": "InsufficientPods",
                "message": "",
                "observedGeneration": meta.get("generation", 0),
                "lastTransitionTime": now(),
            }
        ]
    api.update(PDBS, meta["namespace"], name, {**pdb, "status": new_status}, "status")


def _delete(api: Api, namespace: str, name: str, options: Obj) -> None:
    if "All" not in (options.get("dryRun") or ()):
        pod = api.get(PODS, namespace, name).obj
        pre = options.get("preconditions") or {}
        if pre.get("resourceVersion") and pre["resourceVersion"] != pod["metadata"]["resourceVersion"]:
            raise errors.conflict(
                "Pod",
                name,
                f"the ResourceVersion in the precondition ({pre['resourceVersion']}) does not match the "
                f"ResourceVersion in record ({pod['metadata']['resourceVersion']}). "
                "The object might have been modified",
            )
        status = dict(pod.get("status") or {})
        status["conditions"] = [
            c for c in status.get("conditions") or () if c.get("type") != "DisruptionTarget"
        ] + [
            {
                "type": "DisruptionTarget",
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": now(),
                "reason": "EvictionByEvictionAPI",
                "message": "Eviction API: evicting",
            }
        ]
        updated = api.update(PODS, namespace, name, {**pod, "status": status}, "status").obj
        if pre.get("resourceVersion"):
            options = {
                **options,
                "preconditions": {**pre, "resourceVersion": updated["metadata"]["resourceVersion"]},
            }
    api.delete(PODS, namespace, name, options)


def evict(api: Api, namespace: str, name: str, eviction: Any, dry_run: list[str]) -> Obj:
    """Evict pod `namespace/name` as `eviction` asks; returns the Status to answer with."""
    if not isinstance(eviction, dict):
        raise errors.bad_request("the body of the request must be a JSON object")
    if (eviction.get("metadata") or {}).get("name") != name:
        raise errors.bad_request("name in URL does not match name in Eviction object")
    options = _delete_options(eviction, dry_run)
    if (options.get("ignoreStoreReadErrorWithClusterBreakingPotential")) is True:
        raise errors.invalid(
            "Eviction",
            name,
            "deleteOptions.ignoreStoreReadErrorWithClusterBreakingPotential",
            "Invalid value: true: can not be set for pod eviction, try after removing the option",
            "policy",
        )
    pod = api.get(PODS, namespace, name).obj
    phase = (pod.get("status") or {}).get("phase")
    terminating = bool(pod["metadata"].get("deletionTimestamp"))
    if phase in ("Succeeded", "Failed", "Pending") or terminating:
        if (
            phase == "Pending"
            and not terminating
            and not (options.get("preconditions") or {}).get("resourceVersion")
        ):
            options = _with_version(options, pod)
        _delete(api, namespace, name, options)
        return SUCCESS
    pdbs = [
        e.obj
        for e in api.store.entries("poddisruptionbudgets", namespace)
        if labels_match(selector_requirements(e.obj.get("spec", {}).get("selector") or {}), pod)
        and (e.obj.get("spec") or {}).get("selector") is not None
    ]
    if len(pdbs) > 1:
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "This pod has more than one PodDisruptionBudget, "
            "which the eviction subresource does not support.",
            "code": 500,
        }
    if pdbs:
        pdb = pdbs[0]
        spec, status = pdb.get("spec") or {}, pdb.get("status") or {}
        healthy, desired = status.get("currentHealthy", 0), status.get("desiredHealthy", 0)
        unhealthy_ok = not _ready(pod) and (
            spec.get("unhealthyPodEvictionPolicy") == "AlwaysAllow" or (healthy >= desired and desired > 0)
        )
        if unhealthy_ok:
            options = _with_version(options, pod)
        else:
            _check_and_decrement(api, pdb, name, "All" in (options.get("dryRun") or ()))
    _delete(api, namespace, name, options)
    return SUCCESS
