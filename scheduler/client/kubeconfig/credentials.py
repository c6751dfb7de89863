"""What gives each request its Authorization header: nothing, a bearer token, basic auth, or a
token file read again every minute or so (client-go's cached file token source)."""

from __future__ import annotations

import base64
import logging
import math
import os
import ssl
import time
from collections.abc import Callable
from pathlib import Path

from scheduler.client.kubeconfig.errors import CredentialError, reason

log = logging.getLogger(__name__)

Clock = Callable[[], float]  # seconds since the epoch (exec expiry timestamps are wall-clock times)

# client-go's NewCachedFileTokenSource: a token read from a file is good for a minute, and read
# again 10 s before that (half of the kubelet's refresh margin for projected tokens).
TOKEN_FILE_PERIOD = 60.0
TOKEN_FILE_LEEWAY = 10.0


class Credentials:
    """No credentials: requests carry no Authorization header. The base of the others."""

    refreshable = False  # does ``invalidate`` make the next ``authorization`` fetch anew?

    async def authorization(self) -> str | None:
        """The Authorization header's value for the next request (None: send none)."""
        return None

    def invalidate(self, used: str | None = None) -> None:
        """Forget the cached credential: the next ``authorization`` re-runs or re-reads it.

        ``used`` is the Authorization value the server refused; when the cache already holds
        another (a concurrent request refreshed it), nothing is forgotten.
        """

    def client_certificate(self) -> tuple[bytes, bytes] | None:
        """A (certificate, key) PEM pair these credentials give for TLS (an exec plugin's)."""
        return None

    def bind_tls(self, context: ssl.SSLContext) -> None:
        """Load ``client_certificate()`` into ``context``, now and whenever it changes."""

    def on_certificate_change(self, callback: Callable[[], object]) -> None:
        """Call ``callback`` whenever ``client_certificate()`` is replaced by another: the
        connections made with the old one must be closed, as client-go closes them. Held weakly
        when it is a bound method, so registering keeps no client alive."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class BearerToken(Credentials):
    def __init__(self, token: str) -> None:
        self._value = f"Bearer {token}"

    async def authorization(self) -> str | None:
        return self._value


class BasicAuth(Credentials):
    def __init__(self, username: str, password: str) -> None:
        self.username = username
        userinfo = f"{username}:{password}".encode()
        self._value = "Basic " + base64.b64encode(userinfo).decode("ascii")

    async def authorization(self) -> str | None:
        return self._value

    def __repr__(self) -> str:
        return f"BasicAuth(username={self.username!r})"


class TokenFile(Credentials):
    """A bearer token read from a file, read again once ``period - leeway`` seconds have passed.

    A read that fails keeps the last token that was read (else ``token``, the kubeconfig's own
    ``token`` field), as client-go does; only when there is neither does the request fail.
    """

    refreshable = True

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        token: str | None = None,
        period: float = TOKEN_FILE_PERIOD,
        leeway: float = TOKEN_FILE_LEEWAY,
        clock: Clock = time.time,
    ) -> None:
        self.path = Path(path)
        self._fallback = token
        self._period = period
        self._leeway = min(leeway, period)
        self._clock = clock
        self._token: str | None = None
        self._expires = -math.inf
        self._failing = False

    def read(self) -> str:
        """Read the file now (raises ``CredentialError``); does not touch the cache."""
        try:
            token = self.path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise CredentialError(f"cannot read token file {self.path}: {reason(exc)}") from exc
        if not token:
            raise CredentialError(f"token file {self.path} is empty")
        return token

    def current(self) -> str:
        """The token to send: cached while fresh, else read again."""
        now = self._clock()
        if self._token is not None and now < self._expires - self._leeway:
            return self._token
        try:
            token = self.read()
        except CredentialError as exc:
            keep = self._token or self._fallback
            if keep is None:
                raise
            if not self._failing:
                log.error("%s; still using the token read before", exc)
                self._failing = True
            return keep
        self._token, self._expires, self._failing = token, now + self._period, False
        return token

    async def authorization(self) -> str | None:
        return f"Bearer {self.current()}"

    def invalidate(self, used: str | None = None) -> None:
        if used is not None and self._token is not None and used != f"Bearer {self._token}":
            return
        self._expires = -math.inf

    def __repr__(self) -> str:
        return f"TokenFile({str(self.path)!r})"
