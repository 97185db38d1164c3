"""dpcalc.api.Accountant: a training loop's accountant — N steps equal the one-shot function, phases equal their
composition, state saved and loaded gives the same numbers, bad states refused, concurrent steps all counted."""

from __future__ import annotations

import json
import math
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcalc import api
from dpcalc.errors import InputError

PHASES = [(1.1, 0.01, 300), (0.8, 0.02, 100), (2.0, 0.05, 50)]


def _specs(phases):
    return [f"subsampled-gaussian:sigma={s!r},q={q!r},count={t}" for s, q, t in phases]


@pytest.mark.parametrize("kind", ["pld", "rdp"])
def test_n_steps_equal_the_one_shot_function(kind):
    acc = api.Accountant(kind)
    for _ in range(500):
        acc.step(noise_multiplier=1.1, sample_rate=0.01)
    assert acc.history == [(1.1, 0.01, 500)] and len(acc) == 500
    one = api.sgd_epsilon(0.01, 1.1, 500, 1e-5, accountant=kind)
    got = acc.get_bracket(1e-5)
    assert got.value == float(one.value)
    if kind == "pld":
        assert (got.lower, got.estimate) == (float(one.lower), float(one.estimate))
    assert acc.get_epsilon(1e-5) == got.value


@pytest.mark.parametrize("kind", ["pld", "rdp"])
def test_phases_equal_their_composition(kind):
    acc = api.Accountant(kind)
    for s, q, t in PHASES:
        acc.step(noise_multiplier=s, sample_rate=q, steps=t)
    comp = api.compose(_specs(PHASES), delta=1e-5, method=kind)
    assert acc.get_epsilon(1e-5) == pytest.approx(float(comp.value), rel=1e-12)


@settings(max_examples=6, deadline=None)
@given(st.permutations(PHASES))
def test_phases_in_any_order_give_the_same_total(order):
    a, b = api.Accountant("rdp"), api.Accountant("rdp")
    for s, q, t in PHASES:
        a.step(noise_multiplier=s, sample_rate=q, steps=t)
    for s, q, t in order:
        b.step(noise_multiplier=s, sample_rate=q, steps=t)
    assert b.get_epsilon(1e-5) == pytest.approx(a.get_epsilon(1e-5), rel=1e-12)


def test_the_running_epsilon_never_decreases():
    acc = api.Accountant("rdp")
    seen = [acc.get_epsilon(1e-5)]
    assert seen == [0.0]
    for s, q, t in PHASES * 2:
        acc.step(noise_multiplier=s, sample_rate=q, steps=t)
        seen.append(acc.get_epsilon(1e-5))
    assert seen == sorted(seen) and seen[-1] > 0


@pytest.mark.parametrize("kind", ["pld", "rdp"])
def test_state_saved_and_loaded_gives_the_same_numbers(kind, tmp_path):
    acc = api.Accountant(kind, eps_error=0.05)
    for s, q, t in PHASES:
        acc.step(noise_multiplier=s, sample_rate=q, steps=t)
    path = tmp_path / "acc.json"
    path.write_text(acc.to_json())
    back = api.Accountant.from_json(path.read_text())
    assert back.history == acc.history and back.eps_error == 0.05
    assert back.get_bracket(1e-6) == acc.get_bracket(1e-6)
    fresh = api.Accountant()
    fresh.load_state_dict(json.loads(path.read_text()))
    assert fresh.get_bracket(1e-6) == acc.get_bracket(1e-6)


@pytest.mark.parametrize(
    "change,words",
    [
        ({"format": "opacus"}, "format"),
        ({"version": 2}, "version"),
        ({"extra": 1}, "unknown field 'extra'"),
        ({"history": [[1.0, 0.01]]}, "phase 1 must be"),
        ({"history": [[1.0, 0.01, -5]]}, "phase 1: steps"),
        ({"history": [[1.0, 0.01, 10], [float("nan"), 0.01, 10]]}, "phase 2: noise_multiplier"),
        ({"history": [[1.0, 1.5, 10]]}, "phase 1: sample_rate"),
        ({"history": [[True, 0.1, 10]]}, "phase 1: noise_multiplier"),
        ({"accountant": "moments"}, "accountant"),
    ],
)
def test_bad_states_are_refused_naming_the_fault(change, words):
    state = api.Accountant().state_dict()
    state.update(change)
    with pytest.raises(InputError, match=words.replace("(", r"\(")):
        api.Accountant.from_state(state)


def test_not_json_is_refused():
    with pytest.raises(InputError, match="not JSON"):
        api.Accountant.from_json("{history")


def test_bad_steps_are_refused():
    acc = api.Accountant()
    for kw, words in (
        ({"noise_multiplier": 0.0, "sample_rate": 0.1}, "noise_multiplier"),
        ({"noise_multiplier": 1.0, "sample_rate": 0.0}, "sample_rate"),
        ({"noise_multiplier": 1.0, "sample_rate": 0.1, "steps": 1.5}, "steps"),
    ):
        with pytest.raises(InputError, match=words):
            acc.step(**kw)
    assert len(acc) == 0


def test_concurrent_steps_are_all_counted():
    acc = api.Accountant()

    def run():
        for _ in range(500):
            acc.step(noise_multiplier=1.0, sample_rate=0.01)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert acc.history == [(1.0, 0.01, 2000)]


def test_replace_one_phases_need_rdp():
    acc = api.Accountant(neighbors="replace-one")
    acc.step(noise_multiplier=1.0, sample_rate=0.01, steps=10)
    assert math.isfinite(acc.get_epsilon(1e-5))  # one phase: sgd_epsilon's replace-one pld
    acc.step(noise_multiplier=2.0, sample_rate=0.01, steps=10)
    with pytest.raises(InputError, match="use rdp"):
        acc.get_epsilon(1e-5)
    rdp = api.Accountant("rdp", neighbors="replace-one")
    rdp.load_state_dict({**acc.state_dict(), "accountant": "rdp"})
    assert math.isfinite(rdp.get_epsilon(1e-5))
