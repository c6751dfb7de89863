"""JSON merge patch (RFC 7386), JSON patch (RFC 6902, by the ``jsonpatch`` library) and strategic
merge patch.

Strategic merge knows the merge keys of the list fields clients of this project touch
(containers by name, conditions by type, taints by key, …); other lists are replaced, as the
real server does for lists without a patch strategy.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import jsonpointer

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


def json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902 (the ``jsonpatch`` library) on a private copy; an operation that does not apply
    (a failed ``test``, a missing path, an index outside the list) is a 422 Invalid, as the API
    server answers. Like the server's JSON patch library, a negative index counts from the end."""
    if not isinstance(operations, list):
        raise bad_request("json patch must be a list of operations")
    doc = copy.deepcopy(target)
    for op in operations:
        try:
            doc = jsonpatch.apply_patch(doc, [_from_the_end(doc, op)], in_place=True)
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, TypeError) as err:
            raise ApiError(
                422, "Invalid", f"the server rejected our request due to an error in our request: {err}"
            ) from err
    return doc


def _from_the_end(doc: Any, op: Any) -> Any:
    """``op`` with each negative list index of its paths made the index it stands for: -1 is the
    last element (for ``add``, the end of the list). The API server's library (json-patch v4,
    SupportNegativeIndices) takes them; RFC 6902 and ``jsonpatch`` do not."""
    if not isinstance(op, dict):
        return op
    fixed = dict(op)
    for key in ("path", "from"):
        if isinstance(op.get(key), str):
            fixed[key] = _resolve_negative(doc, op[key], inserting=key == "path" and op.get("op") == "add")
    return fixed


def _resolve_negative(doc: Any, path: str, *, inserting: bool) -> str:
    try:
        parts = jsonpointer.JsonPointer(path).parts
    except jsonpointer.JsonPointerException:
        return path  # jsonpatch reports it
    node = doc
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        if isinstance(node, list) and part.startswith("-") and part[1:].isdigit():
            index = int(part) + len(node) + (1 if last and inserting else 0)
            if index >= 0:
                parts[depth] = part = str(index)
        if last:
            break
        try:
            node = node[int(part)] if isinstance(node, list) else node[part]
        except (KeyError, IndexError, ValueError, TypeError):
            break  # the path does not exist: jsonpatch reports it
    return str(jsonpointer.JsonPointer.from_parts(parts).path)
