"""Every command, over extreme but valid values and over random spec files: it computes or says in one
line why it cannot — never a traceback, never "internal error", never exit 1 for bad input."""

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

EXTREME = st.sampled_from(["1e-300", "1e-100", "1e-12", "0.5", "1", "3", "1e6", "1e100", "1e300"])
PROB = st.sampled_from(["1e-300", "1e-100", "1e-12", "1e-5", "0.3", "0.999999"])
STEPS = st.sampled_from(["1", "2", "1000", "1000000", "1000000000000"])


# numpy's RuntimeWarnings as the command line sees them (the suite turns them into errors elsewhere);
# none may reach the user's stderr either
pytestmark = pytest.mark.filterwarnings("default::RuntimeWarning")


def _clean(res):
    assert "RuntimeWarning" not in res.stderr, res.stderr
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr, res.stderr
    assert res.exit_code in (0, 2, 3), res.stderr
    if res.exit_code == 2:
        assert res.stdout == "" and res.stderr.startswith("Error: ") and res.stderr.count("\n") == 1


FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@FAST
@given(alpha=st.sampled_from(["1.0000001", "1.5", "10", "1e4", "1e6"]), rdp=EXTREME, delta=PROB)
def test_convert(invoke, alpha, rdp, delta):
    _clean(invoke(["convert", "--alpha", alpha, "--rdp", rdp, "--delta", delta, "--method", "all"]))
    _clean(invoke(["convert", "--from", "dp", "--alpha", alpha, "--epsilon", rdp, "--delta", delta]))


@FAST
@given(
    kind=st.sampled_from(
        [
            "gaussian:sigma={}",
            "laplace:scale={}",
            "rr:epsilon={}",
            "zcdp:rho={}",
            "dp:epsilon={}",
            "sgm:q=0.01,sigma={}",
        ]
    ),
    v=EXTREME,
    delta=PROB,
)
def test_compose(invoke, kind, v, delta):
    _clean(invoke(["compose", kind.format(v), "--delta", delta, "--method", "all"]))


@FAST
@given(sigma=EXTREME, q=st.sampled_from(["1e-12", "1e-4", "0.01", "0.5", "1"]), steps=STEPS, delta=PROB)
def test_sgd_epsilon(invoke, sigma, q, steps, delta):
    _clean(invoke(["sgd-epsilon", "--sigma", sigma, "--sample-rate", q, "--steps", steps, "--delta", delta]))


@FAST
@given(sigma=EXTREME, lip=EXTREME, lr=EXTREME, steps=STEPS, delta=PROB)
def test_iterate(invoke, sigma, lip, lr, steps, delta):
    args = ["iterate", "--sigma", sigma, "--lipschitz", lip, "--lr", lr, "--steps", steps, "--delta", delta]
    _clean(invoke(args))


@FAST
@given(sigma=EXTREME, sens=EXTREME, steps=STEPS, delta=PROB, n=st.sampled_from(["1", "1000", "1000000000"]))
def test_langevin(invoke, sigma, sens, steps, delta, n):
    args = [
        "langevin",
        "--sigma",
        sigma,
        "--sensitivity",
        sens,
        "--lr",
        "0.1",
        "--strong-convexity",
        "0.5",
        "--smoothness",
        "1",
        "--dataset-size",
        n,
        "--steps",
        steps,
        "--delta",
        delta,
        "--alpha",
        "2",
    ]
    _clean(invoke(args))


@FAST
@given(v=EXTREME, delta=PROB)
def test_odometer(invoke, v, delta):
    _clean(
        invoke(
            ["odometer", "--event", f"gaussian:sigma={v}", "--event", f"laplace:scale={v}", "--delta", delta]
        )
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.binary(max_size=300)
    | st.lists(
        st.sampled_from(
            [
                b"gaussian:sigma=1",
                b"\xef\xbb\xbf",
                b"\r\n",
                b"\n",
                b"\r",
                b"#",
                b"laplace:scale=",
                b",count=3",
                b"\xff",
                b"x" * 2000,
                b"rr:p=0.7",
                b" ",
            ]
        ),
        max_size=12,
    ).map(b"".join)
)
def test_spec_files_of_random_bytes(invoke, tmp_path_factory, data):
    path = os.path.join(tmp_path_factory.mktemp("specs"), "specs.txt")
    with open(path, "wb") as fh:
        fh.write(data)
    _clean(invoke(["compose", f"@{path}", "--delta", "1e-5", "--method", "rdp"]))
    _clean(invoke(["compose", "-", "--delta", "1e-5", "--method", "rdp"], input=data))
