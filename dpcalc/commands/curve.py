"""``--rdp-curve``: the Rényi-DP curve a command computes, printed instead of ε (docs/math.md §1.6) — the
part every command's curve shares: the orders, the row limits, and the rows streamed in chunks.

``sgd-epsilon``, ``compose``, ``iterate`` and ``langevin`` turn a Rényi curve ζ(α) into ε; with
``--rdp-curve`` they print that curve, one row per order α of ``--alphas`` (default: the engine's
:data:`~dpcalc.engine.orders.DEFAULT_ORDERS`, the 225 orders the commands minimise over), per
configuration of the swept inputs and per method.  The columns are
:data:`dpcalc.commands.schema.CURVE_SCHEMAS` (a fixed list per command, always holding ``alpha`` and
``rdp``), so the CSV of one curve is accepted as it is by ``dpcalc convert --curve -``, which then
gives the command's own RDP ε (see each command's curve function for where the two can differ:
:func:`dpcalc.commands.sgd_curve.sgd_curve`, :func:`dpcalc.commands.compose.compose_curve`,
:func:`dpcalc.commands.iterate.iterate_curve`, :func:`dpcalc.commands.langevin.langevin_curve`).

An order where a bound gives nothing (Feldman et al. above α*, an unbounded mechanism) prints ``inf``;
``convert --curve`` skips such orders.  Options that only act on the conversion to (ε, δ)
(``--delta``, ``--epsilon``, ``--conversion``) do not change a curve; options that would change what is
computed without a curve to show (``--target-epsilon``, an accountant or method without a Rényi form,
``--alpha``) are refused with one line (exit 2)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpcalc.commands import sweep
from dpcalc.commands.schema import curve_names
from dpcalc.engine.orders import DEFAULT_ORDERS, ORDER_MAX
from dpcalc.errors import InputError
from dpcalc.result import PlotSpec, Result, Stream

TITLE = "Rényi DP curve"
FOR_CONVERT = "the CSV of one curve (one configuration, one method) is a curve for dpcalc convert --curve -"


def orders(alphas: Sequence[float] | None):
    """The orders of a curve: ``alphas`` (checked: finite, > 1, at most ``ORDER_MAX``, distinct; in the order given) or, for
    ``None``, :data:`~dpcalc.engine.orders.DEFAULT_ORDERS`."""
    if alphas is None:
        return DEFAULT_ORDERS
    a = np.asarray(alphas, dtype=float).reshape(-1)
    if a.size == 0:
        raise InputError("Invalid value for '--alphas': give at least one order")
    if not np.all(np.isfinite(a) & (a > 1.0)):
        raise InputError("Invalid value for '--alphas': every order must be a finite number > 1")
    if np.any(a > ORDER_MAX):
        raise InputError(f"Invalid value for '--alphas': every order must be at most {ORDER_MAX:g}")
    if np.unique(a).size != a.size:
        raise InputError("Invalid value for '--alphas': the orders must be distinct")
    return a


def check_curve_rows(sizes: dict[str, int], orders: int, methods: int = 1) -> None:
    """Refuse a curve of more rows than a sweep may make, or of more than :data:`MAX_CONFIGS`
    configurations (before anything is computed)."""
    sweep.check_rows({**sizes, "--alphas": orders, "--method": methods})
    # the configurations' inputs are held whole (one Python value each), the rows are streamed
    sweep.check_rows(sizes, limit=MAX_CONFIGS, unit="configurations")


#: The most configurations (combinations of the swept inputs) of one curve command: their inputs are held
#: in memory while the rows stream (a million took about 500 MB).
MAX_CONFIGS = 200_000


#: Rows per chunk of a curve: a large sweep is written as it is computed, in memory bounded by a chunk.
CHUNK_ROWS = 65536


def per_chunk(a) -> int:
    """Configurations per chunk of a curve over the orders ``a``."""
    return max(1, CHUNK_ROWS // a.size)


def _rows(configs: dict, method: str, values: dict, a, extra: dict | None = None) -> dict:
    """Columns of one method's curves: for each of the n configurations (``configs``: column -> n values)
    one row per order of ``a`` (m orders); ``values``: column -> (n, m) array (nan: no value), ``extra``:
    column -> one value for every row (e.g. ``bound``)."""
    m = a.size
    n = len(next(iter(configs.values()))) if configs else 1
    cols = {k: [v for v in col for _ in range(m)] for k, col in configs.items()}
    if method:
        cols["method"] = [method] * (n * m)
    for k, v in (extra or {}).items():
        cols[k] = [v] * (n * m)
    cols["alpha"] = np.tile(a, n).tolist()
    for k, arr in values.items():
        flat = np.broadcast_to(np.asarray(arr, dtype=float), (n, m)).reshape(-1)
        cols[k] = [None if v != v else float(v) for v in flat.tolist()]
    return cols


def curve_result(
    command,
    configs: dict,
    methods,
    values,
    a,
    caption,
    *,
    stream=False,
    headline="rdp",
    swept=(),
    notes=(),
    subtitle="",
    extra=None,
):
    """The curves of ``command``: for each method and configuration (``configs``: column -> n values),
    ``values(method, lo, hi)`` (column -> (hi − lo, m) array) over the orders ``a``; ``extra(method)``:
    columns holding one value per method.  A :class:`~dpcalc.result.Stream` of chunks of about
    :data:`CHUNK_ROWS` rows (``stream``), else the whole :class:`~dpcalc.result.Result`."""
    names = curve_names(command)
    n = len(next(iter(configs.values()))) if configs else 1
    pieces = sweep.slices(n, per_chunk(a))
    tasks = [(m, lo, hi) for m in methods for lo, hi in pieces]

    def chunk(task):
        m, lo, hi = task
        part = {k: col[lo:hi] for k, col in configs.items()}
        cols = _rows(part, m, values(m, lo, hi), a, extra(m) if extra else None)
        rows = len(cols["alpha"])
        return Result({k: cols.get(k, [None] * rows) for k in names}, headline=headline, title=TITLE)

    def finish(result):
        if len(result) > 1:
            result.plot = PlotSpec(
                x="alpha",
                y=headline,
                y_extra=("rdp_lower",) if "rdp_lower" in names and headline == "rdp" else (),
                series="method" if len(methods) > 1 else None,
                group=tuple(swept),
                logx=True,
                autolog=True,
                xlabel="Rényi order α",
                ylabel="Rényi DP ζ(α) (nats)",
                title=TITLE + " by order",
                subtitle=subtitle,
            )
        return result

    out = Stream(
        names,
        (chunk(t) for t in tasks),
        headline=headline,
        title=TITLE,
        caption=caption,
        finish=finish,
        notes=list(notes),
    )
    return out if stream else out.collect()
