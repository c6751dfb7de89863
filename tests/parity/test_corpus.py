"""Every pod of kube-scheduler v1.36.2's recorded corpus gets an acceptable outcome from us.

The replay (bench/parity.py) runs the real scheduler app against the local API endpoint, one
scenario at a time, exactly as the corpus was recorded; a miss prints the per-plugin scores.
"""

from __future__ import annotations

from bench.parity import load_corpus, replay, summary


async def test_every_recorded_decision_is_reproduced() -> None:
    corpus = load_corpus()
    outcomes = await replay(corpus)
    assert len(outcomes) == sum(len(scenario["pods"]) for scenario in corpus["scenarios"]) == 107
    misses = [outcome for outcome in outcomes if not outcome.agrees]
    assert not misses, summary(outcomes)


async def test_a_miss_is_reported_with_its_score_differences() -> None:
    corpus = load_corpus()
    scenario = next(s for s in corpus["scenarios"] if s["name"] == "fit-least-allocated")
    # kube-scheduler's own record, with the chosen node swapped for another: a miss by construction
    first = scenario["pods"][0]
    first["expect"] = {"node": "a", "acceptable": ["a"]}
    first["kube_scores"]["c"]["NodeResourcesFit"] += 1
    scenario["pods"] = [first]
    corpus["scenarios"] = [scenario]
    (outcome,) = await replay(corpus)
    assert not outcome.agrees
    text = summary([outcome])
    assert text.splitlines()[0] == "agreement 0/1"
    assert "fit-least-allocated/p0: ours bound to c; kube-scheduler one of ['a']" in text
    assert "c: NodeResourcesFit 87/88" in text
