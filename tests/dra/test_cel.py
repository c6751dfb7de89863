"""Device selectors: the DRA CEL environment, quantities, semver, errors and the cost budget."""

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


def test_nested_comprehensions_run_while_their_actual_cost_fits_the_budget() -> None:
    """Upstream limits the cost an evaluation actually has, not a worst case: four levels over
    the device's four attributes (256 iterations) run."""
    attrs = 'device.attributes["gpu.example.com"]'
    nested = f"{attrs}.all(a, {attrs}.all(b, {attrs}.all(c, {attrs}.all(d, a != d || a == d))))"
    assert Selector(nested).matches(GPU) is True
    assert Selector(f"{attrs}.all(a, {attrs}.exists(b, a == b))").matches(GPU) is True


def costly(size: int) -> str:
    """``size`` x ``size`` iterations whose body builds twenty lists (~250 cost units each)."""
    items = ", ".join(str(n) for n in range(size))
    body = " && ".join(f"[i, {n}] != [j]" for n in range(10))
    return f"[{items}].all(i, [{items}].all(j, {body}))"


def test_an_evaluation_past_the_cost_budget_stops_with_upstreams_error() -> None:
    assert Selector(costly(30)).matches(GPU) is True  # 900 iterations: ~230,000
    with pytest.raises(CelError) as caught:
        Selector(costly(90)).matches(GPU)  # 8,100 iterations: ~2,000,000
    assert str(caught.value) == "operation cancelled: actual cost limit exceeded"
    # the evaluation stops whatever would have absorbed an error
    with pytest.raises(CelError, match=r"^operation cancelled: actual cost limit exceeded$"):
        Selector(f"{costly(90)} || true").matches(GPU)
    # each evaluation has a budget of its own
    assert Selector(costly(30)).matches(GPU) is True


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


# upstream's base environment beyond the DRA functions: each failed to compile here before
@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('device.attributes["gpu.example.com"].model.upperAscii() == "A100"', True),
        ('device.attributes["gpu.example.com"].model.lowerAscii() == "a100"', True),
        ('device.attributes["gpu.example.com"].model.indexOf("1") == 1', True),
        ('device.attributes["gpu.example.com"].model.split("1") == ["a", "00"]', True),
        ('device.attributes["gpu.example.com"].model.replace("a", "h") == "h100"', True),
        ('device.attributes["gpu.example.com"].model.substring(1) == "100"', True),
        ('device.attributes["gpu.example.com"].model.matches("^a[0-9]+$")', True),
        ('cel.bind(gpu, device.attributes["gpu.example.com"], gpu.memory > 32 && gpu.fast)', True),
        ('device.attributes["gpu.example.com"].?nothere.orValue(0) == 0', True),
        ("[1, 2, 3].sum() == 6 && [3, 1].max() == 3 && [3, 1].min() == 1", True),
        ("[1, 3, 2].isSorted()", False),
        ("[1, 2, 2].indexOf(2) == 1 && [1, 2, 2].lastIndexOf(2) == 2 && [1].indexOf(3) == -1", True),
        ('"abcb".indexOf("b") == 1 && "abcb".lastIndexOf("b") == 3', True),
        ('sets.contains(["a", "b"], ["a"]) && !sets.intersects([1], [2])', True),
        ("sets.equivalent([1, 2], [2, 1])", True),
        ('"gpu-123".find("[0-9]+") == "123" && "a1b2".findAll("[0-9]") == ["1", "2"]', True),
        ('semver("v1.2", true) == semver("1.2.0")', True),
        ('isSemver("v1.2", true) && !isSemver("v1.2")', True),
        ('semver("1.2.3+build.1") == semver("1.2.3+build.2")', True),
        # comprehensions over small list literals are cheap, however deeply nested
        ("[1, 2].all(x, [1, 2].all(y, [1, 2].all(z, [1, 2].all(w, x + y + z + w > 0))))", True),
    ],
)
def test_upstream_base_environment(expression: str, expected: bool) -> None:
    assert Selector(expression).matches(GPU) is expected


def test_a_missing_domain_then_attribute_is_upstreams_runtime_error() -> None:
    # the domain reads as an empty map, so the error names the attribute, as upstream
    with pytest.raises(CelError) as err:
        Selector('device.attributes["other.example.com"].memory >= 32').matches(GPU)
    assert str(err.value) == "no such key: memory"


def test_quantities_have_no_comparison_operators_as_upstream() -> None:
    with pytest.raises(CelError, match=r"compilation failed: .*no matching overload"):
        Selector('device.capacity["gpu.example.com"].mem >= quantity("32Gi")')


def test_max_of_an_empty_list_is_a_runtime_error_with_upstreams_words() -> None:
    with pytest.raises(CelError, match="max called on empty list"):
        Selector("[].max() == 0").matches(GPU)


def test_the_drivers_domain_reads_as_an_empty_map_when_the_device_has_none() -> None:
    bare = CelDevice("gpu.example.com", {}, {})
    assert Selector('"model" in device.attributes[device.driver]').matches(bare) is False
    with pytest.raises(CelError, match=r"^no such key: model$"):
        Selector('device.attributes[device.driver].model == "a100"').matches(bare)


@pytest.mark.parametrize(
    ("expression", "detail"),
    [
        ('device.attributes["gpu.example.com"].model > 5', "no such overload"),
        ('device.attributes["gpu.example.com"].memory / 0 == 1', "division by zero"),
    ],
)
def test_runtime_errors_in_cel_gos_words(expression: str, detail: str) -> None:
    with pytest.raises(CelError) as err:
        Selector(expression).matches(GPU)
    assert str(err.value) == detail
