"""The scheduler's serving port: HTTPS, delegated authentication and authorization, the handlers."""

from scheduler.serving.auth import AuthOptions, DelegatedAuth, Identity
from scheduler.serving.server import StatusServer
from scheduler.serving.tls import ServingCertificate, TLSConfigError, TLSOptions

__all__ = [
    "AuthOptions",
    "DelegatedAuth",
    "Identity",
    "ServingCertificate",
    "StatusServer",
    "TLSConfigError",
    "TLSOptions",
]
