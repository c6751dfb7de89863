"""The in-process scheduler fixture of the integration tests."""

from tests.support.cluster import start_scheduler  # noqa: F401  (a fixture)
