"""Consumable capacity (DRAConsumableCapacity): how much of a device's capacity a request takes.

A request names amounts per capacity (``capacity.requests``); what it consumes of each of the
device's capacities is, as upstream computes it:

- nothing requested: the policy's ``default``, else the whole capacity;
- no ``requestPolicy``: the amount requested;
- ``validRange``: at least ``min``, rounded up to ``min + n * step`` when there is a step;
- ``validValues``: the smallest valid value at least the amount (or the amount, past them all).

The amount must then satisfy the policy (at most ``max``, on a step, one of the valid values),
and, added to what the device's other allocations consume, fit in its capacity. A request naming
a capacity the device lacks does not fit it. Exclusive devices are checked the same way: there
nothing else consumes, so a request fits when each amount it asks fits in the capacity.
"""

from __future__ import annotations

from collections.abc import Mapping

from scheduler.api.quantity import BINARY_SI, Quantity
from scheduler.dra.model import Amount, Capacity, RequestPolicy


def consumed(requested: Quantity | None, capacity: Capacity) -> Quantity:
    """What one allocation consumes of ``capacity`` for the amount requested (None: not named)."""
    policy = capacity.policy
    if requested is None:
        return policy.default if policy is not None and policy.default is not None else capacity.value
    if policy is None:
        return requested
    if policy.has_range and policy.min is not None:
        return _round_up_to_range(requested, policy)
    if policy.valid_values:
        return next((v for v in policy.valid_values if requested.value <= v.value), requested)
    return requested


def _round_up_to_range(requested: Quantity, policy: RequestPolicy) -> Quantity:
    assert policy.min is not None
    if requested.value < policy.min.value:
        return policy.min
    if policy.step is None:
        return requested
    start, step = policy.min.integer(), policy.step.integer()
    steps, rest = divmod(requested.integer() - start, step)
    return Quantity(start + step * (steps + (1 if rest else 0)), BINARY_SI)


def violates(amount: Quantity, policy: RequestPolicy | None) -> bool:
    """Whether an amount (after rounding) is outside what the policy allows."""
    if policy is None or (policy.default is not None and amount == policy.default):
        return False
    if policy.has_range:
        if policy.max is not None and amount.value > policy.max.value:
            return True
        if policy.step is not None and policy.min is not None:
            return (amount.integer() - policy.min.integer()) % policy.step.integer() != 0
        return False
    if policy.valid_values:
        return all(amount.value != v.value for v in policy.valid_values)
    return False


def fits(
    requests: Mapping[str, Quantity],
    capacities: Mapping[str, Capacity],
    in_use: Mapping[str, Amount] | None,
    allocating: Mapping[str, Amount] | None,
) -> bool:
    """Whether one more allocation asking ``requests`` fits a device with ``capacities``, of
    which ``in_use`` is consumed already and ``allocating`` by this cycle's other choices."""
    if any(name not in capacities for name in requests):
        return False
    for name, capacity in capacities.items():
        amount = consumed(requests.get(name), capacity)
        if violates(amount, capacity.policy):
            return False
        total = amount.value
        if in_use:
            total += in_use.get(name, 0)
        if allocating:
            total += allocating.get(name, 0)
        if total > capacity.value.value:
            return False
    return True


def consumption(requests: Mapping[str, Quantity], capacities: Mapping[str, Capacity]) -> dict[str, Quantity]:
    """Per capacity of a shared device, what an allocation asking ``requests`` consumes."""
    return {name: consumed(requests.get(name), capacity) for name, capacity in capacities.items()}
