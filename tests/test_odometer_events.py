"""EVENTS parsing (dpcalc.input.events): modes, line numbers in errors, fuzzing."""

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcalc.errors import DpcalcWarning, InputError
from dpcalc.input.events import iter_events


def parse(text):
    return list(iter_events(text.splitlines(keepends=True)))


def test_sgm_rows_with_and_without_steps_and_extra_columns():
    with pytest.warns(DpcalcWarning, match=r"EVENTS line 1: unknown columns 'epoch', 'loss' ignored"):
        evs = parse(
            "epoch,sample_rate,noise_multiplier,steps,loss\n1,0.01,1.1,98,0.5\n\n# a comment\n2,0.02,0.9,,0.4\n"
        )
    assert [(e.line_no, e.sample_rate, e.noise_multiplier, e.steps) for e in evs] == [
        (2, 0.01, 1.1, 98),
        (5, 0.02, 0.9, 1),
    ]


def test_mechanism_rows_quoted_or_as_a_single_column():
    evs = parse('mechanism\ngaussian:sigma=2,count=3\n"laplace:scale=1"\n')
    assert [e.mechanism for e in evs] == ["gaussian:sigma=2,count=3", "laplace:scale=1"]
    assert evs[0].spec.count == 3 and evs[0].spec.kind == "gaussian"
    with pytest.warns(DpcalcWarning, match=r"EVENTS line 1: unknown column 'step' ignored"):
        evs = parse('step,mechanism\n1,"gaussian:sigma=2,count=3"\n')
    assert evs[0].mechanism == "gaussian:sigma=2,count=3" and evs[0].line_no == 2


@pytest.mark.parametrize(
    "text, line, what",
    [
        ("sample_rate,noise_multiplier\n0.01,1\n0.01\n", 3, "expected 2 fields"),
        ("sample_rate,noise_multiplier\n0.01,1\n1.5,1\n", 3, "sample_rate"),
        ("sample_rate,noise_multiplier\n0,1\n", 2, "sample_rate"),
        ("sample_rate,noise_multiplier\n0.1,-1\n", 2, "noise_multiplier"),
        ("sample_rate,noise_multiplier\n0.1,nan\n", 2, "noise_multiplier"),
        ("sample_rate,noise_multiplier\n0.1,abc\n", 2, "noise_multiplier"),
        ("sample_rate,noise_multiplier,steps\n0.1,1,2.5\n", 2, "steps"),
        ("sample_rate,noise_multiplier,steps\n0.1,1,0\n", 2, "steps"),
        ("mechanism\ngaussian:sigma=1\ngausian:sigma=1\n", 3, "unknown kind"),
        ("mechanism\n\n\ngaussian:sigma=-1\n", 4, "sigma"),
        ("mechanism,sample_rate\nx,1\n", 1, "not both"),
        ("alpha,rdp\n2,0.1\n", 1, "expected a header"),
        ("sample_rate,sample_rate,noise_multiplier\n", 1, "repeats"),
        ('mechanism,x\n"gaussian:sigma=1\n', 2, "CSV"),
    ],
)
def test_errors_name_the_line(text, line, what):
    unknown = text.startswith("mechanism,x\n")  # warned about (line 1) before the error (line 2)
    with pytest.warns(DpcalcWarning, match="unknown column 'x'") if unknown else contextlib.nullcontext():
        with pytest.raises(InputError) as info:
            parse(text)
    assert f"EVENTS line {line}:" in str(info.value) and what in str(info.value)


def test_empty_input_has_no_header():
    with pytest.raises(InputError, match="no header"):
        parse("# only a comment\n\n")


def test_rows_are_parsed_lazily():
    """A row is available before the next line is even read (streaming)."""
    read = []

    def lines():
        for line in ["sample_rate,noise_multiplier\n", "0.01,1\n", "0.02,1\n"]:
            read.append(line)
            yield line

    it = iter_events(lines())
    first = next(it)
    assert first.sample_rate == 0.01 and len(read) == 2


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.text(max_size=40), max_size=8),
    st.sampled_from(["mechanism", "sample_rate,noise_multiplier,steps"]),
)
def test_fuzzed_rows_parse_or_fail_with_a_line_number(rows, header):
    text = header + "\n" + "\n".join(rows) + "\n"
    try:
        parse(text)
    except InputError as exc:
        assert "EVENTS line " in str(exc)
