"""The in-process scheduler fixture of the integration tests."""

from tests.integration.conftest import start_scheduler  # noqa: F401  (a fixture)
