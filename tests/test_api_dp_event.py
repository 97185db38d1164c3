"""DpEvents of dp-accounting itself, into dpcalc: the guide's ``dp_event_json`` helper (docs/guide/compose.md) writes the JSON that
``--dp-event`` reads (exactly what ``--write-dp-event`` writes), and ``dpcalc.api`` takes the event objects
directly, with the same answers as their specs and as the command line."""

import json
import re

import numpy as np
import pytest

from dpcalc import api, readme
from dpcalc.api.composition import as_specs
from dpcalc.cli import main
from dpcalc.errors import InputError

dp_event = pytest.importorskip("dp_accounting.dp_event")  # a test extra: CI has it


def _readme_helper():
    """``dp_event_json`` as the guide's compose page defines it (its python block, run)."""
    page = readme.GUIDE / "compose.md"
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S)
    [block] = [b for b in blocks if "def dp_event_json" in b]
    namespace = {}
    exec(compile(block, readme.name(page), "exec"), namespace)
    return namespace["dp_event_json"]


def _events():
    """(DpEvent, the specs it stands for) for every event class dpcalc reads."""
    e = dp_event
    sgm = e.PoissonSampledDpEvent(0.01, e.GaussianDpEvent(1.1))
    return [
        (e.SelfComposedDpEvent(sgm, 1000), ["subsampled-gaussian:q=0.01,sigma=1.1,count=1000"]),
        (e.GaussianDpEvent(np.float64(4.0)), ["gaussian:sigma=4"]),
        (e.LaplaceDpEvent(20.0), ["laplace:scale=20"]),
        (e.DiscreteLaplaceDpEvent(0.1, 2), ["discrete-laplace:scale=10,sensitivity=2"]),
        (e.RandomizedResponseDpEvent(2 / (1 + np.e), 2), ["randomized-response:epsilon=1"]),
        (
            e.SampledWithoutReplacementDpEvent(1000, 10, e.LaplaceDpEvent(5.0)),
            ["laplace:scale=5,q=0.01,sampling=fixed-size"],
        ),
        (
            e.TruncatedSubsampledGaussianDpEvent(10_000, 0.01, 150, 1.0),
            [
                "subsampled-gaussian:q=0.01,sigma=1,sampling=truncated-poisson,dataset_size=10000,"
                "max_batch_size=150"
            ],
        ),
        (
            e.MixtureOfGaussiansDpEvent(2.0, np.array([0.0, 1.0, 2.0]), [0.25, 0.5, 0.25]),
            ["mixture-gaussian:sigma=2,sensitivities=0|1|2,probs=0.25|0.5|0.25"],
        ),
        (e.ZCDpEvent(0.05, 0.0), ["zcdp:rho=0.05"]),
        (e.SingleEpochTreeAggregationDpEvent(4.0, [8, 16]), ["tree-aggregation:sigma=4,steps=16"]),
        (
            e.ComposedDpEvent(
                [
                    e.SelfComposedDpEvent(e.GaussianDpEvent(4.0), np.int64(10)),
                    e.NoOpDpEvent(),
                    e.SelfComposedDpEvent(e.LaplaceDpEvent(20.0), 5),
                ]
            ),
            ["gaussian:sigma=4,count=10", "laplace:scale=20,count=5"],
        ),
    ]


EVENTS = _events()
IDS = [type(ev).__name__ for ev, _ in EVENTS]


def test_readme_helper_writes_what_write_dp_event_writes(invoke):
    """The guide's helper gives, key for key, the JSON dpcalc writes for the same run."""
    helper = _readme_helper()
    event = dp_event.SelfComposedDpEvent(
        dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.1)), 1000
    )
    res = invoke(
        ["sgd-epsilon", "--sigma", "1.1", "--sample-rate", "0.01", "--steps", "1000", "--write-dp-event"]
    )
    assert res.exit_code == 0
    assert json.loads(helper(event)) == json.loads(res.stdout)
    res = invoke(["compose", "gaussian:sigma=4,count=10", "laplace:scale=20,count=5", "--write-dp-event"])
    event = dp_event.ComposedDpEvent(
        [
            dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(4.0), 10),
            dp_event.SelfComposedDpEvent(dp_event.LaplaceDpEvent(20.0), 5),
        ]
    )
    assert json.loads(helper(event)) == json.loads(res.stdout)


@pytest.mark.parametrize("event,specs", EVENTS, ids=IDS)
def test_readme_helper_json_is_read_as_the_events_specs(event, specs, runner):
    """dpcalc compose --dp-event reads the helper's JSON of every event class it accounts for (numpy values
    in the event too) as the specs the event stands for."""
    text = _readme_helper()(event)
    args = ["--delta", "1e-5", "--method", "rdp", "-f", "json"]
    from_event = runner.invoke(main, ["compose", "--dp-event", "-", *args], input=text, prog_name="dpcalc")
    from_specs = runner.invoke(main, ["compose", *specs, *args], prog_name="dpcalc")
    assert from_event.exit_code == 0, from_event.stderr
    assert from_specs.exit_code == 0, from_specs.stderr
    got, want = (json.loads(r.stdout)[0]["epsilon"] for r in (from_event, from_specs))
    assert got == pytest.approx(want, rel=1e-12)  # exact but for randomized response's ε, rounded up


def _parsed(mechanisms):
    return [(s.kind, s.params, s.count) for s in as_specs(mechanisms)]


@pytest.mark.parametrize("event,specs", EVENTS, ids=IDS)
def test_api_takes_a_dp_event_object(event, specs):
    """The API reads the event object as the specs it stands for (randomized response: its ε rounded up), so
    api.compose and api.rdp_curve answer for it as for them."""
    got, want = _parsed(event), _parsed(specs)
    if "randomized-response" in specs[0]:
        assert got[0][1]["epsilon"] == pytest.approx(want[0][1]["epsilon"], rel=1e-12)
        assert got[0][1]["epsilon"] >= want[0][1]["epsilon"]
    else:
        assert got == want
    assert api.compose(event, delta=1e-5, method="rdp").alpha is not None
    np.testing.assert_allclose(api.rdp_curve(event), api.rdp_curve(specs), rtol=1e-12)


def test_api_answers_for_a_dp_event_as_for_its_specs():
    """compose (pld, rdp), compose_tpr and rdp_curve of a ComposedDpEvent object: those of its specs."""
    event, specs = EVENTS[-1]
    for method in ("pld", "rdp"):
        assert api.compose(event, delta=1e-5, method=method) == api.compose(specs, delta=1e-5, method=method)
    got, want = api.compose_tpr(event, fpr=1e-3), api.compose_tpr(specs, fpr=1e-3)
    np.testing.assert_array_equal([got.value, got.lower], [want.value, want.lower])
    np.testing.assert_array_equal(api.rdp_curve(event), api.rdp_curve(specs))


def test_api_takes_events_beside_specs_and_their_json():
    event = dp_event.SelfComposedDpEvent(
        dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.1)), 1000
    )
    mix = [event, "laplace:scale=20,count=5"]
    want = api.compose(
        ["subsampled-gaussian:q=0.01,sigma=1.1,count=1000", "laplace:scale=20,count=5"], delta=1e-5
    )
    assert api.compose(mix, delta=1e-5) == want
    obj = json.loads(_readme_helper()(event))  # the JSON object a --dp-event file holds
    assert api.compose([obj, "laplace:scale=20,count=5"], delta=1e-5) == want


def test_dp_accounting_agrees_with_the_api_on_its_own_event():
    """dp-accounting's own PLD accountant lands inside a hair of dpcalc's certified bracket on the same object."""
    from dp_accounting.pld import pld_privacy_accountant

    event = dp_event.SelfComposedDpEvent(
        dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.1)), 1000
    )
    acc = pld_privacy_accountant.PLDAccountant()
    acc.compose(event)
    theirs = acc.get_epsilon(1e-5)
    ours = api.compose(event, delta=1e-5)
    assert ours.lower <= theirs and abs(theirs - ours.value) < 1e-3 * ours.value


@pytest.mark.parametrize(
    "event,where",
    [
        (
            dp_event.ComposedDpEvent([dp_event.GaussianDpEvent(1.0), dp_event.NonPrivateDpEvent()]),
            "events[1]",
        ),
        (dp_event.UnsupportedDpEvent(), "UnsupportedDpEvent"),
        (dp_event.SampledWithReplacementDpEvent(100, 10, dp_event.GaussianDpEvent(1.0)), "with replacement"),
        (dp_event.RepeatAndSelectDpEvent(dp_event.GaussianDpEvent(1.0), 10, 1), "tuning"),
        (dp_event.NoOpDpEvent(), "no mechanism"),
    ],
    ids=["non-private", "unsupported", "with-replacement", "repeat-and-select", "no-op"],
)
def test_api_refuses_an_event_it_cannot_account_for(event, where):
    with pytest.raises(InputError, match=re.escape(where)):
        api.compose(event, delta=1e-5)


def test_api_names_the_place_of_a_refused_event_in_a_list():
    with pytest.raises(InputError, match=r"mechanisms\[1\] \(NonPrivateDpEvent\)"):
        api.compose(["gaussian:sigma=1", dp_event.NonPrivateDpEvent()], delta=1e-5)
