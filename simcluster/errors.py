"""API errors carried as `kind: Status` bodies, worded like the real apiserver's."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """An error the server answers with a Status body and an HTTP code."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.retry_after = retry_after

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            body["details"] = self.details
        return body


def _qualified(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


def _details(name: str, resource: str, group: str) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name, "kind": resource}
    if group:
        details["group"] = group
    return details


def not_found(resource: str, name: str, group: str = "") -> ApiError:
    return ApiError(
        404,
        "NotFound",
        f'{_qualified(resource, group)} "{name}" not found',
        details=_details(name, resource, group),
    )


def already_exists(resource: str, name: str, group: str = "") -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{_qualified(resource, group)} "{name}" already exists',
        details=_details(name, resource, group),
    )


def conflict(resource: str, name: str, why: str, group: str = "") -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {_qualified(resource, group)} "{name}": {why}',
        details=_details(name, resource, group),
    )


STALE = "the object has been modified; please apply your changes to the latest version and try again"


def stale(resource: str, name: str, group: str = "") -> ApiError:
    return conflict(resource, name, STALE, group)


def expired(requested: int | str, oldest: int) -> ApiError:
    return ApiError(410, "Expired", f"too old resource version: {requested} ({oldest})")


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def invalid(kind: str, name: str, field: str, message: str, group: str = "") -> ApiError:
    return ApiError(
        422,
        "Invalid",
        f'{f"{kind}.{group}" if group else kind} "{name}" is invalid: {field}: {message}',
        details={"name": name, "kind": kind, **({"group": group} if group else {})},
    )


def method_not_allowed(
    message: str = "the server does not allow this method on the requested resource",
) -> ApiError:
    return ApiError(405, "MethodNotAllowed", message)


def unsupported_media_type(content_type: str) -> ApiError:
    accepted = (
        "application/json-patch+json, application/merge-patch+json, "
        "application/apply-patch+yaml, application/strategic-merge-patch+json"
    )
    return ApiError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: {accepted}"
        f" (got {content_type})",
    )


def injected(code: int, retry_after: int | None) -> ApiError:
    """An error produced by the fault injector, shaped like the server's own."""
    reasons = {
        429: ("TooManyRequests", "Too many requests, please try again later."),
        500: ("InternalError", "Internal error occurred: injected fault"),
        503: ("ServiceUnavailable", "The server is currently unable to handle the request"),
        504: ("Timeout", "The server was unable to return a response in the time allotted"),
    }
    reason, message = reasons.get(code, ("InternalError", f"injected fault ({code})"))
    details = {"retryAfterSeconds": retry_after} if retry_after is not None else None
    return ApiError(code, reason, message, details=details, retry_after=retry_after)
