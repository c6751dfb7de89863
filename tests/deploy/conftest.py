"""Fixtures of the shipping tests; the helpers live in tests/support/shipping.py."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from tests.support.shipping import HELM, NO_HELM, Manifest, parse, render_chart


@pytest.fixture
def render() -> Callable[..., list[Manifest]]:
    """``render(values=["full-values.yaml"], sets=["replicas=3"], set_json=['k={"a":1}'], ...)``."""
    if HELM is None:
        pytest.skip(NO_HELM)

    def _do(
        values: Sequence[str] = (),
        sets: Sequence[str] = (),
        set_json: Sequence[str] = (),
        release: str = "pyscheduler",
        namespace: str = "pyscheduler",
    ) -> list[Manifest]:
        return parse(render_chart(release, namespace, tuple(values), tuple(sets), tuple(set_json)))

    return _do
