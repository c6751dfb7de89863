"""Device selectors: the DRA CEL environment, quantities, semver, errors and the cost bound."""

from __future__ import annotations

import pytest

from scheduler.dra.cel import CelDevice, CelError, Selector, SelectorCache, quantity_value, semver_value

GPU = CelDevice(
    "gpu.example.com",
    {
        "gpu.example.com": {
            "memory": 40,
            "model": "a100",
            "fast": True,
            "driverVersion": semver_value("1.2.3"),
        }
    },
    {"gpu.example.com": {"mem": quantity_value("40Gi")}},
)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('device.attributes["gpu.example.com"].memory >= 32 && device.driver == "gpu.example.com"', True),
        ('device.attributes["gpu.example.com"].model == "h100"', False),
        ('device.attributes["gpu.example.com"].fast', True),
        ('device.capacity["gpu.example.com"].mem.compareTo(quantity("32Gi")) > 0', True),
        ('device.capacity["gpu.example.com"].mem == quantity("40960Mi")', True),
        ('device.capacity["gpu.example.com"].mem.isLessThan(quantity("50Gi"))', True),
        ('device.capacity["gpu.example.com"].mem.isGreaterThan(quantity("50Gi"))', False),
        ('device.capacity["gpu.example.com"].mem.asInteger() == 42949672960', True),
        ('device.capacity["gpu.example.com"].mem.sub(quantity("8Gi")) == quantity("32Gi")', True),
        ('isQuantity("1.5Gi") && !isQuantity("lots")', True),
        ('device.attributes["gpu.example.com"].driverVersion.isLessThan(semver("1.10.0"))', True),
        ('device.attributes["gpu.example.com"].driverVersion == semver("1.2.3")', True),
        ('semver("1.0.0-alpha").isLessThan(semver("1.0.0"))', True),
        ('device.attributes["gpu.example.com"].driverVersion.major() == 1', True),
        # a domain the device lacks reads as an empty map, as upstream
        ('"x" in device.attributes["other.example.com"]', False),
        ('device.attributes["gpu.example.com"].all(k, k != "")', True),
        ("device.allowMultipleAllocations", False),
    ],
)
def test_expressions(expression: str, expected: bool) -> None:
    assert Selector(expression).matches(GPU) is expected


def test_a_compile_error_keeps_the_libraries_detail() -> None:
    with pytest.raises(CelError) as err:
        Selector("device.driver ==")
    assert str(err.value).startswith("compilation failed: ERROR: <input>:1:")


def test_a_non_bool_result_is_refused_at_compile_time() -> None:
    with pytest.raises(CelError, match="must evaluate to bool or the unknown type, not int"):
        Selector("1 + 1")


def test_a_missing_attribute_is_a_runtime_error() -> None:
    with pytest.raises(CelError, match="no such key: nothere"):
        Selector('device.attributes["gpu.example.com"].nothere == 1').matches(GPU)


def test_deeply_nested_comprehensions_exceed_the_cost_budget() -> None:
    attrs = 'device.attributes["gpu.example.com"]'
    nested = f"{attrs}.all(a, {attrs}.all(b, {attrs}.all(c, {attrs}.all(d, a != d))))"
    with pytest.raises(CelError, match="estimated cost exceeds the budget"):
        Selector(nested)
    # two levels stay within it
    assert Selector(f"{attrs}.all(a, {attrs}.exists(b, a == b))").matches(GPU) is True


def test_an_over_long_expression_is_refused() -> None:
    with pytest.raises(CelError, match="expression too long"):
        Selector("true || " * 2000 + "true")


def test_the_cache_compiles_once_and_remembers_errors() -> None:
    cache = SelectorCache()
    assert cache.get("true") is cache.get("true")
    with pytest.raises(CelError):
        cache.get("1 +")
    with pytest.raises(CelError):
        cache.get("1 +")
