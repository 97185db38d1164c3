"""Log-space helpers shared by the engine (numpy only: no scipy here, see ``convert``'s start-up budget).

Conventions: docs/math.md §0 (log means the natural log; ``log_sub`` and ``log1mexp``).
"""

from __future__ import annotations

import functools

import numpy as np

from dpcalc.errors import InputError

LOG2 = float(np.log(2.0))


def log1mexp(x):
    """``log(1 - exp(x))`` for ``x <= 0``, stable at both ends (Mächler 2012).

    Uses ``log(-expm1(x))`` for ``x > -log 2`` and ``log1p(-exp(x))`` otherwise.
    ``x = 0`` gives ``-inf``; ``x > 0`` gives ``nan``.
    """
    x = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.where(x > -LOG2, np.log(-np.expm1(x)), np.log1p(-np.exp(x)))


def log_sub(a, b):
    """``log(exp(a) - exp(b))`` for ``a >= b`` (``-inf`` when equal; ``a = -inf`` gives ``-inf``)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    with np.errstate(invalid="ignore"):
        d = np.where(np.isneginf(b), -np.inf, b - a)
        out = a + log1mexp(d)
    return np.where(np.isneginf(b), a, out)


def log_add(a, b):
    """``log(exp(a) + exp(b))``."""
    return np.logaddexp(a, b)


def logsumexp(x, axis=-1):
    """``log(sum(exp(x)))`` along ``axis``; all ``-inf`` gives ``-inf`` (numpy only)."""
    x = np.asarray(x, dtype=float)
    m = np.max(x, axis=axis, keepdims=True)
    m_safe = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        s = np.log(np.sum(np.exp(x - m_safe), axis=axis, keepdims=True)) + m_safe
    s = np.where(np.isposinf(m), np.inf, s)
    return np.squeeze(s, axis=axis)


#: The block :func:`logsumexp_rows` sums by (numpy's pairwise sum has one fixed tree for a block this long).
ROW_BLOCK = 512


def logsumexp_rows(x, block: int = ROW_BLOCK):
    """:func:`logsumexp` along the last axis of a 2-D array, with the same bits whatever ``-inf`` padding follows
    a row's values: the row is summed in blocks of :data:`ROW_BLOCK` (one fixed pairwise tree each) and the
    blocks one after another, so that trailing zeros add exact zeros.  A row's result then depends on the row
    alone, not on the longer rows it was padded to share an array with.  ``block``: another fixed block length
    (rows of at most that many terms are one block: less to allocate where rows are short)."""
    x = np.asarray(x, dtype=float)
    rows, n = x.shape
    m = np.max(x, axis=1, keepdims=True) if n else np.full((rows, 1), -np.inf)
    m_safe = np.where(np.isfinite(m), m, 0.0)
    nb = -(-n // block)
    ex = np.zeros((rows, nb * block))
    np.exp(x - m_safe, out=ex[:, :n])
    blocks = ex.reshape(rows, nb, block).sum(axis=2)
    total = np.add.accumulate(blocks, axis=1)[:, -1:] if nb else np.zeros((rows, 1))
    with np.errstate(divide="ignore"):
        s = np.log(total) + m_safe
    s = np.where(np.isposinf(m), np.inf, s)
    return s[:, 0]


def log_h(alpha):
    """``log h_α`` with ``h_α = (1/α)(1 − 1/α)^(α−1)`` (docs/math.md §0); ``log h_10 = −3.2508297339144825``."""
    alpha = np.asarray(alpha, dtype=float)
    return -np.log(alpha) + (alpha - 1.0) * np.log1p(-1.0 / alpha)


def next_up(x, ulps: int = 1):
    """Round ``x`` up by ``ulps`` units in the last place (for rounding a bound to the safe side)."""
    x = np.asarray(x, dtype=float)
    for _ in range(ulps):
        x = np.nextafter(x, np.inf)
    return x


def require(values, ok, message: str, show=repr):
    """``values`` as a float array, or an :class:`~dpcalc.errors.InputError` ``"{message}, got {bad}"``
    naming the first value where ``ok(array)`` is false (``show=None``: the message alone)."""
    x = np.asarray(values, dtype=float)
    with np.errstate(invalid="ignore"):
        bad = ~np.asarray(ok(x), dtype=bool)
    if np.any(bad):
        first = np.broadcast_to(x, bad.shape)[bad].flat[0]
        raise InputError(message if show is None else f"{message}, got {show(float(first))}")
    return x


def check_alpha(alpha, option: str = "--alpha"):
    """Rényi orders as a float array; an :class:`~dpcalc.errors.InputError` naming ``option`` unless finite > 1."""
    return require(
        alpha,
        lambda a: (a > 1) & ~np.isinf(a),
        f"{option}: the Rényi order must be a finite number > 1",
        None,
    )


#: Gauss–Legendre nodes and weights on [−1, 1] for the rules the engine uses, as the exact doubles that
#: ``np.polynomial.legendre.leggauss(n)`` returns (checked by tests/test_unimodal_argmin.py), in hexadecimal:
#: numpy.polynomial itself (some 2–3 ms of a start-up) is imported only for another n.
_GAUSS_LEGENDRE = {
    4: (
        ("-0x1.b8e6dbcf63985p-1", "-0x1.5c23fd9dd3dfcp-2", "0x1.5c23fd9dd3dfcp-2", "0x1.b8e6dbcf63985p-1"),
        ("0x1.64340f7e7b666p-2", "0x1.4de5f840c24cdp-1", "0x1.4de5f840c24cdp-1", "0x1.64340f7e7b666p-2"),
    ),
    8: (
        (
            "-0x1.ebab1cb0acc66p-1",
            "-0x1.97e4ab249f41ep-1",
            "-0x1.0d129583284b4p-1",
            "-0x1.77ac94f3c7344p-3",
            "0x1.77ac94f3c7344p-3",
            "0x1.0d129583284b4p-1",
            "0x1.97e4ab249f41ep-1",
            "0x1.ebab1cb0acc66p-1",
        ),
        (
            "0x1.9ea1d04ca03aep-4",
            "0x1.c76fb531d2b94p-3",
            "0x1.413c50a25560ep-2",
            "0x1.736360b19933dp-2",
            "0x1.736360b19933dp-2",
            "0x1.413c50a25560ep-2",
            "0x1.c76fb531d2b94p-3",
            "0x1.9ea1d04ca03aep-4",
        ),
    ),
}


@functools.cache
def gauss_legendre(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights of n-point Gauss–Legendre quadrature on [−1, 1] (read-only)."""
    if n in _GAUSS_LEGENDRE:
        x, w = (np.array([float.fromhex(v) for v in part]) for part in _GAUSS_LEGENDRE[n])
    else:
        x, w = np.polynomial.legendre.leggauss(n)
    x.flags.writeable = False
    w.flags.writeable = False
    return x, w


def sorted_unique(x) -> np.ndarray:
    """The sorted distinct values of ``x`` (flattened; no NaN), as ``np.unique(x)`` without its import of
    numpy.ma (some 7 ms of a start-up, paid by the first call)."""
    x = np.sort(np.asarray(x).ravel())
    if x.size < 2:
        return x
    keep = np.empty(x.size, dtype=bool)
    keep[0] = True
    np.not_equal(x[1:], x[:-1], out=keep[1:])
    return x[keep]


def unimodal_argmin(f, x: np.ndarray, stride: int = 4) -> tuple[int, float]:
    """``(i, f(x[i]))`` minimising a vectorised ``f`` over the grid ``x`` where ``f`` is unimodal along it
    (quasi-convex: non-increasing, then non-decreasing), with about ``n/stride + 2·stride`` evaluations
    instead of ``n``: every ``stride``-th point first, then every point between the neighbours of the
    coarse minimum (for a unimodal ``f`` the grid minimum lies there).  Non-finite values count as
    ``+inf``; if no coarse value is finite, the whole grid is evaluated."""

    def clean(v):
        v = np.asarray(v, dtype=float)
        return np.where(np.isfinite(v), v, np.inf)

    n = x.size
    coarse = np.arange(0, n, stride)
    if coarse.size == 0 or coarse[-1] != n - 1:  # (not np.unique: it imports numpy.ma, ~7 ms of a start-up)
        coarse = np.append(coarse, n - 1)
    if coarse.size >= n or n < 3 * stride:
        v = clean(f(x))
        i = int(np.argmin(v))
        return i, float(v[i])
    vc = clean(f(x[coarse]))
    j = int(np.argmin(vc))
    if not np.isfinite(vc[j]):
        v = clean(f(x))
        i = int(np.argmin(v))
        return i, float(v[i])
    lo, hi = int(coarse[max(j - 1, 0)]), int(coarse[min(j + 1, coarse.size - 1)])
    v = clean(f(x[lo : hi + 1]))
    i = int(np.argmin(v))
    return lo + i, float(v[i])
