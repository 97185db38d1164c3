"""Fuzzing every CSV reader through the command line (events, ``--curve``, ledgers read back) with
random bytes, truncated lines, BOMs, mixed line ends and huge fields: never a traceback, never an
"internal error", never exit 1 for bad input (a damaged ledger is the documented exit 1), exactly
one error line, and an events or curve file in error leaves stdout empty."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpcalc.ledger import file as L

BOM = b"\xef\xbb\xbf"
ENDS = [b"\n", b"\r\n", b"\r"]
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

EVENT_HEADERS = [
    b"mechanism",
    b"sample_rate,noise_multiplier",
    b"sample_rate,noise_multiplier,steps",
    b"epoch,sample_rate,noise_multiplier,steps,loss",
    b"step,mechanism",
    b"alpha,rdp",
]
EVENT_CELLS = [
    b"gaussian:sigma=2",
    b'"gaussian:sigma=2,count=3"',
    b"laplace:scale=1",
    b"gausian:sigma=1",
    b"dp:epsilon=1,delta=1e-6",
    b"0.01",
    b"1",
    b"100",
    b"nan",
    b"-1",
    b"",
    b'"',
    b"#",
    b"\xff",
    b"\xc3",
    b"\x00",
    "é".encode(),
]
CURVE_HEADERS = [b"alpha,rdp", b"rdp,alpha,note", b"alpha", b"ALPHA , RDP", b"x,y"]
CURVE_CELLS = [
    b"2",
    b"4",
    b"8.5",
    b"0.5",
    b"1",
    b"0",
    b"inf",
    b"nan",
    b"-1",
    b"1e300",
    b"",
    b'"',
    b"x",
    b"\xfe",
]


def huge() -> st.SearchStrategy[bytes]:
    return st.sampled_from([b"1" * 200_000, b'"' + b"z" * 150_000, b"y" * 120_000])


def cells(choices):
    return st.one_of(st.sampled_from(choices), st.binary(max_size=6), huge())


@st.composite
def documents(draw, headers, choices):
    """A CSV-ish document: maybe a BOM, a header, rows of cells, mixed line ends, maybe truncated,
    maybe random bytes spliced in."""
    bom = draw(st.sampled_from([b"", BOM]))
    header = draw(st.sampled_from(headers))
    rows = draw(st.lists(st.lists(cells(choices), min_size=1, max_size=4).map(b",".join), max_size=5))
    parts = [header, *rows]
    out = bom
    for part in parts:
        out += part + draw(st.sampled_from(ENDS))
    if draw(st.booleans()):
        out = out[: draw(st.integers(0, len(out)))]  # a truncated last line
    if draw(st.booleans()):
        at = draw(st.integers(0, len(out)))
        out = out[:at] + draw(st.binary(max_size=20)) + out[at:]
    return out


def well_behaved(res, allowed=(0, 2)):
    """The contract for any input: no traceback, a known exit status, one-line errors."""
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr, res.stderr
    assert res.exit_code in allowed, res.stderr
    lines = res.stderr.splitlines()
    assert all(ln.startswith(("Error: ", "Warning: ", "Note: ")) for ln in lines), res.stderr
    errors = [ln for ln in lines if ln.startswith("Error: ")]
    if res.exit_code in (1, 2, 3):
        assert len(errors) == 1 and lines[-1] == errors[0], res.stderr
        assert res.exit_code != 3 or errors[0].startswith("Error: budget exceeded")
    else:
        assert not errors
    return errors[0] if errors else None


ODOMETER = ["--delta", "1e-6", "--alphas", "2,8,32", "-f", "csv", "--conversion", "mironov"]


@FUZZ
@given(documents(EVENT_HEADERS, EVENT_CELLS))
def test_fuzzed_events_on_stdin(invoke, data):
    res = invoke(["odometer", "-", *ODOMETER], input=data)
    error = well_behaved(res)
    if error:
        assert error.startswith("Error: EVENTS")


@FUZZ
@given(documents(EVENT_HEADERS, EVENT_CELLS))
def test_fuzzed_events_file_is_checked_whole(invoke, tmp_path_factory, data):
    path = tmp_path_factory.mktemp("ev") / "events.csv"
    path.write_bytes(data)
    res = invoke(["odometer", str(path), *ODOMETER])
    error = well_behaved(res)
    if error:  # nothing written, and the error is the first line on stderr
        assert res.stdout == "" and res.stderr.splitlines()[0] == error and str(path) in error


@FUZZ
@given(documents(CURVE_HEADERS, CURVE_CELLS), st.booleans())
def test_fuzzed_curves(invoke, tmp_path_factory, data, from_stdin):
    if from_stdin:
        res = invoke(["convert", "--curve", "-", "--delta", "1e-5", "-f", "csv"], input=data)
    else:
        path = tmp_path_factory.mktemp("cv") / "curve.csv"
        path.write_bytes(data)
        res = invoke(["convert", "--curve", str(path), "--delta", "1e-5", "-f", "csv"])
    error = well_behaved(res)
    if error:
        assert res.stdout == "" and "--curve " in error


def _valid_ledger(n: int, newline: bytes = b"\n", bom: bool = False) -> bytes:
    header = L.Header(1e-6, (2.0, 8.0, 32.0), "paper")
    lines = [header.line()]
    prev = lines[0]
    for i in range(n):
        t, m = f"2026-11-21T20:00:{i:02d}Z", f"gaussian:sigma={3 + i}"
        prev = L.checksum(prev, t, m)
        lines.append(f"{t}\t{m}\t{prev}")
    return (BOM if bom else b"") + b"".join(line.encode() + newline for line in lines)


@st.composite
def ledgers(draw):
    data = _valid_ledger(
        draw(st.integers(0, 3)), draw(st.sampled_from([b"\n", b"\r\n"])), draw(st.booleans())
    )
    how = draw(st.sampled_from(["intact", "truncate", "splice", "replace", "junk"]))
    if how == "truncate":
        data = data[: draw(st.integers(0, len(data)))]
    elif how == "splice":
        at = draw(st.integers(0, len(data)))
        data = (
            data[:at]
            + draw(st.one_of(st.binary(max_size=8), st.sampled_from(ENDS + [BOM]), huge()))
            + data[at:]
        )
    elif how == "replace" and data:
        at = draw(st.integers(0, len(data) - 1))
        data = data[:at] + bytes([draw(st.integers(0, 255))]) + data[at + 1 :]
    elif how == "junk":
        data = draw(st.binary(max_size=300))
    return data


@FUZZ
@given(ledgers())
def test_fuzzed_ledgers_read_back(invoke, tmp_path_factory, data):
    path = tmp_path_factory.mktemp("lg") / "fuzz.ledger"
    path.write_bytes(data)
    for args in (
        [],
        ["-q"],
        ["--add", "gaussian:sigma=3", "--check"],
        ["--add", "gaussian:sigma=3", "--max-epsilon", "0.01"],
    ):
        res = invoke(["odometer", "--ledger", str(path), "-f", "csv", *args])
        error = well_behaved(res, allowed=(0, 1, 2, 3))
        if res.exit_code == 1:  # only damage is exit 1, and the file is named and left alone
            assert f"ledger {path}" in error and ("not changed" in error or "incomplete append" in error)
        assert path.read_bytes() == data
