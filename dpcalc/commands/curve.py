"""``--rdp-curve``: the Rényi-DP curve a command computes, printed instead of ε (docs/math.md §1.6) — the
part every command's curve shares: the orders, the row limits, and the rows streamed in chunks.

``sgd-epsilon``, ``compose``, ``iterate`` and ``langevin`` turn a Rényi curve ζ(α) into ε; with
``--rdp-curve`` they print that curve, one row per order α of ``--alphas`` (default: the engine's
:data:`~dpcalc.engine.orders.DEFAULT_ORDERS`, the 225 orders the commands minimise over), per
configuration of the swept inputs and per method.  The columns are
:data:`dpcalc.commands.schema.CURVE_SCHEMAS` (a fixed list per command, always holding ``alpha`` and
``rdp``), so the CSV of one curve is accepted as it is by ``dpcalc convert --curve -``, which then
gives the command's own RDP ε (see each command's curve function for where the two can differ:
:func:`dpcalc.commands.sgd.curve.sgd_curve`, :func:`dpcalc.commands.compose.command.compose_curve`,
:func:`dpcalc.commands.iterate.command.iterate_curve`, :func:`dpcalc.commands.langevin.command.langevin_curve`).

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


def check_curve_rows(sizes: dict[str, int], orders: int, methods: int = 1, *, whole: bool = True) -> None:
    """Refuse a curve of more rows than a sweep may make (before anything is computed); with ``whole`` (a
    caller that holds its configurations' inputs whole), also one of more than :data:`MAX_CONFIGS`
    configurations.  A caller that forms them per chunk (``configs`` a function of :func:`curve_result`:
    iterate, langevin) has no limit but the rows'."""
    sweep.check_rows({**sizes, "--alphas": orders, "--method": methods})
    if whole:
        sweep.check_rows(sizes, limit=MAX_CONFIGS, unit="configurations")


#: The most configurations (combinations of the swept inputs) of a curve whose caller holds their inputs
#: whole (one Python value each) while the rows stream (a million took about 500 MB): kept for those callers
#: only (sgd-epsilon's curve); iterate's and langevin's form each chunk's configurations from the axes.
MAX_CONFIGS = 200_000

#: CPU seconds per row (one configuration at one order) of a curve whose caller gives no cost of its own:
#: iterate's and langevin's curves (closed forms) took 0.9-1.7 µs a row on one core (a 2,000- to
#: 5,000-configuration sweep over the 225 default orders, timed with time.process_time), the packing of
#: the rows included; with a margin.
CURVE_SECONDS_PER_ROW = 5e-6


def grid_part(axes: dict, lo: int, hi: int) -> dict:
    """Combinations ``lo`` to ``hi`` of the cartesian product of ``axes`` (name -> 1-D array; the first
    varies slowest, as :func:`dpcalc.engine.grid.product`), as flat arrays: only those are formed, so a
    chunk's memory does not grow with the sweep."""
    shape = tuple(np.asarray(a).size for a in axes.values())
    index = np.unravel_index(np.arange(lo, hi), shape) if shape else ()
    return {k: np.asarray(a).reshape(-1)[i] for (k, a), i in zip(axes.items(), index)}


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
    configs,
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
    count=None,
    seconds_per_row=None,
):
    """The curves of ``command``: for each method and configuration, ``values(method, lo, hi)`` (column ->
    (hi − lo, m) array) over the orders ``a``; ``extra(method)``: columns holding one value per method.
    ``configs``: column -> n values (held whole), or a function ``configs(lo, hi)`` giving the columns of
    configurations ``lo`` to ``hi`` of ``count`` (formed per chunk: memory bounded by the chunk).  A
    :class:`~dpcalc.result.Stream` of chunks of at most about :data:`CHUNK_ROWS` rows (``stream``), else the
    whole :class:`~dpcalc.result.Result`.

    With ``seconds_per_row`` (CPU seconds per row, one configuration at one order) the work is estimated,
    capped and spread (:func:`dpcalc.commands.sweep.run`: ``--max-seconds``, ``--jobs``, ``--scheduler``),
    the chunks cut to :data:`~dpcalc.commands.sweep.CHUNK_SECONDS` of work where rows are expensive (the
    same chunks however many processes compute them); without it the chunks are computed here, in order."""
    names = curve_names(command)
    formed = callable(configs)
    if formed:
        n = count
    else:
        n = len(next(iter(configs.values()))) if configs else 1

    def chunk_of(task):
        m, lo, hi = task
        part = configs(lo, hi) if formed else {k: col[lo:hi] for k, col in configs.items()}
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

    if seconds_per_row is None:
        chunks = (chunk_of((m, lo, hi)) for m in methods for lo, hi in sweep.slices(n, per_chunk(a)))
    else:
        chunks = sweep.by_method(
            chunk_of,
            methods,
            n,
            per_chunk(a),
            seconds=seconds_per_row * n * a.size * len(methods),
            what=f"{command} Rényi curves",
            per_row=a.size,
        )
    out = Stream(
        names,
        chunks,
        headline=headline,
        title=TITLE,
        caption=caption,
        finish=finish,
        notes=list(notes),
    )
    return out if stream else out.collect()
