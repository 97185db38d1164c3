"""``dpcalc odometer``: adaptive budgets — privacy filters, odometers, and a ledger for CI (docs/math.md §6):
its options, checked here; what it then does is :mod:`dpcalc.cli.odometer_io`."""

from __future__ import annotations

import click

from dpcalc.cli.common import common_options, single
from dpcalc.cli.spec_complete import complete_mechanism
from dpcalc.cli.types import Grid, parse_values
from dpcalc.commands.choices import CONVERSIONS, ODOMETER_METHODS
from dpcalc.ledger import head as H

MAN_EXAMPLES = [
    (
        "The odometer of Lécuyer's fine-tuning run (q = 0.01024, σ = 1, 98 steps per epoch) after epochs 6, "
        "20 and 50, with the γ of the paper's figures and the plain RDP ε by Mironov's conversion:",
        "dpcalc odometer --event sgm:q=0.01024,sigma=1,count=588 --event sgm:q=0.01024,sigma=1,count=1372 "
        "--event sgm:q=0.01024,sigma=1,count=2940 --delta 1e-6 --gamma code --alphas code --conversion mironov",
    ),
    (
        "Follow a training log as it grows (columns sample_rate,noise_multiplier,steps):",
        "dpcalc odometer train.csv --follow --delta 1e-6",
    ),
    ("The same from a pipe:", "tail -f train.csv | dpcalc odometer - --delta 1e-6"),
    (
        "A filter: which steps may run within (2, 1e-6)-DP:",
        "dpcalc odometer events.csv --delta 1e-6 --filter 2",
    ),
    (
        "A CI job spends budget from a shared ledger, refused (exit 3) past ε = 8:",
        "dpcalc odometer --ledger privacy.ledger --add gaussian:sigma=20 --delta 1e-6 --max-epsilon 8 -q",
    ),
    (
        "Ask without spending:",
        "dpcalc odometer --ledger privacy.ledger --add gaussian:sigma=20 --check --max-epsilon 8",
    ),
    ("Report the ledger:", "dpcalc odometer --ledger privacy.ledger"),
    (
        "Spend, refused (exit 1) if the ledger no longer extends the head a CI variable kept, and print "
        "the new head to keep:",
        'dpcalc odometer --ledger privacy.ledger --add gaussian:sigma=20 --expect-head "$LEDGER_HEAD" --head',
    ),
    (
        "The same with the head kept in a file (read, checked, then replaced atomically):",
        "dpcalc odometer --ledger privacy.ledger --add gaussian:sigma=20 --head-file privacy.head",
    ),
    (
        "A training run's Rényi curve (from sgd-epsilon --rdp-curve) as one event:",
        "dpcalc odometer --event rdp-curve:file=curve.csv --delta 1e-5",
    ),
    (
        "Draw the spent budget of a ledger (odometer against plain RDP):",
        "dpcalc odometer --ledger privacy.ledger --delta 1e-6 --plot budget.png",
    ),
    (
        "Gaussian queries under μ-GDP: which may run within μ = 1 (a step too large is refused, later "
        "ones that fit still run):",
        "dpcalc odometer queries.csv --method gdp --filter-mu 1",
    ),
    (
        "The same budget given as (2, 1e-6)-DP, and the GDP odometer at δ = 1e-6, valid at any stopping time:",
        "dpcalc odometer queries.csv --method gdp --filter 2 --delta 1e-6; "
        "dpcalc odometer queries.csv --method gdp --delta 1e-6",
    ),
    (
        "(ε, δ) steps within (1, 1e-6)-DP at the rate of advanced composition:",
        "dpcalc odometer --method dp --event dp:epsilon=0.05,delta=1e-9,count=100 --delta 1e-6 --filter 1",
    ),
    (
        "A ledger under μ-GDP (it remembers its accountant; non-Gaussian events are refused):",
        "dpcalc odometer --ledger gdp.ledger --method gdp --add gaussian:sigma=20 --delta 1e-6 --max-epsilon 2",
    ),
]

MAN_NOTES = """\
Lécuyer, "Practical Privacy Filters and Odometers with Rényi Differential Privacy" (2021).
Neighbours: add/remove one (the subsampled Gaussian is Poisson-sampled).

The odometer (Thm 2, Eq. 5) tracks the running RDP sums r(α) over the orders Λ and reports, at any
stopping time, min over α of 2^(f-1) γ(α) + log(2|Λ| f²/δ)/(α − 1), where f is the smallest level
with r(α) <= 2^(f-1) γ(α).  --gamma paper is γ(α) = log(2|Λ|/δ)/(α − 1) (§4.5 of the paper);
--gamma code is 6/(α − 1), what the paper's figures used.

epsilon_rdp is the plain RDP bound by --conversion: valid only for a schedule fixed in advance,
shown for comparison.

--filter EPS: a step runs iff some order stays within its budget.  --filter-rule union (the
default) gives each order δ/|Λ|, which makes the (EPS, δ) guarantee hold unconditionally and lets
the exact DP → RDP conversion set the budgets; --filter-rule paper is the paper's Cor. 1 rule
ε − log(1/δ)/(α − 1), whose proof applies a fixed-order theorem at a data-dependent order.

The ledger is append-only: a header fixing δ, Λ and γ, then one line per event (UTC time,
mechanism, and a checksum chained to the line before: sha256: and the first 16 hex digits, 64 bits,
of a SHA-256).  Appends hold an exclusive flock and are fsync'd (a lock held by another process is
waited for at most 30 seconds, then exit 1); a last line cut short by an interrupted append is
reported and ignored.  --repair removes that line and nothing else; a file that does not begin with
the ledger's header (any other file, or an empty one) is refused with exit 2 and left as it was, as
is a report or --add on a file that is not a ledger.  The ledger's orders are fixed by its header:
a note on a bound at the edge of them is advice for the next ledger.  An edited, inserted, duplicated, reordered
or spliced entry, and a deleted entry that another follows, are refused with exit 1.  The file
alone cannot show that its last entries were removed (a truncated ledger, an older copy restored),
nor that it was replaced whole or rewritten with its checksums recomputed: pin its head.  --head
prints COUNT:SHA256, the number of entries and the SHA-256 of the header and those entries, each
line ending in LF.  --expect-head HEAD (or the head kept in --head-file FILE) refuses with exit 1,
changing nothing, a ledger whose first COUNT entries are not those HEAD pinned: truncated, rolled
back, deleted, replaced or rewritten.  Undetected even so: entries added after the pinned head and
removed again, and a ledger rolled back or deleted together with its head.

--method gdp (μ-GDP; Smith & Thakurta, "Fully Adaptive Composition for Gaussian Differential
Privacy", 2022): every step a Gaussian mechanism, μ = Δ/σ rounded up; a subsampled Gaussian, a
DP-SGD row or another mechanism is refused (use --method rdp).  If Σμ_i² <= μ² on every path, the
interaction is μ-GDP however the steps were chosen.  --filter-mu MU runs a step iff the steps that
ran and it keep Σμ² <= MU² (exact sums; a refused step costs nothing, a later one that fits still
runs); --filter EPS uses the largest μ that is (EPS, δ)-DP.  The odometer is a ladder of such
filters (Lécuyer's Thm 2 argument): rungs μ_j = μ_1·2^((j−1)/2) with δ_j = 6δ/(π² j²), and at the
level j reached epsilon is the exact ε of μ_j-GDP at δ_j.  --odometer-target EPS (default 1) fixes
μ_1 as the largest μ that is (EPS, 6δ/π²)-DP.

--method dp ((ε, δ)-DP; ε-DP is ε²/2-zCDP, Bun & Steinke 2016, Prop. 3.3; filters and odometers at
this rate: Whitehouse, Ramdas, Rogers & Wu, "Fully-Adaptive Composition in Differential Privacy",
2023): every step (ε_i, δ_i)-DP, a dp: spec or a mechanism's pure ε (δ_i = 0); a Gaussian is refused
(give it as dp:epsilon=E,delta=D).  Half of δ bounds the loss's tail, half the steps' Σδ_i.  --filter
EPS runs a step iff √(2 log(2/δ) Σε²) + Σε²/2 <= EPS or Σε <= EPS, and Σδ_i <= δ/2.  The odometer is
Σε²/2 + √(2(Σε² + ρ) log((2/δ)√((Σε² + ρ)/ρ))), or Σε where smaller, and inf once Σδ_i > δ/2;
--odometer-target EPS (default 1) fixes ρ where the rate reaches EPS.

Under gdp and dp a MECHANISM with count=K is K steps, one row each (at most 1,000,000), with their own
columns (GDP AND DP COLUMNS).  mu and epsilon_fixed hold only for a schedule fixed in advance.  A
ledger started with --method gdp or dp has a v2 first line naming it and fixing its odometer; an
earlier dpcalc refuses it.  There is no PLD or f-DP filter: composing privacy-loss distributions (or
trade-off curves) along an adaptive path is invalid in general (Tran, Koskela, Räisä & Honkela 2026,
arXiv:2602.06756).

--plot draws the running odometer ε against the plain RDP ε by step (from EVENTS or a ledger
report), or with --filter the spent budget against the filter's; not with --follow.

Input: EVENTS and the ledger are UTF-8 text; a byte-order mark and CRLF or CR line ends are
accepted.  Bytes that are not UTF-8, a missing or unreadable file, a directory, a line over 1 MiB
or a field over 100,000 characters exit 2 with one line naming the input.  An EVENTS file is
checked whole before the first row is written; standard input, a pipe and --follow are checked
row by row, and an error says how many rows were written before it.  A column the odometer does
not read gets one warning naming it.  The ledger must be a regular file (a FIFO or a device exits
2); a refused first --add creates nothing, and a refused --add prints nothing with -q; -q prints
no notes on orders at the edge.  Ctrl-C ends every mode (--follow included) with exit 130."""

ORDERS_HELP = (
    "Rényi orders Λ: 'paper' (1.25:10:0.25,16,32; default), 'code' (2.25:10:0.25,16,32), or a list/ranges."
)


@click.command("odometer")
@click.argument("events", required=False, metavar="[EVENTS]")
@click.option(
    "--event",
    "inline",
    multiple=True,
    metavar="MECHANISM",
    shell_complete=complete_mechanism,
    help="An event given on the command line (repeatable; before EVENTS' rows), e.g. gaussian:sigma=2.",
)
@click.option(
    "--dp-event",
    "dp_events",
    multiple=True,
    metavar="FILE",
    help="A DpEvent of dp-accounting or jax_privacy as JSON (its named-tuple form; - for stdin; "
    "repeatable): its events are steps, a composition's one by one, before --event and EVENTS.",
)
@click.option(
    "--delta",
    type=Grid(lo=0, hi=1, hi_open=True, why="Rényi filters and odometers certify no finite ε at δ = 0"),
    default=None,
    help="Target δ in (0, 1) (a ledger remembers its own; not 0: Rényi bounds certify no finite ε at δ = 0).",
)
@click.option(
    "--method",
    type=click.Choice(ODOMETER_METHODS),
    default=None,
    help="The accountant: rdp (Rényi DP, Lécuyer 2021; the default), gdp (μ-GDP, Gaussian steps only: "
    "Smith & Thakurta 2022) or dp ((ε, δ) steps, at the rate of advanced composition). A ledger "
    "remembers its own.",
)
@click.option("--alphas", default="paper", show_default=True, metavar="LIST", help=ORDERS_HELP)
@click.option(
    "--gamma",
    "gamma_kind",
    type=click.Choice(["paper", "code"]),
    default="paper",
    show_default=True,
    help="The odometer's first rung γ(α): paper = log(2|Λ|/δ)/(α−1), code = 6/(α−1).",
)
@click.option(
    "--conversion",
    type=click.Choice(CONVERSIONS),
    default="optimal",
    show_default=True,
    help="RDP → (ε, δ) for the plain epsilon_rdp column and the filter's per-order budgets.",
)
@click.option(
    "--filter",
    "filter_eps",
    type=Grid(lo=0),
    default=None,
    metavar="EPS",
    help="Run an (EPS, δ) privacy filter: each row says whether the step may run.",
)
@click.option(
    "--filter-mu",
    type=Grid(lo=0),
    default=None,
    metavar="MU",
    help="--method gdp: run a μ-GDP filter of budget MU (--filter EPS gives it as (EPS, δ) instead).",
)
@click.option(
    "--odometer-target",
    type=Grid(lo=0),
    default=None,
    metavar="EPS",
    help="--method gdp or dp: the ε at δ where the odometer is aimed, fixed before the first step "
    "(default 1; a ledger fixes it in its first line).",
)
@click.option(
    "--filter-rule",
    type=click.Choice(["union", "paper"]),
    default="union",
    show_default=True,
    help="union: valid unconditionally (δ/|Λ| per order); paper: Lécuyer's Cor. 1 as printed.",
)
@click.option(
    "--follow", is_flag=True, help="Keep reading EVENTS (a file) as it grows, like tail -f (Ctrl-C ends)."
)
@click.option(
    "--ledger",
    default=None,
    metavar="FILE",
    help="A ledger file of spent budget shared across runs (a lock held by another process is waited "
    "for at most 30 s, then exit 1).",
)
@click.option(
    "--add",
    "add",
    default=None,
    metavar="MECHANISM",
    shell_complete=complete_mechanism,
    help="With --ledger: record one event, print the running ε.",
)
@click.option("--check", is_flag=True, help="With --ledger --add: say what ε would be, without recording.")
@click.option(
    "--repair",
    is_flag=True,
    help="With --ledger: remove the incomplete last entry an interrupted append left, nothing else "
    "(a file that is not a ledger is refused and left as it was).",
)
@click.option(
    "--head",
    "print_head",
    is_flag=True,
    help="With --ledger: print the ledger's head, COUNT:SHA256 (with --add: after the append), "
    "instead of the rows; pass it back with --expect-head.",
)
@click.option(
    "--expect-head",
    default=None,
    metavar="HEAD",
    help="With --ledger: refuse (exit 1) unless the ledger extends HEAD (printed by --head): its first "
    "COUNT entries are still those HEAD pinned. Detects truncation and rollback.",
)
@click.option(
    "--head-file",
    default=None,
    metavar="FILE",
    help="With --ledger: as --expect-head with the head kept in FILE (if FILE exists), then FILE is "
    "replaced atomically with the ledger's new head (not by --check).",
)
@common_options
def command(
    events,
    inline,
    dp_events,
    delta,
    method,
    alphas,
    gamma_kind,
    conversion,
    filter_eps,
    filter_mu,
    odometer_target,
    filter_rule,
    follow,
    ledger,
    add,
    check,
    repair,
    print_head,
    expect_head,
    head_file,
    out,
):
    """Adaptive budgets: privacy odometers, filters, and a ledger for CI.

    EVENTS (a CSV file, or - for stdin) has a header and one row per adaptive step: a 'mechanism'
    column (a MECHANISM as in 'dpcalc compose'), or the columns sample_rate,noise_multiplier[,steps]
    (DP-SGD steps); or --dp-event FILE, a DpEvent as dp-accounting writes it. Each output row is printed as soon as its input row is read: step, the running
    odometer ε with its order and level, and the plain RDP ε for comparison; with --filter, whether
    the filter lets the step run (-q prints just true/false) and the guarantee of the interaction.

    With --ledger FILE: --add MECHANISM records one event and prints the running ε (refused with
    exit 3, and not recorded, if it would pass --max-epsilon); --check asks without recording; the
    ledger alone is reported row by row. --head prints the ledger's head (COUNT:SHA256); a later
    run with --expect-head HEAD (or --head-file FILE) is refused with exit 1 if the ledger was
    truncated, rolled back to an older copy, replaced or rewritten since.

    A Rényi curve printed by --rdp-curve (CSV alpha,rdp) is one event: rdp-curve:file=FILE (in a
    'mechanism' row, --event or --add); the curve CSV itself is not an EVENTS file.  A ledger records
    it by absolute path and SHA-256: if the file moves or changes, the ledger no longer replays.

    --method gdp accounts Gaussian steps under μ-GDP (a filter in μ, --filter-mu, or in ε at δ; an
    odometer from a ladder of filters), --method dp (ε, δ) steps at the rate of advanced composition;
    both print one row per step (count=K is K steps) with their own columns.
    """
    ctx = click.get_current_context()
    given = {
        name: ctx.get_parameter_source(param) not in (None, click.core.ParameterSource.DEFAULT)
        for name, param in (
            ("alphas", "alphas"),
            ("gamma", "gamma_kind"),
            ("conversion", "conversion"),
            ("filter_rule", "filter_rule"),
        )
    }
    delta = single(delta, "--delta")  # one stream, one δ: no sweeps here
    filter_eps = single(filter_eps, "--filter")
    filter_mu = single(filter_mu, "--filter-mu")
    odometer_target = single(odometer_target, "--odometer-target")
    _method_options(method, given, filter_eps, filter_mu, odometer_target, delta, out, ledger is not None)
    orders = _orders(alphas)
    expect = {
        "delta": delta,
        "alphas": orders if given["alphas"] else None,
        "gamma": gamma_kind if given["gamma"] else None,
        "method": method,
    }
    if ledger is not None:
        if filter_mu is not None:
            raise click.UsageError("--filter-mu cannot be used with --ledger")
        pins = _ledger_options(
            events,
            inline + dp_events,
            filter_eps,
            follow,
            add,
            check,
            repair,
            print_head,
            expect_head,
            head_file,
            out,
        )
    else:
        _stream_options(
            events,
            inline,
            dp_events,
            follow,
            delta is None and not (method == "gdp" and filter_mu is not None),  # --filter-mu needs no δ
            add,
            check,
            repair,
            print_head,
            expect_head,
            head_file,
            out,
        )
    # lazy: the command's work (numpy, the engine) loads when it runs, never for --help or completion
    from dpcalc.cli import odometer_io

    if ledger is not None:
        odometer_io.use_ledger(
            ledger,
            add,
            check,
            repair,
            delta,
            orders,
            gamma_kind,
            conversion,
            expect,
            pins,
            print_head,
            out,
            odometer=(method, odometer_target),
        )
    elif method in ("gdp", "dp"):
        odometer_io.stream_adaptive(
            events, inline, follow, method, delta, filter_eps, filter_mu, odometer_target, out, dp_events
        )
    else:
        odometer_io.stream_events(
            events,
            inline,
            follow,
            delta,
            orders,
            gamma_kind,
            conversion,
            filter_eps,
            filter_rule,
            out,
            dp_events,
        )


def _method_options(method, given, filter_eps, filter_mu, target, delta, out, ledger):
    """--method gdp|dp: the Rényi accountant's options are refused, and the GDP and dp options need theirs
    (with --ledger and no --method, the ledger's accountant decides: checked against its first line)."""
    if method in ("gdp", "dp"):
        for name, key in (
            ("--alphas", "alphas"),
            ("--gamma", "gamma"),
            ("--conversion", "conversion"),
            ("--filter-rule", "filter_rule"),
        ):
            if given[key]:
                raise click.UsageError(f"{name} applies to --method rdp (the Rényi accountant), not {method}")
    if filter_mu is not None:
        if method != "gdp":
            raise click.UsageError("--filter-mu needs --method gdp (a budget in μ of μ-GDP)")
        if filter_eps is not None:
            raise click.UsageError("give one budget: --filter EPS (with --delta) or --filter-mu MU")
        if delta is None and out.max_epsilon is not None:
            raise click.UsageError("--max-epsilon with --filter-mu needs --delta (ε is reported at δ)")
    if target is not None:
        if method == "rdp" or (method is None and not ledger):
            raise click.UsageError(
                "--odometer-target needs --method gdp or dp (rdp's odometer is set by --gamma)"
            )
        if filter_eps is not None or filter_mu is not None:
            raise click.UsageError("--odometer-target sets the odometer: it cannot be used with a filter")


def _ledger_options(
    events, inline, filter_eps, follow, add, check, repair, print_head, expect_head, head_file, out
):
    """With --ledger: the events' options are refused, and --add, --check, --repair and the heads must go
    together; returns the pinned heads (:func:`_pins`)."""
    for name, value in (
        ("EVENTS", events),
        ("--event or --dp-event", inline or None),
        ("--filter", filter_eps),
        ("--follow", follow or None),
    ):
        if value is not None:
            raise click.UsageError(f"{name} cannot be used with --ledger")
    if check and add is None:
        raise click.UsageError("--check needs --add MECHANISM")
    if repair and (add is not None):
        raise click.UsageError("--repair cannot be used with --add")
    return _pins(print_head, expect_head, head_file, repair, check, add, out)


def _stream_options(
    events, inline, dp_events, follow, no_delta, add, check, repair, print_head, expect_head, head_file, out
):
    """Without --ledger: the ledger's options are refused, and the events need a source and --delta."""
    for name, value in (
        ("--add", add),
        ("--check", check or None),
        ("--repair", repair or None),
        ("--head", print_head or None),
        ("--expect-head", expect_head),
        ("--head-file", head_file),
    ):
        if value is not None:
            raise click.UsageError(f"{name} needs --ledger FILE")
    if events is None and not inline and not dp_events:
        raise click.UsageError(
            "give EVENTS (a CSV file or - for stdin), --event MECHANISM, --dp-event FILE, or --ledger FILE"
        )
    if events == "-" and "-" in dp_events:
        raise click.UsageError("EVENTS - and --dp-event - both read standard input: give one of them a file")
    if follow and (events is None or events == "-"):
        raise click.UsageError("--follow needs EVENTS to be a file (a pipe is followed anyway)")
    if no_delta:
        raise click.UsageError("missing option --delta")
    if out.plot and follow:
        raise click.UsageError("--plot cannot be used with --follow (the stream has no end to draw at)")


def _orders(text: str) -> tuple[float, ...]:
    if text == "paper":
        return tuple(1.0 + 0.25 * k for k in range(1, 37)) + (16.0, 32.0)
    if text == "code":
        return tuple(2.0 + x / 4.0 for x in range(1, 33)) + (16.0, 32.0)
    try:
        values = parse_values(text.strip(), max_values=10_000)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="'--alphas'") from None
    if any(not (1.0 < v < float("inf")) for v in values):
        raise click.BadParameter("every order must be a finite number > 1", param_hint="'--alphas'")
    if len(set(values)) != len(values):
        raise click.BadParameter("the orders must be distinct", param_hint="'--alphas'")
    return tuple(values)


# -- the ledger -------------------------------------------------------------------------------
def _pins(print_head, expect_head, head_file, repair, check, add, out):
    """The pinned heads (--expect-head, --head-file) and --head, checked before the ledger is opened;
    None when nothing is pinned or printed."""
    given = [
        n
        for n, v in (("--head", print_head), ("--expect-head", expect_head), ("--head-file", head_file))
        if v not in (None, False)
    ]
    if not given:
        return None
    if repair:
        raise click.UsageError(f"{given[0]} cannot be used with --repair")
    if print_head:
        if check:
            raise click.UsageError("--head cannot be used with --check (nothing is recorded)")
        for name, value in (("-f", out.fmt), ("--columns", out.columns), ("--plot", out.plot)):
            if value is not None:
                raise click.UsageError(f"{name} cannot be used with --head (it prints the head alone)")
        for name, value in (("--max-epsilon", out.max_epsilon), ("--max-delta", out.max_delta)):
            if value is not None and add is None:
                raise click.UsageError(f"{name} cannot be used with --head without --add (nothing is judged)")
    expect = H.parse_head(expect_head, "--expect-head") if expect_head is not None else None
    if head_file is not None:
        H.check_head_file(head_file)
    return H.Pins(expect=expect, head_file=head_file, write=not check)
