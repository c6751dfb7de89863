"""``HTTPExtender``: kube-scheduler's extender protocol over HTTP(S), as upstream's extender.go.

Each call is a POST of a JSON body to ``urlPrefix/verb``; anything but 200 fails the call.
Bodies use upstream's Go field names (the types have no JSON tags: ``Pod``, ``Nodes``,
``NodeNames``, ``FailedNodes``...); answers are read as Go reads them, field names in any case.
A failed call raises :class:`ExtenderError` worded as upstream's error. TLS follows
``tlsConfig`` as client-go's TLSConfigFor does (``enableHTTPS`` without a CA skips verification;
a CA with ``insecure`` is refused); ``httpTimeout`` (default 5s) bounds the whole exchange.
A client key is loaded from memory, never from a named file. The proxy comes from the
environment, worked out once as Go's transport does; ``~/.netrc`` is never read.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson

from scheduler.api import Pod
from scheduler.client.kubeconfig.tls import load_pem_pair
from scheduler.client.transport import ProxyError, proxy_for
from scheduler.config import Extender as ExtenderConfig
from scheduler.config import ExtenderTLSConfig
from scheduler.extender.objects import ApiObjects, Json
from scheduler.framework import NodeInfo, NodeLister, Victims

DEFAULT_EXTENDER_TIMEOUT = 5.0  # seconds, when httpTimeout is 0
MAX_EXTENDER_PRIORITY = 10  # an extender scores nodes in [0, 10]


class ExtenderError(Exception):
    """An extender call that failed; the message is upstream's."""


class ExtenderConfigError(ValueError):
    """An extender that cannot be set up (bad TLS material)."""


@dataclass(slots=True)
class FilterResult:
    nodes: list[NodeInfo]
    failed: dict[str, str] = field(default_factory=dict)
    failed_and_unresolvable: dict[str, str] = field(default_factory=dict)


class HTTPExtender:
    """One configured extender (upstream's HTTPExtender). The session is opened on first use, in
    the scheduler's event loop; ``close`` it at shutdown."""

    def __init__(self, config: ExtenderConfig, objects: ApiObjects) -> None:
        self.config = config
        self._objects = objects
        self._timeout = aiohttp.ClientTimeout(total=config.http_timeout or DEFAULT_EXTENDER_TIMEOUT)
        self._ssl = tls_context(config)
        tls = config.tls_config
        self._server_name = tls.server_name if tls is not None and tls.server_name else None
        self._managed = frozenset(r.name for r in config.managed_resources)
        self._proxy, authorization = _environment_proxy(config.url_prefix)
        # a proxy's credentials go with the CONNECT of an https call, with each plain http request
        self._headers = {"Content-Type": "application/json"}
        self._proxy_headers: dict[str, str] | None = None
        if authorization and config.url_prefix.startswith("https:"):
            self._proxy_headers = {"Proxy-Authorization": authorization}
        elif authorization:
            self._headers["Proxy-Authorization"] = authorization
        self._session: aiohttp.ClientSession | None = None

    def __repr__(self) -> str:
        return f"HTTPExtender({self.name})"

    @property
    def name(self) -> str:
        return self.config.url_prefix

    def is_ignorable(self) -> bool:
        return self.config.ignorable

    def is_filter(self) -> bool:
        return bool(self.config.filter_verb)

    def is_prioritizer(self) -> bool:
        return bool(self.config.prioritize_verb)

    def is_binder(self) -> bool:
        return bool(self.config.bind_verb)

    def supports_preemption(self) -> bool:
        return bool(self.config.preempt_verb)

    def is_interested(self, pod: Pod) -> bool:
        """Upstream's IsInterested: no managed resources, or a container or init container that
        requests or limits one of them."""
        if not self._managed:
            return True
        kept = self._objects.pods.get(pod)
        names = container_resource_names(kept) if kept is not None else pod.requests.scalar.keys()
        return not self._managed.isdisjoint(names)

    # ------------------------------------------------------------------ the four calls

    async def filter(self, pod: Pod, nodes: Sequence[NodeInfo]) -> FilterResult:
        verb = self.config.filter_verb
        if not verb:
            return FilterResult(list(nodes))
        result = _object(await self._send(verb, self._node_args(pod, nodes)), "ExtenderFilterResult")
        error = _text(result, "ExtenderFilterResult", "Error")
        if error:
            raise ExtenderError(error)
        by_name = {info.name: info for info in nodes}
        names = _strings(result, "ExtenderFilterResult", "NodeNames")
        listed = _field(result, "Nodes")
        if self.config.node_cache_capable and names is not None:
            passed = [self._input_node(by_name, name) for name in names]
        elif listed is not None:
            # Upstream scores the Node objects returned here as nodes without pods; the cached
            # NodeInfo of each named node (pods included) is kept instead, unknown names dropped.
            items = _field(_object(listed, "NodeList"), "items") or []
            passed = [by_name[n] for n in _node_names(items) if n in by_name]
        else:
            passed = []
        return FilterResult(
            passed,
            _messages(result, "FailedNodes"),
            _messages(result, "FailedAndUnresolvableNodes"),
        )

    async def prioritize(self, pod: Pod, nodes: Sequence[NodeInfo]) -> tuple[list[tuple[str, int]], int]:
        verb = self.config.prioritize_verb
        if not verb:
            return [(info.name, 0) for info in nodes], 0
        answer = await self._send(verb, self._node_args(pod, nodes))
        if answer is None:
            return [], self.config.weight
        if not isinstance(answer, list):
            raise ExtenderError(_mismatch(answer, "HostPriorityList", "", "[]HostPriority"))
        scores = []
        for item in answer:
            entry = _object(item, "HostPriority")
            scores.append((_text(entry, "HostPriority", "Host"), _int(entry, "HostPriority", "Score")))
        return scores, self.config.weight

    async def process_preemption(
        self, pod: Pod, victims: Mapping[str, Victims], nodes: NodeLister
    ) -> dict[str, Victims]:
        verb = self.config.preempt_verb
        if not verb:
            raise ExtenderError(
                f"preempt verb is not defined for extender {self.name} but run into ProcessPreemption"
            )
        pod_json = self._objects.pod_json
        if self.config.node_cache_capable:
            meta: Json | None = {
                node: {"Pods": [{"UID": p.uid} for p in v.pods], "NumPDBViolations": v.num_pdb_violations}
                for node, v in victims.items()
            }
            whole: Json | None = None
        else:
            meta = None
            whole = {
                node: {"Pods": [pod_json(p) for p in v.pods], "NumPDBViolations": v.num_pdb_violations}
                for node, v in victims.items()
            }
        args = {"Pod": pod_json(pod), "NodeNameToVictims": whole, "NodeNameToMetaVictims": meta}
        result = _object(await self._send(verb, args), "ExtenderPreemptionResult")
        chosen = _field(result, "NodeNameToMetaVictims")
        return {
            node: self._victims_on(node, meta_victims, nodes)
            for node, meta_victims in _object(chosen, "ExtenderPreemptionResult").items()
        }

    async def bind(self, pod: Pod, node_name: str) -> None:
        verb = self.config.bind_verb
        if not verb:
            raise ExtenderError("unexpected empty bindVerb in extender")
        args = {"PodName": pod.name, "PodNamespace": pod.namespace, "PodUID": pod.uid, "Node": node_name}
        result = _object(await self._send(verb, args), "ExtenderBindingResult")
        error = _text(result, "ExtenderBindingResult", "Error")
        if error:
            raise ExtenderError(error)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    # ------------------------------------------------------------------ helpers

    def _node_args(self, pod: Pod, nodes: Sequence[NodeInfo]) -> Json:
        """ExtenderArgs: node names for a nodeCacheCapable extender, whole nodes otherwise."""
        args: Json = {"Pod": self._objects.pod_json(pod), "Nodes": None, "NodeNames": None}
        if self.config.node_cache_capable:
            args["NodeNames"] = [info.name for info in nodes]
        else:
            items = [self._objects.node_json(info.node) for info in nodes]
            args["Nodes"] = {"metadata": {}, "items": items or None}
        return args

    def _input_node(self, by_name: Mapping[str, NodeInfo], name: str) -> NodeInfo:
        info = by_name.get(name)
        if info is None:
            raise ExtenderError(
                f"extender {_go_quote(self.name)} claims a filtered node {_go_quote(name)} "
                "which is not found in the input node list"
            )
        return info

    def _victims_on(self, node_name: str, raw: Any, nodes: NodeLister) -> Victims:
        """The extender's MetaVictims as pods of the snapshot (upstream's convertToVictims)."""
        info = nodes.get(node_name)
        if info is None:
            raise ExtenderError(f"nodeinfo not found for node name {_go_quote(node_name)}")
        meta = _object(raw, "MetaVictims")
        pods = []
        for item in _field(meta, "Pods") or []:
            uid = _text(_object(item, "MetaPod"), "MetaPod", "UID")
            victim = info.pods.get(uid)
            if victim is None:
                raise ExtenderError(
                    f"extender: {self.name} claims to preempt pod (UID: &{{{uid}}}) on node: {node_name}, "
                    "but the pod is not found on that node"
                )
            pods.append(victim)
        return Victims(pods, _int(meta, "MetaVictims", "NumPDBViolations"))

    async def _send(self, verb: str, args: Json) -> Any:
        url = self.config.url_prefix.rstrip("/") + "/" + verb
        try:
            async with self._open().post(
                url,
                data=orjson.dumps(args),
                headers=self._headers,
                ssl=self._ssl if self._ssl is not None else True,
                server_hostname=self._server_name,
                proxy=self._proxy,
                proxy_headers=self._proxy_headers,
            ) as response:
                if response.status != 200:
                    raise ExtenderError(f"failed {verb} with extender at URL {url}, code {response.status}")
                body = await response.read()
        except TimeoutError:
            raise ExtenderError(
                f'Post "{url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)'
            ) from None
        except aiohttp.ClientError as exc:
            raise ExtenderError(f'Post "{url}": {_describe(exc)}') from exc
        return _decode(body)

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            # trust_env=False: no ~/.netrc (Go's client never reads one), no environment read per
            # request; the proxy was worked out once, from the environment, as Go's transport does
            self._session = aiohttp.ClientSession(timeout=self._timeout, trust_env=False)
        return self._session


# ---------------------------------------------------------------------------- proxy


def _environment_proxy(url: str) -> tuple[str | None, str | None]:
    """The proxy for calls to ``url`` and its Proxy-Authorization: the environment's (HTTPS_PROXY,
    HTTP_PROXY, NO_PROXY), read once, as Go's ProxyFromEnvironment does for upstream's extender
    client. Raises ExtenderConfigError for one that cannot be used (aiohttp has no SOCKS5)."""
    parts = urllib.parse.urlsplit(url)
    https = parts.scheme == "https"
    try:
        proxy = proxy_for(parts.scheme, parts.hostname or "", parts.port or (443 if https else 80))
    except ProxyError as exc:
        raise ExtenderConfigError(f"extender {url}: {exc}") from None
    if proxy is None:
        return None, None
    if proxy.socks:
        variable = "HTTPS_PROXY" if https else "HTTP_PROXY"
        raise ExtenderConfigError(
            f"extender {url}: ${variable} names a {proxy.describe()}, which extender calls cannot "
            "use (http:// and https:// proxies only); list the extender's host in NO_PROXY"
        )
    return proxy.url, proxy.authorization


# ---------------------------------------------------------------------------- TLS


def tls_context(config: ExtenderConfig) -> ssl.SSLContext | None:
    """The client TLS settings for ``config`` (upstream's makeTransport + TLSConfigFor); None when
    none are needed (plain HTTP, or HTTPS verified against the system's roots)."""
    tls = config.tls_config or ExtenderTLSConfig()
    has_ca = bool(tls.ca_file or tls.ca_data)
    insecure = tls.insecure or (config.enable_https and not has_ca)
    has_cert = bool(tls.cert_file or tls.cert_data) and bool(tls.key_file or tls.key_data)
    if not (has_ca or has_cert or insecure or tls.server_name):
        return None
    if has_ca and insecure:
        raise ExtenderConfigError("specifying a root certificates file with the insecure flag is not allowed")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        if insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        elif has_ca:
            context.load_verify_locations(cadata=_pem(tls.ca_data, tls.ca_file).decode("ascii"))
        else:
            context.load_default_certs()
        if has_cert:  # read into memory and loaded from there: no key material in a named file
            load_pem_pair(context, _pem(tls.cert_data, tls.cert_file), _pem(tls.key_data, tls.key_file))
    except (OSError, ssl.SSLError, UnicodeDecodeError, ValueError) as exc:
        raise ExtenderConfigError(f"extender {config.url_prefix}: {exc}") from exc
    return context


def _pem(data: bytes, path: str) -> bytes:
    """The data when given, else the file's content (data takes precedence, as in client-go)."""
    if data:
        return data
    with open(path, "rb") as f:
        return f.read()


# ---------------------------------------------------------------------------- reading answers as Go does


def _decode(body: bytes) -> Any:
    """The first JSON value of the body (what Go's json.Decoder reads)."""
    text = body.decode("utf-8", errors="replace").lstrip()
    if not text:
        raise ExtenderError("EOF")
    try:
        value, _ = json.JSONDecoder().raw_decode(text)
    except json.JSONDecodeError as exc:
        raise ExtenderError(f"invalid character in extender response: {exc.msg}") from exc
    return value


def _field(obj: Mapping[str, Any], name: str) -> Any:
    """A struct field as encoding/json finds it: the key in any case (the last one wins)."""
    value = None
    folded = name.casefold()
    for key, item in obj.items():
        if key.casefold() == folded:
            value = item
    return value


_JSON_KINDS = {dict: "object", list: "array", str: "string", bool: "bool", int: "number", float: "number"}


def _mismatch(value: Any, struct: str, name: str, go_type: str) -> str:
    where = f"{struct}.{name}" if name else struct
    kind = _JSON_KINDS.get(type(value), "value")
    return f"json: cannot unmarshal {kind} into Go struct field {where} of type {go_type}"


def _object(value: Any, struct: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ExtenderError(_mismatch(value, struct, "", struct))
    return value


def _text(obj: Mapping[str, Any], struct: str, name: str) -> str:
    value = _field(obj, name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ExtenderError(_mismatch(value, struct, name, "string"))
    return value


def _int(obj: Mapping[str, Any], struct: str, name: str) -> int:
    value = _field(obj, name)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise ExtenderError(_mismatch(value, struct, name, "int64"))
    return value


def _strings(obj: Mapping[str, Any], struct: str, name: str) -> list[str] | None:
    value = _field(obj, name)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ExtenderError(_mismatch(value, struct, name, "[]string"))
    return value


def _messages(obj: Mapping[str, Any], name: str) -> dict[str, str]:
    """A FailedNodesMap (node name -> message)."""
    value = _field(obj, name)
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ExtenderError(_mismatch(value, "ExtenderFilterResult", name, "FailedNodesMap"))
    return value


def _node_names(items: Any) -> list[str]:
    if not isinstance(items, list):
        raise ExtenderError(_mismatch(items, "NodeList", "items", "[]v1.Node"))
    names = []
    for item in items:
        meta = _field(_object(item, "Node"), "metadata")
        names.append(_text(_object(meta, "ObjectMeta"), "ObjectMeta", "name"))
    return names


def container_resource_names(pod_json: Mapping[str, Any]) -> set[str]:
    """The resources any container or init container of the pod requests or limits."""
    spec = pod_json.get("spec") or {}
    names: set[str] = set()
    for container in (*(spec.get("containers") or ()), *(spec.get("initContainers") or ())):
        resources = container.get("resources") or {}
        names.update(resources.get("requests") or ())
        names.update(resources.get("limits") or ())
    return names


def _go_quote(text: str) -> str:
    """A string as Go's %q prints it (the same as JSON for what URLs and node names hold)."""
    return json.dumps(text, ensure_ascii=False)


def _describe(exc: aiohttp.ClientError) -> str:
    """A transport failure in Go's words where they are known (a refused connection)."""
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        return f"tls: failed to verify certificate: {exc.certificate_error}"
    if isinstance(exc, aiohttp.ClientConnectorError) and isinstance(exc.os_error, ConnectionRefusedError):
        return f"dial tcp {exc.host}:{exc.port}: connect: connection refused"
    return str(exc) or type(exc).__name__


async def close_all(extenders: Sequence[HTTPExtender]) -> None:
    await asyncio.gather(*(e.close() for e in extenders))
