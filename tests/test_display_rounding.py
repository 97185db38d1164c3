"""One rounding rule for every column a person reads: upper bounds up, lower bounds down, the rest to nearest.

Every column of every schema is classified (dpcalc.result), and every table cell of a representative set
of invocations of every command is compared with the CSV value of the same run: an upper-bound cell is
never below it, a lower-bound cell never above it, any other number within rounding."""

import csv
import io
import math
import re

import pytest

from dpcalc.commands.attack_schema import RISK_SCHEMAS, TRADEOFF_SCHEMAS
from dpcalc.commands.schema import ADAPTIVE_SCHEMAS, CURVE_SCHEMAS, SCHEDULE_SCHEMAS, SCHEMAS
from dpcalc.render import MARK_RTOL
from dpcalc.render.cells import INPUT_OR_ANSWER, rounded
from dpcalc.result import (
    ESTIMATE_COLUMNS,
    EXACT_COLUMNS,
    LOWER_COLUMNS,
    TABLE_ALIASES,
    UPPER_COLUMNS,
    rounding,
)

CLASSES = {
    "upper": UPPER_COLUMNS,
    "lower": LOWER_COLUMNS,
    "estimate": ESTIMATE_COLUMNS,
    "exact": EXACT_COLUMNS,
}


def schema_columns() -> set[str]:
    return {
        name
        for schemas in (
            SCHEMAS,
            CURVE_SCHEMAS,
            TRADEOFF_SCHEMAS,
            SCHEDULE_SCHEMAS,
            RISK_SCHEMAS,
            ADAPTIVE_SCHEMAS,
        )
        for columns in schemas.values()
        for name, _ in columns
    }


def test_every_schema_column_is_classified_exactly_once():
    for name in sorted(schema_columns()):
        homes = [k for k, names in CLASSES.items() if name in names]
        assert len(homes) == 1, (
            f"{name!r} must be in exactly one of {list(CLASSES)} (dpcalc/result.py): {homes}"
        )


def test_no_classified_column_is_stale():
    known = schema_columns()
    for kind, names in CLASSES.items():
        assert names <= known, (kind, sorted(names - known))


#: columns whose meaning mentions a bound without being one (a flag, a probability, a label)
_MENTION_ONLY = {"confidence", "valid", "bound", "method"}


@pytest.mark.parametrize(
    "schemas",
    [SCHEMAS, CURVE_SCHEMAS, TRADEOFF_SCHEMAS, SCHEDULE_SCHEMAS, RISK_SCHEMAS, ADAPTIVE_SCHEMAS],
    ids=["main", "curve", "tradeoff", "schedule", "risk", "adaptive"],
)
def test_the_classification_agrees_with_each_documented_meaning(schemas):
    """Read independently of dpcalc.result: a column documented as an upper bound (or upper end) rounds
    up, one documented as a lower bound (or lower end) rounds down, an estimate or approximation to
    nearest."""
    for command, columns in schemas.items():
        for name, meaning in columns:
            if name in _MENTION_ONLY:
                continue
            if re.search(r"upper bound|upper end", meaning):
                want = "up"
            elif re.search(r"lower bound|lower end", meaning):
                want = "down"
            elif re.search(r"estimate|approximation|not a bound", meaning):
                want = "nearest"
            else:
                continue
            assert rounding(name) == want, f"{command} {name}: {meaning!r} but rounded {rounding(name)}"


def test_bound_columns_round_to_their_safe_side():
    assert rounding("tpr") == "up" and rounding("tpr_upper") == "up"
    assert rounding("epsilon_lower") == "down" and rounding("epsilon_estimate") == "nearest"
    assert rounded(0.10757940694812787, "up") == "0.10758"  # the tpr: not 0.107579
    assert rounded(2.26684095e-05, "up") == "2.26685e-05"
    assert rounded(0.10757940694812787, "down") == "0.107579"
    assert rounded(0.10757940694812787, "nearest") == "0.107579"


# -- every table cell against its CSV value --------------------------------------------------------
CURVE = "docs/examples/sgd-curve.csv"
LANGEVIN = (
    "langevin --sigma 0.02 --sensitivity 4 --lr 0.02 --strong-convexity 1 --smoothness 1 --dataset-size 5000"
)
ITERATE = "iterate --sigma 5 --lipschitz 1 --lr 0.05 --steps 100"
AUDIT = "audit --tp 60 --fn 940 --fp 18 --tn 982 --delta 1e-5"
SGD = "sgd-epsilon --sample-rate 0.01 --delta 1e-5"
INVOCATIONS = [
    "convert --alpha 2 --rdp 0.6736 --fpr 0.01",
    "convert --alpha 32 --rdp 0.4734 --fpr 1e-05",
    "convert --alpha 2,4,8 --rdp 0.5,1 --delta 1e-5,1e-8 --method all",
    "convert --alpha 10 --rdp 0.5 --epsilon 1 --method all",
    "convert --from dp --alpha 2,10 --epsilon 1 --delta 1e-5 --method all",
    f"convert --curve {CURVE} --delta 1e-5,1e-6",
    f"convert --curve {CURVE} --fpr 0.001,0.01",
    "compose gaussian:sigma=2,count=10 laplace:scale=3 --delta 1e-5,1e-6 --method all",
    "compose dp:epsilon=1,count=10 --delta 1e-5 --method all",
    "compose gaussian:sigma=2,count=10 laplace:scale=3 --epsilon 1 --method all",
    "compose gaussian:sigma=10,count=100 --fpr 1e-6,1e-3 --method all",
    "compose subsampled-gaussian:sigma=1,q=0.01,count=100 gaussian:sigma=4 --prior 0.1,0.5 --method all",
    "convert --from dp --epsilon 1 --delta 1e-3 --advantage",
    "compose gaussian:count=10 --epsilon 1,2 --delta 1e-5 --method all",
    "compose laplace:count=10 --epsilon 1 --delta 1e-5 --method all",
    "compose randomized-response:count=10 --epsilon 1 --delta 1e-5 --method all",
    "compose gaussian:sigma=2,count=10 --rdp-curve --alphas 2,4,8",
    f"{SGD} --sigma 1.1 --steps 1000 --method all",
    "sgd-epsilon --noise-multiplier 1.1 --batch-size 256 --dataset-size 60000 --epochs 60 --delta 1e-5",
    "sgd-epsilon --noise-multiplier 1.1 --batch-size 256 --dataset-size 60000 --epochs 60 --delta 1e-5 "
    "--method all",
    "sgd-epsilon --schedule docs/examples/schedule-find.csv --delta 1e-5 --target-epsilon 3 --method all",
    "sgd-epsilon --sample-rate 0.01 --sigma 1.1 --steps 100,1000 --fpr 0.001,0.01 --method all",
    f"{SGD} --sigma 1.1 --steps 1000 --rdp-curve --alphas 2,8,32",
    f"{SGD} --steps 1000 --target-epsilon 1,3 --method all",
    f"{SGD} --sigma 1.1 --target-epsilon 1,3 --method all",
    "sgd-epsilon --sigma 1.1 --steps 1000 --delta 1e-5 --target-epsilon 3 --method all",
    "sgd-epsilon --sigma 1.1 --dataset-size 60000 --epochs 60 --delta 1e-5 --target-epsilon 3 --method all",
    "sgd-epsilon --sigma 1 --batch-size 100 --dataset-size 10000 --steps 100 --delta 1e-5 --sampling fixed-size "
    "--method all",
    f"{ITERATE} --delta 1e-5,1e-6",
    f"{ITERATE} --epsilon 1",
    f"{ITERATE} --alpha 2,5",
    f"{ITERATE} --rdp-curve --alphas 2,4,4.5",
    f"{LANGEVIN} --steps 100,1000 --delta 1e-5",
    f"{LANGEVIN} --steps 100 --alpha 30",
    f"{LANGEVIN} --steps 100 --rdp-curve --alphas 2,30",
    f"{AUDIT} --claimed-epsilon 0.8714356973419374",
    f"{AUDIT} --sigma 1.1 --sample-rate 0.004267 --steps 1000",
    "audit --input docs/examples/audits.csv --delta 1e-5 --claimed-epsilon 0.8714356973419374",
    "audit --canaries 1000 --guesses 100 --correct 75 --delta 1e-5",
    "odometer --event gaussian:sigma=10,count=5 --event gaussian:sigma=3 --delta 1e-6",
    "odometer --event gaussian:sigma=10,count=5 --event gaussian:sigma=3 --event gaussian:sigma=30 --delta 1e-6 "
    "--filter 3",
]

BOX = "│┃"


def _csv(text):
    return list(csv.DictReader(io.StringIO(text)))


def _cells_of_box_table(text):
    """A rich table: {column: [cell per row]} (one row: the ``quantity | value`` rows) and the caption."""
    lines = text.split("\n")
    body = [ln for ln in lines if ln and ln[0] in BOX]
    rows = [[c.strip() for c in re.split("[│┃]", ln)[1:-1]] for ln in body]
    end = max(i for i, ln in enumerate(lines) if ln.startswith("└"))
    caption = " ".join(lines[end + 1 :])
    if rows[0] == ["quantity", "value"]:
        return {q: [v] for q, v in rows[1:]}, caption, 1
    header, cells = rows[0], rows[1:]
    return {h: [r[i] for r in cells] for i, h in enumerate(header)}, caption, len(cells)


def _cells_of_plain_table(text):
    """The odometer's streamed table: a header line and whitespace-separated cells."""
    lines = [ln.split() for ln in text.strip("\n").split("\n")]
    header = lines[0]
    return {h: [r[i] for r in lines[1:]] for i, h in enumerate(header)}, "", len(lines) - 1


def _number(cell):
    """A table cell as (value, mark): the mark ``⁺``/``⁻`` of a bound just beside the decimal shown."""
    mark = cell[-1] if cell[-1:] in ("⁺", "⁻") else ""
    return float(cell.rstrip("⁺⁻")), mark


def _kind(name, line):
    """How column ``name`` rounds in the table of ``line``: by its class, except that the noise, sample
    rate, epochs or per-release ε a search did not find (no ``--target`` in the line) are inputs, to
    nearest."""
    if name in INPUT_OR_ANSWER and "--target" not in line:
        return "nearest"
    return rounding(name)


def _check(name, cell, text, where, kind=None):
    if text == "":
        assert cell in ("—", ""), (where, name, cell)
        return
    try:
        v = float(text)
    except ValueError:
        return  # a name or a note
    if text in ("true", "false"):
        return
    shown, mark = _number(cell)
    if math.isinf(v):
        assert shown == v, (where, name, cell, text)
        return
    kind = kind or rounding(name)
    if mark:  # x⁺: the bound lies just above x (x⁻: just below), within MARK_RTOL
        assert (kind, mark) in (("up", "⁺"), ("down", "⁻")), (where, name, cell)
        assert abs(v - shown) <= MARK_RTOL * abs(v) and (v > shown if mark == "⁺" else v < shown), (
            where,
            name,
        )
        return
    if kind == "up":
        assert shown >= v, f"{where}: upper bound {name} shown as {cell}, below {text}"
    elif kind == "down":
        assert shown <= v, f"{where}: lower bound {name} shown as {cell}, above {text}"
    assert abs(shown - v) <= 1e-5 * abs(v), f"{where}: {name} shown as {cell} for {text}"


@pytest.mark.parametrize("line", INVOCATIONS, ids=[" ".join(s.split()[:4]) for s in INVOCATIONS])
def test_every_table_cell_is_its_csv_value_rounded_to_the_safe_side(invoke, line):
    args = line.split()
    got_csv = invoke([*args, "-f", "csv"])
    assert got_csv.exit_code in (0, 3), got_csv.stderr  # 3: an audit that proves more than the claim
    got_table = invoke([*args, "-f", "table"])
    assert got_table.exit_code == got_csv.exit_code, got_table.stderr
    assert "internal error" not in got_table.stderr
    rows = _csv(got_csv.stdout)
    text = got_table.stdout
    parse = _cells_of_box_table if any(ch in text for ch in BOX) else _cells_of_plain_table
    cells, caption, n = parse(text)
    assert n == len(rows), text
    checked = 0
    for name in rows[0]:
        values = [r[name] for r in rows]
        if name in cells:
            for i, (cell, value) in enumerate(zip(cells[name], values), start=1):
                _check(name, cell, value, f"{line} (row {i})", _kind(name, line))
                checked += _kind(name, line) != "nearest" and value != ""
            continue
        if all(v == "" for v in values):
            continue  # an empty column: left out of a table of several rows
        if name in TABLE_ALIASES and values == [r[TABLE_ALIASES[name]] for r in rows]:
            continue  # an alias of a column shown (tpr_upper is tpr)
        item = re.search(rf"(?:^|, ){re.escape(name)} = (\S+?)(?:,|$| )", caption)
        if item is not None:  # the same value on every row: in the caption
            assert len(set(values)) == 1, (line, name)
            _check(name, item.group(1), values[0], f"{line} (caption)", _kind(name, line))
            checked += _kind(name, line) != "nearest"
            continue
        # a column left out because it repeats another one-to-one (accountant beside method)
        assert any(
            other in cells and all(r[name] == r[other] or r[name] in r[other] for r in rows)
            for other in rows[0]
            if other != name
        ), f"{line}: column {name} is neither shown nor a repeat: {text}"
    assert checked, f"{line}: no bound column compared"
