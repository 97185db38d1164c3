"""Shell completion of MECHANISM specs: kinds, then their keys, then fixed values; from a table generated
from the catalogue (its freshness is checked by tests/test_generated.py; here, that it says what the
catalogue says)."""

import os
import subprocess
import sys

import pytest

from dpcalc.cli._kinds import ALIASES, KINDS
from dpcalc.cli.spec_complete import candidates
from dpcalc.engine.mechanisms.catalogue import CATALOGUE
from dpcalc.input.spec import parse_mechanism


def test_table_lists_every_kind_and_alias_of_the_catalogue():
    assert list(KINDS) == list(CATALOGUE)
    assert ALIASES == {a: m.kind for m in CATALOGUE.values() for a in m.aliases}


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_key_offered_is_one_the_parser_accepts(kind):
    """A spec that names a key the table offers parses past the key (an unknown key fails differently)."""
    for key in KINDS[kind]:
        try:
            parse_mechanism(f"{kind}:{key}=@")
        except Exception as exc:  # a bad value (or a missing key), never "unknown key"
            assert "unknown key" not in str(exc), (kind, key, exc)


@pytest.mark.parametrize(
    "typed,expected",
    [
        ("ga", ["gaussian:"]),
        ("dis", ["discrete-gaussian:", "discrete-laplace:"]),
        ("LAP", ["laplace:"]),
        ("laplace:sc", ["laplace:scale="]),
        ("laplace:scale=1,s", ["laplace:scale=1,sensitivity=", "laplace:scale=1,sampling="]),
        ("sgm:q=0.1,sampling=f", ["sgm:q=0.1,sampling=fixed-size"]),
        ("gauss:sigma=1,count=2,sens", ["gauss:sigma=1,count=2,sensitivity="]),
        ("bogus:", []),
        ("@fi", []),
    ],
)
def test_candidates(typed, expected):
    assert candidates(typed) == expected


def test_keys_already_given_are_not_offered_again():
    offered = candidates("laplace:scale=1,")
    assert "laplace:scale=1,scale=" not in offered and "laplace:scale=1,count=" in offered


@pytest.mark.parametrize(
    "words,cword,expected",
    [
        ("dpcalc compose ex", 2, "plain,exponential:"),
        ("dpcalc odometer --ledger x --add tree", 5, "plain,tree-aggregation:"),
    ],
)
def test_through_the_shell_protocol(words, cword, expected):
    env = dict(os.environ, COMP_WORDS=words, COMP_CWORD=str(cword), _DPCALC_COMPLETE="bash_complete")
    out = subprocess.run(
        [sys.executable, "-c", "import sys; sys.argv = ['dpcalc']; from dpcalc.cli import main; main()"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.stdout.split() == [expected]
