"""``dpcalc odometer``: adaptive budgets — privacy filters, odometers, and a ledger for CI (docs/math.md §6):
its options, checked here; what it then does is :mod:`dpcalc.cli.odometer_io`."""

from __future__ import annotations

import click

from dpcalc.cli.common import common_options, single
from dpcalc.cli.odometer_man import MAN_EXAMPLES, MAN_NOTES  # noqa: F401  (the man page's text)
from dpcalc.cli.spec_complete import complete_mechanism
from dpcalc.cli.types import Grid, Refusing, parse_values
from dpcalc.commands.choices import CONVERSIONS, NO_ADAPTIVE_PLD, ODOMETER_METHODS
from dpcalc.ledger import head as H

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
    type=Refusing(ODOMETER_METHODS, {m: NO_ADAPTIVE_PLD for m in ("pld", "f-dp", "fdp", "prv")}),
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
