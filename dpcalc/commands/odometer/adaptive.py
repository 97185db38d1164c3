"""``dpcalc odometer --method gdp|dp``: the μ-GDP and (ε, δ) filters and odometers, for streams and ledgers.

docs/math.md §6.4.  The numerics are :mod:`dpcalc.engine.adaptive.gdp` (Smith & Thakurta 2022,
arXiv:2210.17520: the μ-GDP filter; a ladder of such filters read as an odometer by the argument of Lécuyer
2021, arXiv:2103.01379, Thm 2) and :mod:`dpcalc.engine.adaptive.approx_dp` (the (ε, δ) filter and
normal-mixture odometer at the rate of advanced composition: ε-DP ⇒ ε²/2-zCDP, Bun & Steinke 2016,
arXiv:1605.02065, Prop. 3.3, with a supermartingale argument; Whitehouse, Ramdas, Rogers & Wu 2023,
arXiv:2203.05481, give filters and odometers at this rate).  This module turns events into steps and the
engine's arrays into the rows of :data:`dpcalc.commands.schema.ADAPTIVE_SCHEMAS` ``["odometer"]``.

*Steps.*  A MECHANISM with count=K is K steps, one row each.  Under ``gdp`` a step must be a Gaussian
mechanism (a kind with a plain Gaussian ratio Δ/σ: ``gaussian`` without subsampling, ``tree-aggregation``);
its μ = Δ/σ is rounded up from the exact quotient of the decimals given (and of the doubles they parse to).
Under ``dp`` a step is (ε_i, δ_i)-DP: a ``dp:`` spec's own pair, or a mechanism's pure ε (its largest
privacy loss, δ_i = 0), or a subsampled one's amplified pair; anything else (a Gaussian) is refused, since
its (ε, δ) would be a choice of δ_i we do not make silently.

*Parameters fixed in advance.*  The odometers need their shape fixed before the first answer:
``--odometer-target EPS`` (default 1) sets, under gdp, the ladder's first rung μ_1 = the largest μ that is
(EPS, δ_1)-DP with δ_1 = 6δ/π² (so the bound is EPS while Σμ² ≤ μ_1²) and the ratio 2; under dp, the
normal mixture's ρ tightest where the filter's rate reaches EPS (:func:`dpcalc.engine.adaptive.approx_dp.
mixture_rho`), with half of δ for the tail.  A ledger writes them in its first line.

Every number comes from the engine on arrays over all the steps so far (a stream's batches give the same
rows as one call); this module only selects, fills and labels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dpcalc.commands.schema import adaptive_names
from dpcalc.engine._numerics import next_up
from dpcalc.engine.adaptive import approx_dp as A
from dpcalc.engine.adaptive import gdp as G
from dpcalc.engine.mechanisms.base import decimal
from dpcalc.engine.mechanisms.catalogue import float_up, mechanism
from dpcalc.errors import InputError
from dpcalc.ledger.lines import Header, LedgerDamaged
from dpcalc.plot.draw import draw
from dpcalc.render.cells import rounded
from dpcalc.result import PlotSpec, Result

COLUMNS = adaptive_names("odometer")
#: The largest count of one event under gdp or dp (each step is a row).
MAX_STEPS_PER_EVENT = 1_000_000
#: The GDP ladder's ratio (μ_j² doubles a rung) and the dp odometer's share of δ for its tail.
RATIO = 2.0
TAIL = 0.5
DEFAULT_TARGET = 1.0
METHOD_NAMES = {"gdp": "μ-GDP", "dp": "(ε, δ)-DP"}


@dataclass(frozen=True)
class Setup:
    """What one interaction is accounted under: the accountant, δ, the filter's budget (``filter_eps`` as ε at
    δ, or ``filter_mu`` as μ) and the odometer's parameters (``params``, as a ledger header writes them)."""

    method: str
    delta: float | None
    filter_eps: float | None = None
    filter_mu: float | None = None
    params: tuple[tuple[str, float], ...] = ()

    @property
    def filtering(self) -> bool:
        return self.filter_eps is not None or self.filter_mu is not None

    def param(self, name: str) -> float:
        return dict(self.params)[name]


def odometer_params(method: str, delta: float, target: float) -> tuple[tuple[str, float], ...]:
    """The odometer's parameters fixed by ``--odometer-target``: gdp ``(first_mu, ratio)``, dp ``(rho, tail)``
    (see the module docstring).  Any values fixed before the interaction are valid; these only aim the
    bound at ``target``."""
    if not (math.isfinite(target) and target > 0):
        raise InputError(f"--odometer-target: must be a finite number > 0, got {target!r}")
    if method == "gdp":
        mu1 = float(G.mu_of(target, float(G.ladder_delta(1.0, delta))))
        if not (math.isfinite(mu1) and mu1 > 0):
            raise InputError(f"--odometer-target: no GDP ladder starts at ε = {target!r} and δ = {delta!r}")
        return (("first_mu", mu1), ("ratio", RATIO))
    tail, _ = A.split_delta(delta, TAIL)
    rho = float(A.mixture_rho(A.sum_sq_budget(target, tail), tail))
    return (("rho", rho), ("tail", TAIL))


def header_of(setup: Setup) -> Header:
    """A new ledger's header under ``setup`` (δ, the accountant, its odometer)."""
    return Header(setup.delta, method=setup.method, params=setup.params)


def setup_of(header: Header) -> Setup:
    """The odometer a ledger's header fixes."""
    return Setup(header.method, header.delta, params=header.params)


# -- steps ------------------------------------------------------------------------------------------
def _up_quotient(num: float, den: float) -> float:
    """The double at or above both ``num/den`` of the decimals written and of the doubles they parse to."""
    return float_up(max(decimal(num) / decimal(den), Fraction(num) / Fraction(den)))


def step_values(spec, method: str) -> tuple[tuple[float, ...], int]:
    """``((μ,), count)`` (gdp) or ``((ε, δ), count)`` (dp) of one MECHANISM: the value of each of its
    ``count`` steps, rounded up; :class:`~dpcalc.errors.InputError` where the accountant cannot take it."""
    if spec.count > MAX_STEPS_PER_EVENT:
        raise InputError(
            f"count={spec.count}: under --method {method} each of the count steps is a row; at most "
            f"{MAX_STEPS_PER_EVENT} per event"
        )
    mech = mechanism(spec.kind, spec.params)
    text = spec.text or spec.label()
    if method == "gdp":
        ratio = mech.gaussian_ratio(spec.params)
        if ratio is None:
            raise InputError(
                f"{text} is not a Gaussian mechanism: GDP's filter and odometer are for Gaussian steps "
                "(gaussian:sigma=S[,sensitivity=D]); account it with --method rdp"
            )
        if spec.kind == "gaussian":
            mu = _up_quotient(spec.params["sensitivity"], spec.params["sigma"])
        else:
            mu = float(next_up(ratio))
        if not math.isfinite(mu):
            raise InputError(f"{text}: Δ/σ overflows: no finite μ")
        return (mu,), spec.count
    bounds, _ = mech.max_loss(spec.params)
    if bounds is not None:  # ε-DP: the largest privacy loss, exactly, rounded up
        return (float_up(bounds[1]), 0.0), spec.count
    pair, reason = mech.per_release(spec.params)
    if pair is None:
        raise InputError(
            f"{text}: {reason.split(';')[0]}; under --method dp give each step as dp:epsilon=E[,delta=D] (its ε "
            "at a δ_i you choose), or account it with --method rdp (or gdp, for Gaussian steps)"
        )
    eps, delta = (float_up(decimal(v)) if v > 0 else 0.0 for v in pair)
    if not (math.isfinite(eps) and delta < 1.0):
        raise InputError(f"{text}: its (ε, δ) = ({pair[0]!r}, {pair[1]!r}) bounds nothing")
    return (eps, delta), spec.count


def _spent(values: np.ndarray, run: np.ndarray) -> np.ndarray:
    """Per row, ``values`` (computed on the steps that ran, in order) after the last step that ran so far
    (0 before any)."""
    idx = np.cumsum(run) - 1
    if values.size == 0:
        return np.zeros(run.shape)
    return np.where(idx >= 0, values[np.maximum(idx, 0)], 0.0)


# -- the accountants' columns -----------------------------------------------------------------------
def gdp_columns(setup: Setup, mus: np.ndarray) -> dict:
    """The gdp columns of every step (engine: :mod:`dpcalc.engine.adaptive.gdp`)."""
    n = mus.size
    delta = setup.delta
    out: dict = {"mu_step": mus}
    if setup.filtering:
        budget = setup.filter_mu
        if budget is None:
            budget = float(G.mu_of(setup.filter_eps, delta))
        run = G.gdp_filter(mus, budget)
        mu = _spent(G.gdp_odometer(mus[run]) if run.any() else np.zeros(0), run)
        if setup.filter_eps is not None:
            eps = np.full(n, float(setup.filter_eps))
        elif delta is not None:
            eps = np.full(n, float(G.gdp_epsilon(delta, budget)))
        else:
            eps = np.full(n, np.nan)
        out.update(run=run, mu=mu, mu_budget=np.full(n, budget), level=np.full(n, np.nan), epsilon=eps)
    else:
        bound = G.gdp_odometer_epsilon(
            mus, delta, first_mu=setup.param("first_mu"), ratio=setup.param("ratio")
        )
        mu = G.gdp_odometer(mus)
        out.update(run=np.ones(n, bool), mu=mu, mu_budget=bound.mu, level=bound.level, epsilon=bound.epsilon)
    fixed = np.asarray(G.gdp_epsilon(delta, out["mu"]), float) if delta is not None else np.full(n, np.nan)
    out["epsilon_fixed"] = fixed
    return out


def dp_columns(setup: Setup, eps: np.ndarray, dlt: np.ndarray) -> dict:
    """The dp columns of every step (engine: :mod:`dpcalc.engine.adaptive.approx_dp`, with the pathwise
    minimum with basic composition, ``with_basic=True``)."""
    n = eps.size
    delta = setup.delta
    out: dict = {"epsilon_step": eps, "delta_step": dlt}
    if setup.filtering:
        run = A.filter_runs(eps, dlt, setup.filter_eps, delta, tail_fraction=TAIL, with_basic=True)
        spent = (
            A.filter_epsilon(eps[run], dlt[run], delta, tail_fraction=TAIL, with_basic=True)
            if run.any()
            else np.zeros(0)
        )
        out.update(run=run, epsilon=np.full(n, float(setup.filter_eps)), epsilon_fixed=_spent(spent, run))
    else:
        tail = setup.param("tail")
        rho = setup.param("rho")
        bound = A.odometer_epsilon(eps, dlt, delta, rho=rho, tail_fraction=tail, with_basic=True)
        fixed = A.filter_epsilon(eps, dlt, delta, tail_fraction=tail, with_basic=True)
        out.update(run=np.ones(n, bool), epsilon=bound, epsilon_fixed=fixed)
    return out


def columns_of(setup: Setup, values: np.ndarray) -> dict:
    """Every step's columns from ``values`` (shape (n, 1): μ; (n, 2): ε, δ)."""
    if setup.method == "gdp":
        return gdp_columns(setup, values[:, 0])
    return dp_columns(setup, values[:, 0], values[:, 1])


def _cell(v):
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    f = float(v)
    return None if math.isnan(f) else f


def rows_of(setup: Setup, cols: dict, start: int, mechanisms: list[str]) -> list[dict]:
    """The rows of steps ``start``, ``start + 1``, … (``mechanisms``: each step's event)."""
    rows = []
    for k, mech in enumerate(mechanisms):
        i = start + k
        row = {c: None for c in COLUMNS}
        row.update(step=i + 1, mechanism=mech, method=setup.method, delta=setup.delta)
        for name, values in cols.items():
            row[name] = _cell(values[i])
        if row["level"] is not None:
            row["level"] = int(row["level"]) if math.isfinite(row["level"]) else None
        rows.append(row)
    return rows


def notes_of(setup: Setup) -> list[str]:
    """What the rows' bounds are (one note; -q prints none)."""
    if setup.filtering:
        if setup.method == "dp":
            return [
                f"the steps that ran are together ({rounded(setup.filter_eps, 'up')}, {setup.delta:g})-DP "
                "(the (ε, δ) filter at the rate of advanced composition; half of δ for the tail, half for the "
                "steps' Σδ); epsilon_fixed is the filter's rate of the steps that ran"
            ]
        budget = (
            setup.filter_mu if setup.filter_mu is not None else float(G.mu_of(setup.filter_eps, setup.delta))
        )
        eps = setup.filter_eps
        if eps is None and setup.delta is not None:
            eps = float(G.gdp_epsilon(setup.delta, budget))
        dp = "" if eps is None else f", hence ({rounded(eps, 'up')}, {setup.delta:g})-DP"
        return [
            f"the steps that ran are together {rounded(budget, 'up')}-GDP however they were chosen (Smith & "
            f"Thakurta 2022){dp}; mu and epsilon_fixed are those of the steps that ran"
        ]
    fixed = "mu and epsilon_fixed hold" if setup.method == "gdp" else "epsilon_fixed holds"
    if setup.method == "gdp":
        how = (
            f"a ladder of GDP filters, μ_j = {setup.param('first_mu'):.6g}·{setup.param('ratio'):g}^((j−1)/2) with "
            "δ_j = 6δ/(π²j²)"
        )
    else:
        how = f"a normal mixture, ρ = {setup.param('rho'):.6g}, δ·{setup.param('tail'):g} for its tail, the rest for the steps' Σδ_i"
    return [f"epsilon is valid at any stopping time ({how}); {fixed} only for a schedule fixed in advance"]


# -- streams ----------------------------------------------------------------------------------------
class AdaptiveStream:
    """One interaction read event by event under gdp or dp (the interface of
    :class:`dpcalc.commands.odometer.command.Stream`): :meth:`add_many` turns events into their steps' rows."""

    def __init__(self, setup: Setup, keep_rows: bool = False) -> None:
        self.setup = setup
        self.filtering = setup.filtering
        self.columns = list(COLUMNS)
        self.rows: list[dict] | None = [] if keep_rows else None
        self.notes = notes_of(setup)
        self._said = 0
        self._cache: dict = {}
        self._values = np.zeros((0, 1 if setup.method == "gdp" else 2))
        self.curves = self  # checked before any output: :meth:`of_event`

    def of_event(self, ev):
        """The event's steps ``(values, count)``; an :class:`InputError` naming the event's line."""
        if ev.key not in self._cache:
            try:
                if ev.spec is None:
                    raise InputError(
                        f"{ev.describe()}: a DP-SGD row (sample_rate, noise_multiplier) is a subsampled Gaussian; "
                        f"under --method {self.setup.method} give steps as MECHANISMs, or account it with "
                        "--method rdp"
                    )
                self._cache[ev.key] = step_values(ev.spec, self.setup.method)
            except InputError as exc:
                where = (
                    f"--event #{ev.line_no}" if ev.source == "--event" else f"{ev.source} line {ev.line_no}"
                )
                raise InputError(f"{where}: {exc}") from None
        return self._cache[ev.key]

    def weight(self, ev) -> int:
        """The number of steps (rows) of an event (1 where it is refused: the refusal is reported later)."""
        try:
            return self.of_event(ev)[1]
        except InputError:
            return 1

    def add_many(self, events) -> tuple[list[dict], InputError | None]:
        values, names, error = [], [], None
        for ev in events:
            try:
                v, count = self.of_event(ev)
            except InputError as exc:
                error = exc
                break
            values.append(np.broadcast_to(np.asarray(v, float), (count, len(v))))
            names.extend([ev.describe()] * count)
        if not values:
            return [], error
        start = self._values.shape[0]
        self._values = np.concatenate([self._values, *values])
        cols = columns_of(self.setup, self._values)
        return rows_of(self.setup, cols, start, names), error

    def new_notes(self) -> list[str]:
        out = self.notes[self._said :]
        self._said = len(self.notes)
        return out

    def keep(self, row) -> None:
        if self.rows is not None:
            self.rows.append({c: row[c] for c in self.columns})

    def draw(self, path) -> None:
        columns = {c: [r[c] for r in self.rows] for c in self.columns}
        draw(Result(columns, plot=plot_spec(self.setup)), path)


def plot_spec(setup: Setup) -> PlotSpec:
    """--plot: the running odometer ε against the fixed-schedule ε, or a filter's spent budget against it."""
    name = METHOD_NAMES[setup.method]
    sub = f"{name}; δ = {setup.delta:g}" if setup.delta is not None else name
    if setup.filtering and setup.delta is None:  # gdp with --filter-mu alone: in μ
        return PlotSpec(
            x="step",
            y="mu",
            labels={"mu": "μ of the steps that ran"},
            hlines=((setup.filter_mu, "filter budget μ"),),
            xlabel="step",
            ylabel="μ",
            title="GDP filter: spent budget by step",
            subtitle=sub,
        )
    if setup.filtering:
        budget = setup.filter_eps
        if budget is None:
            budget = float(G.gdp_epsilon(setup.delta, setup.filter_mu))
        return PlotSpec(
            x="step",
            y="epsilon_fixed",
            labels={"epsilon_fixed": "ε of the steps that ran"},
            hlines=((budget, "filter budget"),),
            xlabel="step",
            ylabel="ε (nats)",
            title="Privacy filter: spent budget by step",
            subtitle=sub,
        )
    return PlotSpec(
        x="step",
        y="epsilon",
        y_extra=("epsilon_fixed",),
        labels={
            "epsilon": "odometer: valid at any stopping time",
            "epsilon_fixed": "valid only for a schedule fixed in advance",
        },
        xlabel="step",
        ylabel="ε (nats)",
        title="Privacy odometer vs a fixed schedule",
        subtitle=sub,
    )


# -- ledgers ----------------------------------------------------------------------------------------
def account(header: Header, mechanisms: list[str], parse_spec, last_only: bool = False) -> list[dict]:
    """The rows of a gdp or dp ledger's entries (each entry's steps), or the last row alone."""
    setup = setup_of(header)
    values, names = [], []
    for i, text in enumerate(mechanisms, start=1):
        try:
            v, count = step_values(parse_spec(text, f"entry {i}"), setup.method)
        except InputError as exc:
            raise LedgerDamaged(f"entry {i} cannot be accounted ({exc})") from None
        values.append(np.broadcast_to(np.asarray(v, float), (count, len(v))))
        names.extend([text] * count)
    if not values:
        return []
    cols = columns_of(setup, np.concatenate(values))
    cols.pop("run")  # a ledger's steps all ran: its rows leave run empty, as the Rényi ledger's do
    if last_only:
        return rows_of(setup, cols, len(names) - 1, names[-1:])
    return rows_of(setup, cols, 0, names)


def ledger_result(path, header: Header, rows: list[dict], quiet: bool = False, plot: bool = True) -> Result:
    """A gdp or dp ledger's report, or the one row of ``--add`` (``plot=False``), with its note unless
    ``quiet``."""
    result = Result(
        {c: [r.get(c) for r in rows] for c in COLUMNS},
        title="odometer ledger",
        caption=f"{path}",
        plot=plot_spec(setup_of(header)) if plot else None,
    )
    if not quiet:
        result.notes.extend(notes_of(setup_of(header)))
    return result
