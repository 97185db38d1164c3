"""``dpcalc audit``: what an attack proved about ε, beside what the accountant claims (docs/math.md §11).

:func:`audit` checks the inputs, asks :mod:`dpcalc.engine.audit` for the bounds and packs them into a
:class:`~dpcalc.result.Result` with the columns of ``SCHEMAS["audit"]``.
"""

from __future__ import annotations

import itertools
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dpcalc.commands import noise_std
from dpcalc.commands.audit import claim as audit_claim
from dpcalc.commands.audit.claim import exceeded  # noqa: F401  (the command line's verdict)
from dpcalc.commands.audit.plot import plot_spec
from dpcalc.commands.schema import conform
from dpcalc.engine.audit import counts, gdp, scores
from dpcalc.engine.grid import product
from dpcalc.errors import InputError
from dpcalc.input.text import csv_records, open_lines
from dpcalc.result import Result

COUNTS_NOTE = (
    "epsilon_lower, mu_lower: hold together with probability >= {c} if the trials are independent; "
    "one-sided Clopper–Pearson bounds on TPR and FPR, each at level 1 − (1 − c)/2 (a union bound over the "
    "two rates), put into TPR <= e^ε·FPR + δ and TNR <= e^ε·FNR + δ"
)
GDP_NOTE = (
    "epsilon_gdp: the ε at δ of a Gaussian trade-off curve with μ = mu_lower: a lower bound on ε only if "
    "the mechanism's curve is Gaussian (e.g. DP-SGD in its central-limit regime), not in general"
)
ONE_RUN_NOTE = (
    "one-run: Steinke, Nasr & Jagielski 2023 (arXiv:2305.08846), exact binomial tail with the 2mδ term; "
    "valid if each canary was included independently with probability 1/2 and guesses were made from the "
    "trained model alone"
)
ONE_RUN_FDP_NOTE = (
    "one-run mu_lower: the f-DP one-run audit of Mahloujifar, Melis & Chaudhuri 2024 (arXiv:2410.22235, "
    "Algorithm 3 with the Gaussian curve): the largest μ whose μ-GDP claim the same guesses reject at "
    "level 1 − confidence; same assumptions as the one-run row"
)
SCORES_NOTE = (
    "scores: the threshold (member if score {rule} threshold) was chosen on a random half of the {n} rows "
    "(--seed {seed}: {n_sel} rows) and the counts are those of the other {n_ev} rows only"
)
#: ``--score-direction``: which end of the scores means "member"
SCORE_DIRECTIONS = ("higher", "lower")
#: the largest count of canaries, guesses or right guesses (every whole number up to it is a float)
COUNT_MAX = 2**53
NO_BOUND = "no bound: the attack's success is within what sampling error allows at this confidence"


@dataclass(frozen=True)
class AuditParams:
    """The inputs of ``dpcalc audit``: one of the four sources (counts, ``input``, one-run, ``scores``)."""

    tp: Sequence[int] | None = None
    fp: Sequence[int] | None = None
    fn: Sequence[int] | None = None
    tn: Sequence[int] | None = None
    input: str | None = None
    canaries: Sequence[int] | None = None
    guesses: Sequence[int] | None = None
    correct: Sequence[int] | None = None
    scores: str | None = None
    seed: int = 0
    #: ``--score-direction``: "higher" (a higher score means member; None: the default) or "lower" (a lower
    #: one: losses); only with ``scores``
    score_direction: str | None = None
    delta: Sequence[float] | None = None
    confidence: Sequence[float] = (0.95,)
    claimed_epsilon: float | None = None
    #: the claim as a DP-SGD run: SgdEpsilonParams field (sigma, sample_rate, batch_size, dataset_size,
    #: steps, epochs) -> its one value (:mod:`dpcalc.commands.audit.claim`)
    claimed_sgd: dict | None = None
    #: the claim as a composition of MECHANISM specs (``--claimed-mechanism``), or None
    claimed_mechanisms: tuple[str, ...] | None = None
    #: the claim as an iterate or langevin setting (``--claimed-iterate`` / ``--claimed-langevin``, key=value)
    claimed_iterate: str | None = None
    claimed_langevin: str | None = None
    #: the claim as DpEvent files (``--dp-event``, ``-``: standard input), their mechanisms joining
    #: ``claimed_mechanisms`` as ``compose --dp-event`` joins them
    claimed_dp_events: tuple[str, ...] | None = None
    #: the claim as a run in phases (``--schedule FILE``, as ``sgd-epsilon --schedule``; ``claimed_sgd``'s
    #: ``dataset_size`` is its dataset size)
    claimed_schedule: str | None = None
    #: the claim as a matrix-mechanism run (``--strategy``, ``--participation``, as ``dpcalc matrix``; its steps
    #: and noise multiplier are ``claimed_sgd``'s ``steps`` and ``sigma``)
    claimed_strategy: tuple[str, ...] | None = None
    claimed_participation: tuple[str, ...] | None = None
    #: --noise-std S --clip-norm C: ((S,), C) when the DP-SGD or matrix run's noise multiplier is S/C
    #: (dpcalc.commands.noise_std); named in the claim's note only
    claimed_noise_std: tuple[tuple[float, ...], float] | None = None
    plot: bool = False  # --plot: attach the trade-off picture (:mod:`dpcalc.commands.audit.plot`)


def audit(p: AuditParams) -> Result:
    """One row per audit (per combination of the values given); see the module docstring."""
    sources = {
        "--tp/--fp/--fn/--tn": any(x is not None for x in (p.tp, p.fp, p.fn, p.tn)),
        "--input": p.input is not None,
        "--canaries/--guesses/--correct": any(x is not None for x in (p.canaries, p.guesses, p.correct)),
        "--scores": p.scores is not None,
    }
    given = [k for k, v in sources.items() if v]
    if len(given) != 1:
        raise InputError(
            "give one source of audit outcomes: --tp/--fp/--fn/--tn, --input FILE, "
            "--canaries/--guesses/--correct or --scores FILE"
            + (f" (got {' and '.join(given)})" if given else "")
        )
    if p.delta is None:
        raise InputError("missing option --delta (the δ at which ε is bounded; 0 for pure ε-DP)")
    if p.score_direction is not None and p.scores is None:
        raise InputError("--score-direction: applies to --scores FILE only (no scores were given)")
    claim = audit_claim.check(p)
    if p.canaries is not None or p.guesses is not None or p.correct is not None:
        result = _one_run(p)
    elif p.scores is not None:
        result = _scores(p)
    else:
        if p.input is not None:
            tp, fp, fn, tn = _read_counts(p.input)
        else:
            for name in ("tp", "fp", "fn", "tn"):
                if getattr(p, name) is None:
                    raise InputError(f"missing option --{name} (give all of --tp, --fp, --fn and --tn)")
            tp, fp, fn, tn = p.tp, p.fp, p.fn, p.tn
        result = _counts(p, tp, fp, fn, tn, paired=p.input is not None)
    run = audit_claim.add(result, claim)
    if p.claimed_noise_std is not None and claim is not None and claim.kind in ("sgd", "matrix"):
        result.notes[-1] += noise_std.caption(p.claimed_noise_std)  # the claim's note, just added
    if p.plot:
        result.plot = plot_spec(result, run)
    return result


def _counts(p: AuditParams, tp, fp, fn, tn, *, paired: bool, method: str = "counts", extra=None) -> Result:
    """Counts (one audit per row of ``tp..tn`` if ``paired``, else their product) × δ × confidence."""
    if paired:
        k = np.arange(len(tp))
        g = product(k=k, delta=np.asarray(p.delta, float), confidence=np.asarray(p.confidence, float))
        cols = {
            n: np.asarray(v, dtype=np.int64)[g["k"]]
            for n, v in zip(("tp", "fp", "fn", "tn"), (tp, fp, fn, tn))
        }
    else:
        g = product(
            tp=np.asarray(tp, np.int64),
            fp=np.asarray(fp, np.int64),
            fn=np.asarray(fn, np.int64),
            tn=np.asarray(tn, np.int64),
            delta=np.asarray(p.delta, float),
            confidence=np.asarray(p.confidence, float),
        )
        cols = {n: g[n] for n in ("tp", "fp", "fn", "tn")}
    where = "--input" if paired else None
    if np.any(cols["tp"] + cols["fn"] < 1):
        raise InputError(f"{where or '--tp/--fn'}: tp + fn must be >= 1 (no member was tested)")
    if np.any(cols["fp"] + cols["tn"] < 1):
        raise InputError(f"{where or '--fp/--tn'}: fp + tn must be >= 1 (no non-member was tested)")
    b = counts.epsilon_lower(cols["tp"], cols["fp"], cols["fn"], cols["tn"], g["delta"], g["confidence"])
    mu = gdp.mu_lower(b["tpr_lower"], b["fpr_upper"])
    out = {
        "method": [method] * g["delta"].size,
        **{n: v.tolist() for n, v in cols.items()},
        "confidence": g["confidence"].tolist(),
        "delta": g["delta"].tolist(),
        "tpr_lower": b["tpr_lower"].tolist(),
        "fpr_upper": b["fpr_upper"].tolist(),
        "epsilon_lower": b["epsilon_lower"].tolist(),
        "mu_lower": mu.tolist(),
        "epsilon_gdp": gdp.epsilon_gdp(mu, g["delta"]).tolist(),
        "note": [NO_BOUND if e == 0 else None for e in b["epsilon_lower"].tolist()],
        **(extra or {}),
    }
    result = Result(
        conform(out, "audit"), headline="epsilon_lower", title="Audit: empirical lower bound on ε"
    )
    cs = sorted(set(out["confidence"]))
    result.notes.append(COUNTS_NOTE.format(c=", ".join(_at_most(c) for c in cs)))
    result.notes.append(GDP_NOTE)
    return result


def _one_run(p: AuditParams) -> Result:
    # lazy: scipy.stats (~45 MB) serves one-run audits only; a 10^6-row --scores audit must stay in 500 MB
    from dpcalc.engine.audit import one_run, one_run_fdp

    for name in ("canaries", "guesses", "correct"):
        if getattr(p, name) is None:
            raise InputError(f"missing option --{name} (give --canaries, --guesses and --correct)")
    for name in ("canaries", "guesses", "correct"):
        for x in getattr(p, name):
            if x != int(x) or not 0 <= x <= COUNT_MAX:
                raise InputError(f"--{name}: must be a whole number in [0, 2^53], got {x!r}")
    g = product(
        m=np.asarray(p.canaries, np.int64),
        r=np.asarray(p.guesses, np.int64),
        v=np.asarray(p.correct, np.int64),
        delta=np.asarray(p.delta, float),
        confidence=np.asarray(p.confidence, float),
    )
    if np.any(g["m"] < 1):
        raise InputError("--canaries: must be >= 1")
    bad = g["r"] > g["m"]
    if np.any(bad):
        raise InputError(
            f"--guesses: {int(g['r'][bad][0])} guesses exceed the {int(g['m'][bad][0])} canaries"
        )
    bad = g["v"] > g["r"]
    if np.any(bad):
        raise InputError(
            f"--correct: {int(g['v'][bad][0])} right guesses exceed the {int(g['r'][bad][0])} guesses"
        )
    if np.any(g["r"] > one_run.GUESSES_MAX):
        raise InputError(
            f"--guesses: at most {one_run.GUESSES_MAX:.0e} guesses, got {int(np.max(g['r']))} "
            "(the binomial tail sums about 11·√r terms per ε)"
        )
    eps = one_run.epsilon_lower(g["m"], g["r"], g["v"], g["delta"], g["confidence"])
    mu = one_run_fdp.mu_lower(g["m"], g["r"], g["v"], g["confidence"])
    note = []
    for e, u, m, v in zip(eps.tolist(), mu.tolist(), g["m"].tolist(), g["v"].tolist()):
        if e > 0 or u > 0:
            note.append(None)
        elif v == 0 or m == 1:
            note.append("no bound: too few right guesses to reject any ε at this confidence")
        else:
            note.append(NO_BOUND)
    out = {
        "method": ["one-run"] * eps.size,
        "canaries": g["m"].tolist(),
        "guesses": g["r"].tolist(),
        "correct": g["v"].tolist(),
        "confidence": g["confidence"].tolist(),
        "delta": g["delta"].tolist(),
        "epsilon_lower": eps.tolist(),
        "mu_lower": mu.tolist(),
        "epsilon_gdp": gdp.epsilon_gdp(mu, g["delta"]).tolist(),
        "note": note,
    }
    result = Result(conform(out, "audit"), headline="epsilon_lower", title="Audit: one-run lower bound on ε")
    result.notes.append(ONE_RUN_NOTE)
    result.notes.append(ONE_RUN_FDP_NOTE)
    result.notes.append(GDP_NOTE)
    return result


def _scores(p: AuditParams) -> Result:
    if p.score_direction not in (None, *SCORE_DIRECTIONS):
        raise InputError(
            f"--score-direction: must be one of {', '.join(SCORE_DIRECTIONS)}, got {p.score_direction!r}"
        )
    member, score = _read_scores(p.scores)
    lower = p.score_direction == "lower"
    if lower:  # member if score <= t: the rule "member if −score >= −t" on the negated scores
        score = -np.asarray(score, dtype=float)
    if len(p.delta) != 1 or len(p.confidence) != 1:
        raise InputError("--scores: give a single --delta and --confidence (the threshold depends on them)")
    try:
        r = scores.audit_scores(
            np.asarray(member), np.asarray(score), p.delta[0], p.confidence[0], seed=p.seed
        )
    except ValueError as exc:
        raise InputError(f"--scores {p.scores}: {exc}; give more rows of both kinds") from None
    n = len(member)
    result = _counts(
        p,
        [r["tp"]],
        [r["fp"]],
        [r["fn"]],
        [r["tn"]],
        paired=True,
        method="scores",
        extra={"threshold": [(-r["threshold"] if lower else r["threshold"]) + 0.0]},  # + 0.0: no -0.0
    )
    result.notes.append(
        SCORES_NOTE.format(rule="<=" if lower else ">=", n=n, seed=p.seed, n_sel=n // 2, n_ev=n - n // 2)
    )
    return result


# -- reading ------------------------------------------------------------------------------------
def _lines(path: str, name: str) -> list[str]:
    """Every line of a CSV file (``-``: stdin), read and checked as every text input (dpcalc.input.text)."""
    with open_lines(path, name, sys.stdin if path == "-" else None) as lines:
        return list(lines)


def _csv(path: str, option: str, need: tuple[str, ...], lines: list[str] | None = None):
    """``(name, [(line, [the needed cells, stripped]), ...])`` of a CSV file (``-``: stdin; ``lines``: its
    lines, if read already), every fault an :class:`InputError` naming its line."""
    name = f"{option} {path}"
    if lines is None:
        lines = _lines(path, name)
    records = [
        (n, row)
        for n, row in csv_records(lines, name)
        if row and any(c.strip() for c in row) and not row[0].lstrip().startswith("#")
    ]
    if not records:
        raise InputError(f"{name}: empty (expected a CSV header with {','.join(need)} and at least one row)")
    header_line, header = records[0]
    header = [c.strip().lower() for c in header]
    for col in need:
        if col not in header:
            raise InputError(
                f"{name} line {header_line}: missing column {col!r} (header must contain {','.join(need)})"
            )
    if len(records) == 1:
        raise InputError(f"{name}: no rows after the header")
    idx = [header.index(c) for c in need]
    rows = []
    for n, row in records[1:]:
        if len(row) <= max(idx):
            raise InputError(f"{name} line {n}: expected {len(header)} columns, got {len(row)}")
        rows.append((n, [row[i].strip() for i in idx]))
    return name, rows


def _int(text: str, what: str, where: str) -> int:
    try:
        v = float(text)
    except ValueError:
        raise InputError(f"{where}: {what} must be a whole number >= 0, got {text!r}") from None
    if not (math.isfinite(v) and v >= 0 and v == int(v)):
        raise InputError(f"{where}: {what} must be a whole number >= 0, got {text!r}")
    if v > COUNT_MAX:  # as the --tp..--tn options: larger whole numbers are not held exactly
        raise InputError(
            f"{where}: {what} = {text} is above 2^53 = {COUNT_MAX} (whole numbers are exact up to it)"
        )
    return int(v)


def _at_most(c: float) -> str:
    """``c`` in the fewest significant digits (6 or more) that do not round it up: the note's "probability
    >= c" stays true (0.999999999999 is not printed as 1)."""
    for digits in range(6, 18):
        text = f"{c:.{digits}g}"
        if float(text) <= c:
            return text
    return repr(c)


def _read_counts(path: str):
    name, rows = _csv(path, "--input", ("tp", "fp", "fn", "tn"))
    cols: list[list[int]] = [[], [], [], []]
    for n, cells in rows:
        where = f"{name} line {n}"
        values = [_int(c, k, where) for c, k in zip(cells, ("tp", "fp", "fn", "tn"))]
        if values[0] + values[2] < 1:
            raise InputError(f"{where}: tp + fn must be >= 1 (no member was tested)")
        if values[1] + values[3] < 1:
            raise InputError(f"{where}: fp + tn must be >= 1 (no non-member was tested)")
        for col, v in zip(cols, values):
            col.append(v)
    return tuple(cols)


def _plain_scores(lines: list[str]):
    """``(member, score)`` arrays of a plain scores file — no quotes, comments or blank lines, the header's
    number of cells on every row, members 0/1, scores numbers — read column by column (a million rows in
    well under a second); None otherwise: :func:`_read_scores` then reads it row by row, and names the line
    at fault.  The values are those the row-by-row reading gives (float() of each cell)."""
    first = 0
    while first < len(lines) and not lines[first].replace(",", "").strip():
        first += 1
    body = lines[first + 1 :]
    if not body or '"' in lines[first] or "#" in lines[first]:
        return None
    header = [c.strip().lower() for c in lines[first].rstrip("\n").split(",")]
    if "member" not in header or "score" not in header:
        return None
    text = "".join(body)
    width = len(header)
    if '"' in text or "#" in text or set(map(str.count, body, itertools.repeat(","))) != {width - 1}:
        return None
    cells = text.replace("\n", ",").split(",")
    rows = len(body)
    member = cells[header.index("member") :: width][:rows]
    if not set(member) <= {"0", "1"}:
        return None
    try:
        score = np.array(list(map(float, cells[header.index("score") :: width][:rows])))
    except ValueError:
        return None
    if np.any(np.isnan(score)):
        return None
    return np.frombuffer("".join(member).encode("ascii"), dtype=np.uint8) == ord("1"), score


def _read_scores(path: str):
    """``(member, score)`` of a ``--scores`` file: column by column where it is plain, else row by row."""
    lines = _lines(path, f"--scores {path}")
    plain = _plain_scores(lines)
    return plain if plain is not None else _scores_by_row(path, lines)


def _scores_by_row(path: str, lines: list[str]):
    """``(member, score)`` read record by record (CSV quoting, comments, blank lines), every fault an
    :class:`InputError` naming its line."""
    name, rows = _csv(path, "--scores", ("member", "score"), lines)
    member, score = [], []
    for n, (m, s) in rows:
        if m not in ("0", "1"):
            raise InputError(f"{name} line {n}: member must be 0 or 1, got {m!r}")
        try:
            v = float(s)
        except ValueError:
            raise InputError(f"{name} line {n}: score must be a number, got {s!r}") from None
        if math.isnan(v):
            raise InputError(f"{name} line {n}: score must be a number, got {s!r}")
        member.append(m == "1")
        score.append(v)
    return member, score
