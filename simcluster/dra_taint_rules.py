"""DeviceTaintRule validation (resource.k8s.io/v1beta2), as the API server applies it.

The selector's driver and pool are DNS subdomains (a pool's each part between '/'), its device a
DNS label; the taint's key is a label key (qualified name), its value a label value, its effect
one of None, NoSchedule, NoExecute (checked when it is new or changes); the server sets
``timeAdded`` when none is given and when the effect changes without a new one. The first error
found is reported.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from simcluster.dra_fields import FieldInvalid, label, qualified_name, subdomain

Obj = dict[str, Any]
_EFFECTS = ("NoExecute", "NoSchedule", "None")
_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE = re.compile(f"^({_NAME_FMT})?$")
_LABEL_VALUE_WHY = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
    f"'12345', regex used for validation is '({_NAME_FMT})?')"
)


def _label_value(value: Any, path: str) -> None:
    text = str(value)
    if len(text.encode()) > 63:
        raise FieldInvalid(path, f"Invalid value: {json.dumps(text)}: must be no more than 63 bytes")
    if not _LABEL_VALUE.match(text):
        raise FieldInvalid(path, f"Invalid value: {json.dumps(text)}: {_LABEL_VALUE_WHY}")


def _selector(selector: Obj) -> Obj:
    if selector.get("driver") is not None:
        subdomain(selector["driver"], "spec.deviceSelector.driver")
    if selector.get("pool") is not None:
        pool = selector["pool"]
        for part in str(pool).split("/") if pool else [""]:
            subdomain(part, "spec.deviceSelector.pool")
    if selector.get("device") is not None:
        label(selector["device"], "spec.deviceSelector.device")
    return selector


def taint_rule_spec(spec: Any, old: Obj | None) -> Obj:
    """The rule's spec as the server stores it; raises FieldInvalid for the first bad field."""
    spec = dict(spec or {})
    if spec.get("deviceSelector") is not None:
        spec["deviceSelector"] = _selector(dict(spec["deviceSelector"] or {}))
    taint = dict(spec.get("taint") or {})
    qualified_name(taint.get("key") or "", "spec.taint.key")  # an absent key is an empty one
    if taint.get("value"):
        _label_value(taint["value"], "spec.taint.value")
    before = ((old or {}).get("spec") or {}).get("taint") or {}
    effect = taint.get("effect")
    if old is None or before.get("effect") != effect:
        if not effect:
            raise FieldInvalid("spec.taint.effect", "Required value")
        if effect not in _EFFECTS:
            supported = ", ".join(json.dumps(e) for e in _EFFECTS)
            raise FieldInvalid(
                "spec.taint.effect", f"Unsupported value: {json.dumps(effect)}: supported values: {supported}"
            )
    # the server's time when none is given, and when the effect changes without a new one
    if not taint.get("timeAdded") or (
        old is not None
        and before.get("effect") != effect
        and taint.get("timeAdded") == before.get("timeAdded")
    ):
        taint["timeAdded"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    spec["taint"] = taint
    return spec
