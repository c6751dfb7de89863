"""The errors of reading a kubeconfig or service account, and how an OS or TLS error is worded."""

from __future__ import annotations

import ssl


class KubeconfigError(Exception):
    """A kubeconfig (or service account) that cannot be used; the message names file and field."""


class NotInClusterError(KubeconfigError):
    """Not running in a pod: the service's environment variables are not set."""


class CredentialError(Exception):
    """No credentials for a request: the exec plugin failed, the token file cannot be read."""


def reason(exc: BaseException) -> str:
    """An exception in a few words: an OS error's own text, else its message on one line."""
    if isinstance(exc, OSError) and exc.strerror and not isinstance(exc, ssl.SSLError):
        return exc.strerror
    message = " ".join(str(exc).split())
    return message or type(exc).__name__
