"""Special functions of the engine, and its lazy scipy modules (:mod:`dpcalc.lazy`).

* log Γ and log Φ for the subsampled-Gaussian RDP (:mod:`dpcalc.engine.mechanisms.sgm`): scipy.special for
  large arrays; for small ones (one query from the command line), and for every array of work known to be
  small (a noise calibration, a sweep of a few pairs), the C routines of the math module, so that such work
  does not pay scipy's import time (:class:`light_start`).  Also a cached table of log Γ at
  whole numbers, which the binomial series of docs/math.md §3.2 and §3.3 evaluate most.
* :data:`lazy_special`, :data:`lazy_stats`, :data:`lazy_fft`: ``scipy.special``, ``scipy.stats`` and
  ``scipy.fft``, imported at their first use.  Modules that a single DP-SGD query loads but whose scipy
  paths it never runs (random allocation's round math, truncated Poisson's binomial tail, the tuning runs'
  law) import these instead of scipy, so that such a query never imports scipy (0.1–0.3 s).
"""

from __future__ import annotations

import math

import numpy as np

from dpcalc.lazy import lazy_module

lazy_special = lazy_module("scipy.special")
lazy_stats = lazy_module("scipy.stats")
lazy_fft = lazy_module("scipy.fft")

_EPS = np.finfo(float).eps

#: With :class:`light_start` active, arrays smaller than this use the math module instead of scipy.special.
_SCIPY_MIN = 1_000
#: 0: scipy.special throughout; 1: arrays below _SCIPY_MIN take the math module's path; 2: every array does.
_LIGHT = [0]
_SQRT1_2 = math.sqrt(0.5)
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


class light_start:
    """Context manager: small evaluations use the math module's lgamma/erfc, so that a single query does
    not import scipy (0.12–0.3 s): arrays below :data:`_SCIPY_MIN` elements, or with ``full`` every array
    (for work known to be small, where the math module's 0.2–0.4 µs an element stays below the cost of
    importing scipy.special: a noise calibration, a sweep of a few pairs).  In a ``full`` block an element's
    value does not depend on the array it is computed in.  The command line uses it; results agree with
    scipy's to a few ulps (more where the fractional series is ill-conditioned; both are valid upper
    bounds).  A block inside another keeps the wider of the two."""

    def __init__(self, full: bool = False):
        self._mode = 2 if full else 1

    def __enter__(self):
        self._old = _LIGHT[0]
        _LIGHT[0] = max(_LIGHT[0], self._mode)
        return self

    def __exit__(self, *exc):
        _LIGHT[0] = self._old
        return False


def light_active() -> bool:
    """Whether :class:`light_start` is in force (arrays may then take the math module's path: small ones, or
    every one in a ``full`` block; outside one, an element's bits can depend on the size of its array)."""
    return _LIGHT[0] > 0


def _use_scipy(x) -> bool:
    mode = _LIGHT[0]
    return mode == 0 or (mode == 1 and np.size(x) >= _SCIPY_MIN)


def _lgamma1(x):
    try:
        return math.lgamma(x)
    except ValueError:  # a pole (non-positive integer)
        return math.inf


def _log_ndtr1(x):
    """log Φ(x) in double precision: erfc for |x| < 30, the asymptotic series of the Mills ratio below −30."""
    if x > 0:
        return math.log1p(-0.5 * math.erfc(x * _SQRT1_2))
    if x > -30.0:
        return math.log(0.5 * math.erfc(-x * _SQRT1_2))
    t2 = x * x
    s, term = 0.0, 1.0
    for n in range(1, 8):  # Σ (−1)^n (2n−1)!!/x^{2n}; the first omitted term is below 1e-17 at |x| >= 30
        term *= -(2 * n - 1) / t2
        s += term
    return -0.5 * t2 - math.log(-x) - _HALF_LOG_2PI + math.log1p(s)


_lgamma_u = np.frompyfunc(_lgamma1, 1, 1)
_log_ndtr_u = np.frompyfunc(_log_ndtr1, 1, 1)


def _gammaln(x):
    """log|Γ(x)| (+inf at the poles), elementwise."""
    if _use_scipy(x):
        return lazy_special.gammaln(x)
    return np.asarray(_lgamma_u(np.asarray(x, dtype=float)), dtype=float)


_LGAMMA_TABLE = np.array([np.inf])  # log Γ(n) for n = 0, 1, 2, … (grown on demand)
_LGAMMA_TABLE_MAX = 1 << 17


def _lgamma_int(x):
    """log Γ(x) for whole-number x (+inf for x <= 0): a cached table of math.lgamma (correctly rounded to
    within an ulp), scipy/math beyond 2^17."""
    global _LGAMMA_TABLE
    x = np.asarray(x, dtype=float)
    top = float(np.max(x, initial=0.0))
    if top >= _LGAMMA_TABLE_MAX:
        return _gammaln(x)
    if top >= _LGAMMA_TABLE.size and x.size < (top - _LGAMMA_TABLE.size) / 8:
        # a few entries far beyond the table (one query's high orders): those alone, not the whole stretch
        out = np.empty(x.shape)
        inside = x < _LGAMMA_TABLE.size
        out[inside] = _LGAMMA_TABLE[np.maximum(x[inside], 0.0).astype(np.intp)]
        out[~inside] = np.asarray(_lgamma_u(x[~inside]), dtype=float)
        return out
    if top >= _LGAMMA_TABLE.size:  # grown by the missing entries, to what is asked (and half again)
        old = _LGAMMA_TABLE.size
        size = int(min(max(top + 2, 1.5 * old, 1024), _LGAMMA_TABLE_MAX))
        _LGAMMA_TABLE = np.concatenate([_LGAMMA_TABLE, [math.lgamma(i) for i in range(old, size)]])
    return _LGAMMA_TABLE[np.maximum(x, 0.0).astype(np.intp)]


def _log_ndtr(x):
    """log Φ(x), elementwise."""
    if _use_scipy(x):
        return lazy_special.log_ndtr(x)
    return np.asarray(_log_ndtr_u(np.asarray(x, dtype=float)), dtype=float)
