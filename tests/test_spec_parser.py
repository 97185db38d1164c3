"""The MECHANISM spec parser (dpcalc.input.spec): canonical values, aliases, and one test per kind of mistake."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcalc.errors import InputError
from dpcalc.input.spec import KINDS, MAX_COUNT, parse_mechanism, parse_mechanisms


def test_every_kind_parses_with_defaults():
    assert parse_mechanism("gaussian:sigma=1.1").params == {"sigma": 1.1, "sensitivity": 1.0}
    assert parse_mechanism("laplace:scale=2").params == {"scale": 2.0, "sensitivity": 1.0}
    s = parse_mechanism("subsampled-gaussian:q=0.01,sigma=1,count=1000")
    assert s.params == {"q": 0.01, "sigma": 1.0, "sampling": "poisson"} and s.count == 1000
    assert parse_mechanism("zcdp:rho=0.5").params == {"rho": 0.5}
    d = parse_mechanism("dp:epsilon=0.1,delta=1e-6,count=50")
    assert d.params == {"epsilon": 0.1, "delta": 1e-6} and d.count == 50
    assert parse_mechanism("dp:epsilon=1").params["delta"] == 0.0


def test_randomized_response_epsilon_and_p_agree():
    a = parse_mechanism("randomized-response:epsilon=1")
    assert a.params["p"] == pytest.approx(math.e / (1 + math.e), rel=1e-15)
    b = parse_mechanism("randomized-response:p=0.75")
    assert b.params["epsilon"] == pytest.approx(math.log(3), rel=1e-15)


def test_aliases_and_spacing():
    s = parse_mechanism("  Gauss : sigma = 2 , sens=3 , count=1e3 ")
    assert (s.kind, s.params, s.count) == ("gaussian", {"sigma": 2.0, "sensitivity": 3.0}, 1000)
    assert parse_mechanism("rr:eps=1").kind == "randomized-response"
    assert parse_mechanism("sgm:sample_rate=0.1,noise_multiplier=2,sampling=fixed-size").params == {
        "q": 0.1,
        "sigma": 2.0,
        "sampling": "fixed-size",
    }
    assert parse_mechanism("laplace:b=2").params["scale"] == 2.0


@pytest.mark.parametrize(
    ("text", "token"),
    [
        ("gausian:sigma=1", "unknown kind 'gausian'"),
        ("gaussian:sigm=1", "unknown key 'sigm'"),
        ("laplace:sigma=1", "unknown key 'sigma'"),
        ("gaussian", "missing key 'sigma'"),
        ("gaussian:count=3", "missing key 'sigma'"),
        ("subsampled-gaussian:sigma=1", "missing key 'q'"),
        ("randomized-response:count=2", "missing key"),
        ("randomized-response:epsilon=1,p=0.7", "both given"),
        ("gaussian:sigma=abc", "bad value sigma='abc'"),
        ("gaussian:sigma=-1", "bad value sigma='-1'"),
        ("gaussian:sigma=0", "bad value sigma='0'"),
        ("gaussian:sigma=inf", "bad value sigma='inf'"),
        ("gaussian:sigma=nan", "bad value sigma='nan'"),
        ("laplace:scale=1,sensitivity=0", "bad value sensitivity='0'"),
        ("randomized-response:p=0.5", "bad value p='0.5'"),
        ("randomized-response:p=1", "bad value p='1'"),
        ("randomized-response:epsilon=0", "bad value epsilon='0'"),
        ("randomized-response:epsilon=1000", "bad value epsilon='1000'"),
        ("subsampled-gaussian:q=0,sigma=1", "bad value q='0'"),
        ("subsampled-gaussian:q=1.5,sigma=1", "bad value q='1.5'"),
        ("subsampled-gaussian:q=0.1,sigma=1,sampling=uniform", "bad value sampling='uniform'"),
        ("zcdp:rho=-0.1", "bad value rho='-0.1'"),
        ("dp:epsilon=1,delta=1", "bad value delta='1'"),
        ("dp:epsilon=-1", "bad value epsilon='-1'"),
        ("gaussian:sigma=1,count=0", "bad value count='0'"),
        ("gaussian:sigma=1,count=-3", "bad value count='-3'"),
        ("gaussian:sigma=1,count=2.5", "bad value count='2.5'"),
        ("gaussian:sigma=1,count=ten", "bad value count='ten'"),
        (f"gaussian:sigma=1,count={MAX_COUNT + 1}", "bad value count="),
        ("gaussian:sigma=1,sigma=2", "key 'sigma' given twice"),
        ("gaussian:sigma=1,count=2,count=3", "key 'count' given twice"),
        ("gaussian:sigma", "bad token 'sigma'"),
        ("gaussian:sigma=", "bad value sigma= (empty)"),
        ("gaussian:sigma=1,", "stray ','"),
        ("gaussian:", "nothing after ':'"),
    ],
)
def test_errors_name_the_spec_and_the_token(text, token):
    with pytest.raises(InputError) as info:
        parse_mechanism(text)
    msg = str(info.value)
    assert msg.startswith(f"mechanism {text.strip()!r}:"), msg
    assert token in msg, msg


def test_unknown_kind_lists_kinds_and_suggests():
    with pytest.raises(InputError, match="did you mean 'gaussian'") as info:
        parse_mechanism("gausian:sigma=1")
    for kind in KINDS:
        assert kind in str(info.value)


def test_empty_inputs():
    with pytest.raises(InputError, match="empty spec"):
        parse_mechanism("  ")
    with pytest.raises(InputError, match="at least one mechanism"):
        parse_mechanisms([])


def test_parse_mechanisms_reports_the_bad_one():
    with pytest.raises(InputError, match="'laplace:scale=x'"):
        parse_mechanisms(["gaussian:sigma=1", "laplace:scale=x"])


@settings(max_examples=60, deadline=None)
@given(
    sigma=st.floats(1e-3, 1e3),
    sens=st.floats(1e-3, 1e3),
    count=st.integers(1, MAX_COUNT),
)
def test_label_round_trips(sigma, sens, count):
    s = parse_mechanism(f"gaussian:sigma={sigma!r},sensitivity={sens!r},count={count}")
    again = parse_mechanism(s.label())
    assert (again.kind, again.params, again.count) == (s.kind, s.params, s.count)


@settings(max_examples=200, deadline=None)
@given(
    text=st.one_of(
        st.text(max_size=40),
        st.builds(
            lambda k, body: f"{k}:{body}",
            st.sampled_from([*KINDS, "rr", "sgm", "gauss", "x"]),
            st.text(alphabet="sigmaqpcountedlrh=,.0123456789-e_ ", max_size=40),
        ),
    )
)
def test_any_text_parses_or_raises_input_error(text):
    try:
        spec = parse_mechanism(text)
    except InputError as exc:
        assert str(exc).startswith("mechanism")
    else:
        assert spec.kind in KINDS and 1 <= spec.count <= MAX_COUNT
