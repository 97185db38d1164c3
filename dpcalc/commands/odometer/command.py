"""The part of ``dpcalc odometer`` that needs no click: event curves, streaming rows, ledger accounting.

Lécuyer, "Practical Privacy Filters and Odometers with Rényi Differential Privacy" (2021); docs/math.md §6.
The numerics live in :mod:`dpcalc.engine.adaptive.odometer`; this module turns events (``dpcalc.input.events``) and
ledger entries (``dpcalc.ledger.file``) into the rows, tables and figures the command prints; the command line
(:mod:`dpcalc.cli.odometer_io`) reads the input and writes them.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from dpcalc.commands.schema import names
from dpcalc.engine.adaptive.odometer import Accountant, running_bounds, sgm_curve
from dpcalc.engine.mechanisms.catalogue import rdp_curve
from dpcalc.errors import DpcalcWarning, InputError
from dpcalc.input.spec import parse_mechanism
from dpcalc.ledger.file import LedgerDamaged
from dpcalc.plot.draw import draw
from dpcalc.result import PlotSpec, Result


def parse_spec(text: str, option: str):
    """A MECHANISM (as in ``dpcalc compose``); errors are InputError prefixed with ``option``."""
    try:
        return parse_mechanism(text.strip())
    except InputError as exc:
        raise InputError(f"{option}: {exc}") from None


# -- curves -----------------------------------------------------------------------------------
class Curves:
    """RDP curves of events over the orders, computed once per distinct event."""

    def __init__(self, orders) -> None:
        self.orders = np.asarray(orders, dtype=float)
        self._cache: dict = {}

    def of_spec(self, spec):
        key = ("mechanism", spec.text)
        if key not in self._cache:
            self._cache[key] = rdp_curve(spec, self.orders)
        return self._cache[key]

    def of_event(self, ev):
        if ev.spec is not None:
            try:
                return self.of_spec(ev.spec)
            except InputError as exc:
                where = (
                    f"--event #{ev.line_no}" if ev.source == "--event" else f"{ev.source} line {ev.line_no}"
                )
                raise InputError(f"{where}: {exc}") from None
        if ev.key not in self._cache:
            self._cache[ev.key] = sgm_curve(ev.sample_rate, ev.noise_multiplier, ev.steps, self.orders)
        return self._cache[ev.key]


# -- streaming --------------------------------------------------------------------------------
def stream_columns(filtering: bool) -> list[str]:
    """The columns of every odometer row (streamed events, ``--add``, a ledger report): one schema,
    :data:`dpcalc.commands.schema.SCHEMAS` ``["odometer"]``, whatever the inputs."""
    return names("odometer")


class Stream:
    """One adaptive interaction read event by event: the running odometer (or the filter's verdicts).

    :meth:`add` turns an event into its output row (warning, as a DpcalcWarning, where the odometer's
    best order is at the edge of the orders); :meth:`keep` remembers a printed row for :meth:`draw`.
    """

    def __init__(
        self, orders, delta, gamma_kind, conversion, filter_eps, filter_rule, keep_rows=False
    ) -> None:
        self.acct = Accountant(
            orders,
            delta,
            gamma_kind=gamma_kind,
            conversion=conversion,
            filter_epsilon=filter_eps,
            filter_rule=filter_rule,
        )
        self.curves = Curves(orders)
        self.orders = orders
        self.delta = delta
        self.gamma_kind = gamma_kind
        self.filter_eps = filter_eps
        self.filtering = filter_eps is not None
        self.columns = stream_columns(self.filtering)
        self.rows: list[dict] | None = [] if keep_rows else None  # rows kept for --plot, drawn at the end
        self.notes: list[str] = []  # notes on the orders, each once, in order (:meth:`new_notes`)
        self._said = 0

    def add(self, ev) -> dict:
        rows, error = self.add_many([ev])
        if error is not None:
            raise error
        return rows[0]

    def add_many(self, events) -> tuple[list[dict], InputError | None]:
        """The rows of the next events, in order, computed together (the same numbers as one by one).

        Returns ``(rows, error)``: an event whose curve is refused stops the batch, and the rows of
        the events before it come back with the error (the caller writes them, then reports it)."""
        curves, error = [], None
        for ev in events:
            try:
                curves.append(self.curves.of_event(ev))
            except InputError as exc:
                error = exc
                break
        if not curves:
            return [], error
        rows = self.acct.add_many(np.array(curves, dtype=float))
        for ev, row in zip(events, rows):
            row["mechanism"] = ev.describe()
            row["recorded"] = None
            if self.filtering:  # the filter's guarantee; the odometer's own columns do not apply
                row["epsilon"] = self.filter_eps
                row["alpha"] = row["level"] = None
            row["delta"] = self.delta
            if not self.filtering and row["odometer_at_edge"]:
                note = edge_note("the odometer's", row["alpha"], self.orders, ledger=False)
                if note not in self.notes:
                    self.notes.append(note)
        return rows, error

    def new_notes(self) -> list[str]:
        """The notes found since the last call (each note once in the whole stream)."""
        out = self.notes[self._said :]
        self._said = len(self.notes)
        return out

    def keep(self, row) -> None:
        if self.rows is not None:
            self.rows.append({c: row[c] for c in self.columns})

    def draw(self, path) -> None:
        draw_stream(
            self.rows, self.filtering, self.filter_eps, self.delta, self.orders, self.gamma_kind, path
        )


def draw_stream(rows, filtering, filter_eps, delta, orders, gamma_kind, path) -> None:
    """--plot for EVENTS: the odometer (or, with --filter, the spent RDP ε) against plain RDP, by step."""
    columns = {c: [r[c] for r in rows] for c in rows[0]}
    sub = f"δ = {delta:g}; {len(orders)} orders from {min(orders):g} to {max(orders):g}; γ: {gamma_kind}"
    if filtering:
        spec = PlotSpec(
            x="step",
            y="epsilon_rdp",
            labels={"epsilon_rdp": "plain RDP ε of the steps that ran"},
            hlines=((filter_eps, "filter budget"),),
            xlabel="step",
            ylabel="ε (nats)",
            title="Privacy filter: spent budget by step",
            subtitle=sub,
        )
    else:
        spec = report_plot_spec(sub)
    draw(Result(columns, plot=spec), path)


# -- the ledger -------------------------------------------------------------------------------
def account(header, mechanisms, conversion, curves=None, last_only=False) -> list[dict]:
    """Rows of the running odometer over a ledger's mechanisms (under its header's δ, Λ, γ)."""
    if not mechanisms:
        return []
    if curves is None or tuple(curves.orders) != tuple(header.alphas):
        curves = Curves(header.alphas)
    stack = []
    for i, text in enumerate(mechanisms, start=1):
        try:
            stack.append(curves.of_spec(parse_spec(text, f"entry {i}")))
        except InputError as exc:
            raise LedgerDamaged(f"entry {i} cannot be accounted ({exc})") from None
    b = running_bounds(
        header.alphas, np.array(stack), header.delta, header.gamma, conversion, last_only=last_only
    )
    rows = []
    for k, step in enumerate(b["step"]):
        level = float(b["level"][k])
        rows.append(
            {
                "step": int(step),
                "mechanism": mechanisms[int(step) - 1],
                "epsilon": float(b["epsilon"][k]),
                "alpha": float(b["alpha"][k]),
                "level": int(level) if math.isfinite(level) else None,
                "epsilon_rdp": float(b["epsilon_rdp"][k]),
                "delta": header.delta,
                "odometer_at_edge": bool(b["odometer_at_edge"][k]),
                "rdp_at_edge": bool(b["rdp_at_edge"][k]),
                "alpha_rdp": float(b["alpha_rdp"][k]),
            }
        )
    return rows


def edge_note(which: str, alpha: float, orders, ledger: bool) -> str:
    """The note on a bound whose best order ``alpha`` is the smallest or the largest of ``orders``, with
    advice that can be followed: a stream's orders are ``--alphas``; a ledger's are fixed by its header
    (the odometer needs them fixed before any budget is spent), so its advice is for the next ledger."""
    top = alpha >= max(orders)
    edge = "the largest" if top else "the smallest"
    beyond = f"orders above {alpha:g}" if top else f"orders between 1 and {alpha:g}"
    if ledger:
        return (
            f"{which} best order is {alpha:g}, {edge} of this ledger's orders, which its first line fixes: "
            f"a ledger started with {beyond} in --alphas may give a smaller ε"
        )
    return f"{which} best order is {alpha:g}, {edge} of --alphas: {beyond} in --alphas may give a smaller ε"


def edge_notes(rows, orders) -> list[str]:
    """One note per kind of bound whose best order is at the edge of a ledger's ``orders`` (each at
    most once: the last row's, where the bound stands)."""
    notes = []
    odo = [r for r in rows if r["odometer_at_edge"]]
    if odo:
        notes.append(edge_note("the odometer's", odo[-1]["alpha"], orders, ledger=True))
    rdp = [r for r in rows if r["rdp_at_edge"]]
    if rdp:
        notes.append(edge_note("the plain RDP bound's", rdp[-1]["alpha_rdp"], orders, ledger=True))
    return notes


def added_result(path, row, orders, quiet=False) -> Result:
    """The one-row table of ``--ledger --add`` (or ``--check``); ``quiet`` (``-q``): without the notes
    on orders at the edge (a script wants the number alone)."""
    return Result(
        {k: [row.get(k)] for k in stream_columns(False)},
        title="odometer ledger",
        caption=f"{path}",
        notes=[] if quiet else edge_notes([row], orders),
    )


def report_plot(h) -> PlotSpec | None:
    """The figure of Lécuyer 2021 (arXiv:2103.01379) for a ledger report."""
    if h is None:
        return None
    return report_plot_spec(
        f"δ = {h.delta:g}; {len(h.alphas)} orders from {min(h.alphas):g} to {max(h.alphas):g}; γ: {h.gamma}"
    )


def report_plot_spec(subtitle: str) -> PlotSpec:
    """The figure of Lécuyer 2021 (arXiv:2103.01379): the running odometer ε against the plain (non-adaptive) RDP ε."""
    return PlotSpec(
        x="step",
        y="epsilon",
        y_extra=("epsilon_rdp",),
        labels={
            "epsilon": "odometer: valid at any stopping time (Lécuyer 2021)",
            "epsilon_rdp": "plain RDP: valid only for a schedule fixed in advance",
        },
        xlabel="event (ledger entry)",
        ylabel="ε (nats)",
        title="Privacy odometer vs plain RDP",
        subtitle=subtitle,
    )


def report(path, ledger, conversion, quiet=False) -> Result:
    """The report of a ledger (``--ledger FILE`` alone): one row per entry, with its notes (``quiet``:
    without the notes on orders at the edge; a torn last line is always reported)."""
    names = stream_columns(False)
    rows = []
    if ledger.header is not None:
        rows = account(ledger.header, ledger.mechanisms, conversion)
    result = Result(
        {n: [r.get(n) for r in rows] for n in names},
        title="odometer ledger",
        caption=path,
        plot=report_plot(ledger.header),
    )
    if not quiet and ledger.header is not None:
        result.notes.extend(edge_notes(rows, ledger.header.alphas))
    if ledger.torn is not None:
        # a warning, not a note: it is about the data, and -q does not silence it
        warnings.warn(ledger.torn.message(path), DpcalcWarning, stacklevel=2)
    if ledger.header is None:
        result.notes.append(f"{path}: the ledger has no entries yet")
    return result
