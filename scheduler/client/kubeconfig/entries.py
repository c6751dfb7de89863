"""Kubeconfig files read and merged as clientcmd merges a ``$KUBECONFIG`` list: for clusters,
users and contexts the first file that names one wins, whole; the current-context comes from the
first file that sets one. Each entry remembers its file, for error messages and relative paths."""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from scheduler.client.kubeconfig.errors import KubeconfigError, reason

try:
    _YamlLoader: Any = yaml.CSafeLoader
except AttributeError:  # PyYAML built without libyaml
    _YamlLoader = yaml.SafeLoader


@dataclass(frozen=True, slots=True)
class Entry:
    kind: str  # "cluster", "user", "context"
    name: str
    data: Mapping[str, Any]
    file: Path

    @property
    def origin(self) -> str:
        return f'{self.kind} "{self.name}" in {self.file}'

    def error(self, message: str) -> KubeconfigError:
        return KubeconfigError(f"{self.origin}: {message}")

    def resolve(self, path: str) -> str:
        """A file reference, relative to the directory of the file that holds it."""
        return (
            path
            if os.path.isabs(path)
            else os.path.normpath(os.path.join(os.path.abspath(self.file.parent), path))
        )

    def string(self, key: str) -> str | None:
        value = self.data.get(key)
        if value is None or value == "":
            return None
        if not isinstance(value, str):
            raise self.error(f"{key} must be a string, not {type_name(value)}")
        return value

    def flag(self, key: str) -> bool:
        value = self.data.get(key)
        if value is None:
            return False
        if not isinstance(value, bool):
            raise self.error(f"{key} must be true or false, not {value!r}")
        return value

    def data_field(self, key: str) -> bytes | None:
        value = self.string(key)
        if value is None:
            return None
        try:  # Go's []byte fields: standard base64, line breaks ignored
            return base64.b64decode(value.replace("\n", "").replace("\r", ""), validate=True)
        except (binascii.Error, ValueError) as exc:
            raise self.error(f"{key} is not valid base64: {exc}") from exc


@dataclass
class Merged:
    files: list[Path]
    clusters: dict[str, Entry] = field(default_factory=dict)
    users: dict[str, Entry] = field(default_factory=dict)
    contexts: dict[str, Entry] = field(default_factory=dict)
    current_context: tuple[str, Path] | None = None

    @property
    def label(self) -> str:
        return ", ".join(map(str, self.files))


def file_list(paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> list[Path]:
    if isinstance(paths, str):
        items: list[str | os.PathLike[str]] = list(paths.split(os.pathsep))
    elif isinstance(paths, os.PathLike):
        items = [paths]
    else:
        items = list(paths)
    files: list[Path] = []
    for item in items:
        if item and Path(item) not in files:
            files.append(Path(item))
    if not files:
        raise KubeconfigError("no kubeconfig file was given")
    return files


def merge_files(files: list[Path]) -> Merged:
    merged = Merged(files=[])
    missing: list[str] = []
    for file in files:
        document = _read_document(file)
        if document is None:
            missing.append(str(file))
            continue
        merged.files.append(file)
        for key, kind, target in (
            ("clusters", "cluster", merged.clusters),
            ("users", "user", merged.users),
            ("contexts", "context", merged.contexts),
        ):
            for entry in _entries(document, file, key, kind):
                target.setdefault(entry.name, entry)  # the first file to name it wins, whole
        current = document.get("current-context")
        if current is not None and not isinstance(current, str):
            raise KubeconfigError(f"{file}: current-context must be a string, not {type_name(current)}")
        if current and merged.current_context is None:
            merged.current_context = (current, file)
    if not merged.files:
        raise KubeconfigError(f"no such file: {', '.join(missing)}")
    return merged


def _read_document(file: Path) -> dict[str, Any] | None:
    """The file's top-level mapping; None when the file does not exist."""
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise KubeconfigError(f"{file}: cannot read: {reason(exc)}") from exc
    try:
        document = yaml.load(text, Loader=_YamlLoader)  # a safe loader
    except yaml.YAMLError as exc:
        raise KubeconfigError(f"{file}: not valid YAML: {' '.join(str(exc).split())}") from exc
    if document is None:
        return {}  # an empty file is an empty config, as in clientcmd
    if not isinstance(document, dict):
        raise KubeconfigError(f"{file}: a kubeconfig is a mapping, not {type_name(document)}")
    kind, version = document.get("kind"), document.get("apiVersion")
    if kind not in (None, "", "Config"):
        raise KubeconfigError(f"{file}: kind is {kind!r}, not Config")
    if version not in (None, "", "v1"):
        raise KubeconfigError(f"{file}: apiVersion is {version!r}, not v1")
    return document


def _entries(document: Mapping[str, Any], file: Path, key: str, kind: str) -> list[Entry]:
    items = document.get(key)
    if items is None:
        return []
    if not isinstance(items, list):
        raise KubeconfigError(f"{file}: {key} must be a list, not {type_name(items)}")
    entries: list[Entry] = []
    seen: set[str] = set()
    for index, item in enumerate(items):
        where = f"{file}: {key}[{index}]"
        if not isinstance(item, dict):
            raise KubeconfigError(f"{where} must be a mapping, not {type_name(item)}")
        name = item.get("name")
        if not name:
            raise KubeconfigError(f"{where} has no name")
        if not isinstance(name, str):
            raise KubeconfigError(f"{where}: name must be a string, not {type_name(name)}")
        if name in seen:
            raise KubeconfigError(f'{file}: {key}: the name "{name}" is used twice')
        seen.add(name)
        data = item.get(kind)
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise KubeconfigError(f'{file}: {kind} "{name}": {kind} must be a mapping, not {type_name(data)}')
        entries.append(Entry(kind, name, data, file))
    return entries


def type_name(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return type(value).__name__
