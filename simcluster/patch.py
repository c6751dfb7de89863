"""JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch.

Strategic merge knows the merge keys of the list fields clients of this project touch
(containers by name, conditions by type, taints by key, …); other lists are replaced, as the
real server does for lists without a patch strategy.
"""

from __future__ import annotations

import copy
from typing import Any

from simcluster.errors import ApiError, bad_request

# list field name -> merge key, for lists whose patchStrategy is "merge" upstream
MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "env": "name",
    "ports": "containerPort",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "imagePullSecrets": "name",
    "conditions": "type",
    "ownerReferences": "uid",
    "taints": "key",
    "addresses": "type",
    "hostAliases": "ip",
    "podIPs": "ip",
    "hostIPs": "ip",
    "resourceClaims": "name",
    "topologySpreadConstraints": "topologyKey",
}
# primitive lists merged as sets
MERGED_PRIMITIVE_LISTS = frozenset({"finalizers"})


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, null deletes, everything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$setElementOrder/") or key in ("$retainKeys", "$patch"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            result[field] = [v for v in result.get(field) or [] if v not in value]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list):
            result[key] = _merge_list(key, result.get(key), value)
        else:
            result[key] = strategic_merge_patch(result.get(key), value)
    return result


def _merge_list(field: str, current: Any, patch: list[Any]) -> list[Any]:
    current = current if isinstance(current, list) else []
    if field in MERGED_PRIMITIVE_LISTS:
        return current + [v for v in patch if v not in current]
    merge_key = MERGE_KEYS.get(field)
    if merge_key is None or not all(isinstance(item, dict) for item in patch):
        return copy.deepcopy(patch)
    if any(item.get("$patch") == "replace" for item in patch):
        return [copy.deepcopy(i) for i in patch if i.get("$patch") != "replace"]
    result = list(current)
    for item in patch:
        if merge_key not in item:
            raise bad_request(f"map: {item} does not contain declared merge key: {merge_key}")
        index = next(
            (
                i
                for i, old in enumerate(result)
                if isinstance(old, dict) and old.get(merge_key) == item[merge_key]
            ),
            None,
        )
        if item.get("$patch") == "delete":
            if index is not None:
                del result[index]
        elif index is None:
            result.append(strategic_merge_patch({}, item))
        else:
            result[index] = strategic_merge_patch(result[index], item)
    return result


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise bad_request(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _parent(doc: Any, parts: list[str]) -> tuple[Any, str]:
    node = doc
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node, parts[-1]


def json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902 on a private copy; a failed `test` or bad path is a 422 like the real server."""
    if not isinstance(operations, list):
        raise bad_request("json patch must be a list of operations")
    doc = copy.deepcopy(target)
    for op in operations:
        try:
            doc = _apply_op(doc, op)
        except (KeyError, IndexError, ValueError, TypeError) as err:
            raise ApiError(
                422, "Invalid", f"the server rejected our request due to an error in our request: {err}"
            ) from err
    return doc


def _apply_op(doc: Any, op: dict[str, Any]) -> Any:
    kind = op["op"]
    parts = _pointer(op["path"])
    if kind == "test":
        node = doc
        for part in parts:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if node != op["value"]:
            raise ValueError(f"testing value {op['path']} failed")
        return doc
    if kind in ("move", "copy"):
        source = _pointer(op["from"])
        parent, last = _parent(doc, source)
        value = parent[int(last)] if isinstance(parent, list) else parent[last]
        if kind == "move":
            doc = _apply_op(doc, {"op": "remove", "path": op["from"]})
        return _apply_op(doc, {"op": "add", "path": op["path"], "value": copy.deepcopy(value)})
    if not parts:
        if kind in ("add", "replace"):
            return copy.deepcopy(op["value"])
        raise ValueError("cannot remove the whole document")
    parent, last = _parent(doc, parts)
    if kind == "add":
        if isinstance(parent, list):
            parent.insert(len(parent) if last == "-" else int(last), copy.deepcopy(op["value"]))
        else:
            parent[last] = copy.deepcopy(op["value"])
    elif kind == "replace":
        if isinstance(parent, list):
            parent[int(last)] = copy.deepcopy(op["value"])
        else:
            if last not in parent:
                raise KeyError(f"replace operation does not apply: doc is missing key: {op['path']}")
            parent[last] = copy.deepcopy(op["value"])
    elif kind == "remove":
        if isinstance(parent, list):
            del parent[int(last)]
        else:
            del parent[last]
    else:
        raise ValueError(f"unknown op {kind!r}")
    return doc
