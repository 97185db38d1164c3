"""What a command hands to the renderer: ordered columns plus a little metadata (pure Python).

Engine functions return numpy arrays; the command line packs them into a :class:`Result`, and
:mod:`dpcalc.render` writes it as a table, CSV, TSV, JSON or JSON Lines.  Nothing here imports
numpy; columns may be numpy arrays, lists or tuples (all of the same length), or scalars (repeated
on every row).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

#: How each output column is rounded where it is shortened for people (tables, captions, plot labels):
#: every column of every schema (:mod:`dpcalc.commands.schema`, :mod:`dpcalc.commands.attack_schema`) is in
#: exactly one of the four sets below (tests/test_display_rounding.py checks it), so a new column cannot be
#: forgotten.  A column's role is the same in every command that has it; where it is an input in one command
#: and an answer in another, it is classified by the answer (an input typed as a short decimal shows unchanged).
#:
#: Upper bounds, rounded up (never shown below the true bound): ε, δ and Rényi bounds (an estimate goes
#: to a ``*_estimate`` column), the trade-off's ``tpr``, μ of μ-GDP, audit's ``fpr_upper``, a claimed ε,
#: and the noise a calibration found (``noise_multiplier``, ``sigma``, ``scale``: more noise is safe).
UPPER_COLUMNS = frozenset(
    {
        "epsilon",
        "epsilon_rdp",
        "delta",
        "rdp",
        "tpr",
        "tpr_upper",
        "fpr_upper",
        "mu",
        "mu_step",
        "mu_budget",
        "epsilon_step",
        "delta_step",
        "epsilon_fixed",
        "epsilon_claimed",
        "noise_multiplier",
        "sigma",
        "scale",
        "sensitivity_bound",
        "advantage",
        "success",
    }
)
#: Lower bounds: the lower ends of brackets and an audit's lower bounds.  What a budget and ``-q``
#: treat as a certified lower bound (:mod:`dpcalc.render.configs`) is this set, never an input.
LOWER_BOUND_COLUMNS = frozenset(
    {
        "epsilon_lower",
        "delta_lower",
        "rdp_lower",
        "rdp_certifying",
        "tpr_lower",
        "mu_lower",
        "advantage_lower",
        "success_lower",
    }
)
#: Rounded down: the lower bounds, an audit's ``ratio`` to the claim, and the answers that are largest
#: values within a target (the sample rate found by ``--target-epsilon``, the whole ``epochs`` within
#: the steps found, a calibrated per-release ε).  The last three are inputs in other rows, so a
#: configuration's key (:mod:`dpcalc.render.configs`) must not read this set as "not an input".
LOWER_COLUMNS = LOWER_BOUND_COLUMNS | frozenset(
    {"ratio", "sample_rate", "epochs", "release_epsilon", "epsilon_gdp"}
)
#: Rounded down like a lower bound, but a lower bound only under an assumption the row cannot check (an audit's
#: ``epsilon_gdp``: only if the attacked mechanism's trade-off curve is Gaussian): never read as certified.
CONDITIONAL_LOWER_COLUMNS = frozenset({"epsilon_gdp"})
#: Estimates (not bounds), rounded to nearest.
ESTIMATE_COLUMNS = frozenset(
    {
        "epsilon_estimate",
        "delta_estimate",
        "tpr_estimate",
        "best_alpha",
        "crossing_steps",
        "advantage_estimate",
        "success_estimate",
    }
)
#: Inputs, counts, orders, labels and flags: exact or as given, shown to nearest.
EXACT_COLUMNS = frozenset(
    {
        "accountant",
        "alpha",
        "bands",
        "batch_size",
        "bound",
        "canaries",
        "confidence",
        "conversion",
        "correct",
        "dataset_size",
        "diameter",
        "dpsgd_steps",
        "fn",
        "fp",
        "fpr",
        "group_size",
        "guarantee",
        "guesses",
        "initial_distance",
        "level",
        "lipschitz",
        "lr",
        "max_batch_size",
        "mechanism",
        "method",
        "neighbors",
        "note",
        "participation",
        "phase",
        "prior",
        "recorded",
        "run",
        "samples",
        "sampling",
        "sensitivity",
        "sensitivity_exact",
        "smoothness",
        "step",
        "steps",
        "strategy",
        "strong_convexity",
        "target_epsilon",
        "threshold",
        "tn",
        "total_steps",
        "tp",
        "valid",
    }
)
#: A column the table leaves out where it holds the same value as another on every row (it is kept
#: in the machine formats for the scripts that read it): ``tpr_upper`` is ``tpr``.
TABLE_ALIASES = {"tpr_upper": "tpr"}


def rounding(name: str) -> str:
    """How column ``name`` is shortened for display: ``"up"``, ``"down"`` or ``"nearest"``."""
    if name in UPPER_COLUMNS:
        return "up"
    if name in LOWER_COLUMNS:
        return "down"
    return "nearest"


@dataclass
class PlotSpec:
    """How to draw a result (used by ``--plot``): x and y columns, one line per ``series`` value.

    Everything after ``ylabel`` is optional (see :mod:`dpcalc.plot.draw`): ``y_extra`` columns are drawn
    as further lines (a lower bound, a comparison value), ``band`` = (lower, upper) columns shade a
    bracket, ``group`` columns (swept parameters) split each series into one line per value,
    ``xref`` is a column whose value(s) are drawn as vertical reference lines, ``hlines`` are
    horizontal reference lines ``(value, label)``, ``labels`` maps series values and column names to
    display names, ``subtitle`` holds the fixed parameters, and ``autolog`` draws axes whose values
    span decades on a log scale (the rule is in :mod:`dpcalc.plot.draw`); ``valid`` names a boolean
    column: rows where it is false are drawn hollow and dotted, labelled as not a bound; ``diagonal``
    labels a grey line y = x.  Where
    every line has one point (a comparison at one setting), ``--plot`` draws a dot chart.
    """

    x: str
    y: str
    series: str | None = None
    logx: bool = False
    logy: bool = False
    title: str = ""
    xlabel: str = ""
    ylabel: str = ""
    y_extra: tuple[str, ...] = ()
    band: tuple[str, str] | None = None
    group: tuple[str, ...] = ()
    xref: str | None = None
    hlines: tuple[tuple[float, str], ...] = ()
    labels: dict[str, str] = field(default_factory=dict)
    subtitle: str = ""
    autolog: bool = False
    valid: str | None = None
    diagonal: str | None = None  # the label of a reference line y = x (a trade-off curve's guessing)
    #: a points chart (``dpcalc audit``, drawn by :mod:`dpcalc.plot.audit` instead of the columns):
    #: ``points`` = ((label, x, y, x_lo, x_hi, y_lo, y_hi), ...), a point with its confidence box;
    #: ``curves`` = ((label, xs, ys, kind), ...), lines drawn beneath them (kind: claim, profile, proved)
    points: tuple = ()
    curves: tuple = ()


@dataclass
class Result:
    """A tidy table: one row per result, one column per quantity (snake_case names)."""

    columns: dict[str, Any]
    headline: str = "epsilon"  # the column ``-q`` prints
    title: str = ""
    caption: str = ""  # fixed parameters, neighbouring relation, sampling, conversion ...
    plot: PlotSpec | None = None
    notes: list[str] = field(default_factory=list)  # extra stderr lines (warnings)
    #: columns each row's method computes for itself besides the headline (a solved parameter, the best
    #: order of a curve): not inputs, so not part of a configuration (:mod:`dpcalc.render.configs`)
    derived: tuple[str, ...] = ()
    #: columns that hold, in some rows, a value a search found while other rows hold an input (a schedule's
    #: noise multiplier, found for one phase): a table rounds them to their safe side as answers
    #: (:func:`dpcalc.render.cells.direction_in`), where an input would round to nearest
    found: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        n = None
        for name, col in self.columns.items():
            if _is_sequence(col):
                if n is None:
                    n = len(col)
                elif len(col) != n:
                    raise ValueError(f"column {name!r} has {len(col)} rows, expected {n}")
        self._n = 1 if n is None else n

    def __len__(self) -> int:
        return self._n

    @property
    def names(self) -> list[str]:
        return list(self.columns)

    def column(self, name: str) -> list:
        col = self.columns[name]
        if _is_sequence(col):
            return [_py(v) for v in col]
        return [_py(col)] * self._n

    def rows(self) -> list[dict]:
        cols = {name: self.column(name) for name in self.columns}
        return [{name: cols[name][i] for name in cols} for i in range(self._n)]

    def select(self, names: list[str]) -> Result:
        """The same result with only the columns ``names``, in that order (``--columns``)."""
        return Result(
            {n: self.column(n) for n in names},
            headline=self.headline,
            title=self.title,
            caption=self.caption,
            notes=list(self.notes),
            derived=self.derived,
            found=self.found,
        )

    def budget_column(self, quantity: str) -> str | None:
        """The column judged by ``--max-epsilon``/``--max-delta``/``--max-tpr`` (:func:`budget_column`)."""
        return budget_column(quantity, self.columns)


def budget_column(quantity: str, names) -> str | None:
    """The column of ``names`` judged by ``--max-epsilon``/``--max-delta``/``--max-tpr``: ``epsilon``/
    ``delta``/``tpr_upper`` (an upper bound), or None where the command has none."""
    name = "tpr_upper" if quantity == "tpr" else quantity
    return name if name in names else None


@dataclass
class Stream:
    """A result delivered in chunks (each a :class:`Result` with the columns ``names``), so that a large
    sweep is written as it is computed, in memory bounded by a chunk.  :meth:`collect` joins the chunks
    into one :class:`Result` (for tables, plots and library use) and applies ``finish`` to it."""

    names: list[str]
    chunks: Iterator[Result]
    headline: str = "epsilon"
    title: str = ""
    caption: str = ""
    finish: Callable[[Result], Result] | None = None
    notes: list[str] = field(default_factory=list)
    derived: tuple[str, ...] = ()  # as Result.derived
    found: tuple[str, ...] = ()  # as Result.found

    def collect(self) -> Result:
        cols: dict[str, list] = {n: [] for n in self.names}
        for chunk in self.chunks:
            for n in self.names:
                cols[n] += chunk.column(n)
        result = Result(
            cols,
            headline=self.headline,
            title=self.title,
            caption=self.caption,
            notes=self.notes,
            derived=self.derived,
            found=self.found,
        )
        return self.finish(result) if self.finish else result


def _is_sequence(x: Any) -> bool:
    if isinstance(x, (str, bytes)):
        return False
    if hasattr(x, "ndim"):
        return x.ndim > 0
    return isinstance(x, (list, tuple))


def _py(v: Any) -> Any:
    """numpy scalars -> Python scalars (bool, int, float, str, None)."""
    if v is None or type(v) in (bool, int, float, str):
        return v
    for kind in (bool, int, float, str):  # subclasses such as numpy.float64 -> the built-in type
        if isinstance(v, kind):
            return kind(v)
    item = getattr(v, "item", None)
    if item is not None:
        return item()
    return v
