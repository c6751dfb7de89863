"""The ``extenders:`` of a KubeSchedulerConfiguration: decoding and upstream's validation.

An extender is an HTTP service the scheduler consults (filter, prioritize, preempt, bind); the
client is ``scheduler.extender``. Upstream defaults nothing here: an unset ``httpTimeout`` reads
``0s`` until the extender is built, which sets it to 5 seconds. ``certData``/``keyData``/``caData``
are ``[]byte`` in Go, so base64 text in the file, as for kube-scheduler.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, field
from typing import Any

from .decode import as_bool, as_duration, as_int, as_list, as_mapping, as_str
from .durations import format_duration
from .fielderrors import FieldErrors, child, index

__all__ = [
    "Extender",
    "ExtenderManagedResource",
    "ExtenderTLSConfig",
    "decode_extenders",
    "validate_extenders",
]

_EXTENDER_FIELDS = (
    "urlPrefix",
    "filterVerb",
    "preemptVerb",
    "prioritizeVerb",
    "weight",
    "bindVerb",
    "enableHTTPS",
    "tlsConfig",
    "httpTimeout",
    "nodeCacheCapable",
    "managedResources",
    "ignorable",
)
_TLS_FIELDS = ("insecure", "serverName", "certFile", "keyFile", "caFile", "certData", "keyData", "caData")
_MANAGED_RESOURCE_FIELDS = ("name", "ignoredByScheduler")


@dataclass(slots=True)
class ExtenderTLSConfig:
    insecure: bool = False
    server_name: str = ""
    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    # PEM bytes; each takes precedence over its file
    cert_data: bytes = b""
    key_data: bytes = b""
    ca_data: bytes = b""

    def to_dict(self) -> dict[str, Any]:
        """The v1 wire form (every field is omitempty; bytes as base64, as /configz shows them)."""
        out: dict[str, Any] = {}
        if self.insecure:
            out["insecure"] = True
        for key, text in (
            ("serverName", self.server_name),
            ("certFile", self.cert_file),
            ("keyFile", self.key_file),
            ("caFile", self.ca_file),
        ):
            if text:
                out[key] = text
        for key, data in (("certData", self.cert_data), ("keyData", self.key_data), ("caData", self.ca_data)):
            if data:
                out[key] = base64.b64encode(data).decode("ascii")
        return out


@dataclass(slots=True, frozen=True)
class ExtenderManagedResource:
    name: str
    ignored_by_scheduler: bool = False

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.ignored_by_scheduler:
            out["ignoredByScheduler"] = True
        return out


@dataclass(slots=True)
class Extender:
    """One extender; an empty verb means the extender does not offer that call."""

    url_prefix: str = ""
    filter_verb: str = ""
    preempt_verb: str = ""
    prioritize_verb: str = ""
    weight: int = 0  # multiplies the prioritize scores
    bind_verb: str = ""
    enable_https: bool = False
    tls_config: ExtenderTLSConfig | None = None
    http_timeout: float = 0.0  # seconds; 0 means the client's default (5s)
    node_cache_capable: bool = False
    managed_resources: list[ExtenderManagedResource] = field(default_factory=list)
    ignorable: bool = False

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"urlPrefix": self.url_prefix}
        for key, verb in (
            ("filterVerb", self.filter_verb),
            ("preemptVerb", self.preempt_verb),
            ("prioritizeVerb", self.prioritize_verb),
        ):
            if verb:
                out[key] = verb
        if self.weight:
            out["weight"] = self.weight
        if self.bind_verb:
            out["bindVerb"] = self.bind_verb
        if self.enable_https:
            out["enableHTTPS"] = True
        if self.tls_config is not None:
            out["tlsConfig"] = self.tls_config.to_dict()
        # a metav1.Duration struct: Go's omitempty never drops it
        out["httpTimeout"] = format_duration(self.http_timeout)
        if self.node_cache_capable:
            out["nodeCacheCapable"] = True
        if self.managed_resources:
            out["managedResources"] = [r.to_dict() for r in self.managed_resources]
        if self.ignorable:
            out["ignorable"] = True
        return out


# ---------------------------------------------------------------------------- decoding


def decode_extenders(errs: FieldErrors, raw: object, path: str = "extenders") -> list[Extender]:
    return [_decode_extender(errs, index(path, i), item) for i, item in enumerate(as_list(errs, path, raw))]


def _decode_extender(errs: FieldErrors, path: str, raw: object) -> Extender:
    data = as_mapping(errs, path, raw, _EXTENDER_FIELDS)

    def text(name: str) -> str:
        return as_str(errs, child(path, name), data.get(name), "")

    def flag(name: str) -> bool:
        return as_bool(errs, child(path, name), data.get(name), False)

    tls = None
    if data.get("tlsConfig") is not None:
        tls = _decode_tls(errs, child(path, "tlsConfig"), data["tlsConfig"])
    resources_path = child(path, "managedResources")
    resources = [
        _decode_managed_resource(errs, index(resources_path, i), item)
        for i, item in enumerate(as_list(errs, resources_path, data.get("managedResources")))
    ]
    return Extender(
        url_prefix=text("urlPrefix"),
        filter_verb=text("filterVerb"),
        preempt_verb=text("preemptVerb"),
        prioritize_verb=text("prioritizeVerb"),
        weight=as_int(errs, child(path, "weight"), data.get("weight"), 0),
        bind_verb=text("bindVerb"),
        enable_https=flag("enableHTTPS"),
        tls_config=tls,
        http_timeout=as_duration(errs, child(path, "httpTimeout"), data.get("httpTimeout"), 0.0),
        node_cache_capable=flag("nodeCacheCapable"),
        managed_resources=resources,
        ignorable=flag("ignorable"),
    )


def _decode_tls(errs: FieldErrors, path: str, raw: object) -> ExtenderTLSConfig:
    data = as_mapping(errs, path, raw, _TLS_FIELDS)

    def text(name: str) -> str:
        return as_str(errs, child(path, name), data.get(name), "")

    def pem(name: str) -> bytes:
        value = text(name)
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            errs.invalid(child(path, name), value, "must be base64-encoded data")
            return b""

    return ExtenderTLSConfig(
        insecure=as_bool(errs, child(path, "insecure"), data.get("insecure"), False),
        server_name=text("serverName"),
        cert_file=text("certFile"),
        key_file=text("keyFile"),
        ca_file=text("caFile"),
        cert_data=pem("certData"),
        key_data=pem("keyData"),
        ca_data=pem("caData"),
    )


def _decode_managed_resource(errs: FieldErrors, path: str, raw: object) -> ExtenderManagedResource:
    data = as_mapping(errs, path, raw, _MANAGED_RESOURCE_FIELDS)
    return ExtenderManagedResource(
        name=as_str(errs, child(path, "name"), data.get("name"), ""),
        ignored_by_scheduler=as_bool(
            errs, child(path, "ignoredByScheduler"), data.get("ignoredByScheduler"), False
        ),
    )


# ---------------------------------------------------------------------------- validation


def validate_extenders(errs: FieldErrors, extenders: list[Extender], path: str = "extenders") -> None:
    """Upstream's validateExtenders: a prioritizer needs a positive weight, managed resources are
    extended resource names, each managed by one extender only, and at most one extender binds."""
    binders = 0
    managed: set[str] = set()
    for i, extender in enumerate(extenders):
        item = index(path, i)
        if extender.prioritize_verb and extender.weight <= 0:
            errs.invalid(child(item, "weight"), extender.weight, "must have a positive weight applied to it")
        if extender.bind_verb:
            binders += 1
        for j, resource in enumerate(extender.managed_resources):
            name_path = child(index(child(item, "managedResources"), j), "name")
            _validate_extended_resource_name(errs, name_path, resource.name)
            if resource.name in managed:
                errs.invalid(name_path, resource.name, "duplicate extender managed resource name")
            managed.add(resource.name)
    if binders > 1:
        errs.invalid(
            path, f"found {binders} extenders implementing bind", "only one extender can implement bind"
        )


def _validate_extended_resource_name(errs: FieldErrors, path: str, name: str) -> None:
    problems = qualified_name_errors(name)
    for problem in problems:
        errs.invalid(path, name, problem)
    if not problems and not is_extended_resource_name(name):
        errs.invalid(path, name, "is an invalid extended resource name")


def is_extended_resource_name(name: str) -> bool:
    """Upstream's IsExtendedResourceName: outside kubernetes.io, prefixed, and still a qualified
    name once quota's ``requests.`` is put in front."""
    native = "/" not in name or "kubernetes.io/" in name
    if native or name.startswith("requests."):
        return False
    return not qualified_name_errors("requests." + name)


# apimachinery's IsQualifiedName (IsLabelKey), with its messages word for word.
_LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_KEY_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)
_LABEL_KEY = re.compile(f"^{_LABEL_KEY_FMT}$")
_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN = re.compile(f"^{_DNS1123_SUBDOMAIN_FMT}$")


def _regex_error(message: str, pattern: str, *examples: str) -> str:
    """apimachinery's RegexError: the message, the examples, then the regex."""
    shown = " or ".join(f"'{example}', " for example in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{pattern}')"


def _dns1123_subdomain_errors(value: str) -> list[str]:
    problems = []
    if len(value) > 253:
        problems.append("must be no more than 253 bytes")
    if not _DNS1123_SUBDOMAIN.match(value):
        problems.append(_regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return problems


def qualified_name_errors(value: str) -> list[str]:
    """Why ``value`` is not a qualified name ([DNS subdomain/]name); empty when it is one."""
    problems: list[str] = []
    parts = value.split("/")
    if len(parts) > 2:
        return [
            "a valid label key "
            + _regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            problems.append("prefix part must be non-empty")
        else:
            problems.extend("prefix part " + p for p in _dns1123_subdomain_errors(prefix))
    if not name:
        problems.append("name part must be non-empty")
    elif len(name) > 63:
        problems.append("name part must be no more than 63 bytes")
    if not _LABEL_KEY.match(name):
        problems.append(
            "name part " + _regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
        )
    return problems
