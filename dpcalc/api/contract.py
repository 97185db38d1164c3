"""The library's contract (:mod:`dpcalc.api`): every function returns a :class:`Bound` (or its documented
type), and every bad argument is refused before any work as an :class:`~dpcalc.errors.InputError` naming the
parameter, never an option of the command line (``steps: must be a whole number >= 1, got 10.5``).  The
checks of the arguments every question shares are here."""

from __future__ import annotations

import functools
import math
import re
import warnings
from typing import Any, NamedTuple

import numpy as np

from dpcalc.engine.orders import DEFAULT_ORDERS
from dpcalc.errors import DpcalcWarning, InputError

MAX_VALUES = 1_000_000
#: the largest whole number accepted for a count (2^53: every whole number up to it is a double)
MAX_WHOLE = 2**53


class Bound(NamedTuple):
    """A privacy bound: ``value`` is certified and rounded to the safe side (an upper bound on ε, δ or
    a TPR; for an inverse question a parameter that provably meets the target); ``lower``/``estimate``
    bracket the exact value where the method computes a bracket (else ``None``); ``alpha`` is the
    attaining Rényi order of an RDP-based bound (else ``None``)."""

    value: Any
    lower: Any = None
    estimate: Any = None
    alpha: Any = None


# -- checking the arguments ---------------------------------------------------------------------
_OPTION = re.compile(r"--([a-z][a-z0-9-]*)")
#: command-line options whose parameter has another name
_PARAMETER = {"sigma": "noise_multiplier"}


def _parameter_names(message: str) -> str:
    """An engine message with its command-line option names (``--target-epsilon``) as the library's
    parameter names (``target_epsilon``)."""

    def name(m):
        opt = m.group(1)
        return _PARAMETER.get(opt, opt.replace("-", "_"))

    return _OPTION.sub(name, message)


def contract(fn):
    """Every error from bad input is an :class:`InputError` naming parameters, not options."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", DpcalcWarning)
                result = fn(*args, **kwargs)
            for w in caught:  # the engine's warnings, with parameter names, where the caller sees them
                if issubclass(w.category, DpcalcWarning):
                    warnings.warn(w.category(_parameter_names(str(w.message))), stacklevel=2)
                else:
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            return result
        except InputError as exc:
            raise InputError(_parameter_names(str(exc))) from None
        except ValueError as exc:  # a plain ValueError from numpy or scipy on a value outside a domain
            raise InputError(f"{fn.__name__}: {_parameter_names(str(exc))}") from None

    return wrapper


def _show(v: float) -> str:
    v = float(v)
    return str(int(v)) if v.is_integer() and abs(v) < 1e16 else repr(v)


def real(
    name: str,
    x,
    *,
    lo: float | None = None,
    hi: float | None = None,
    lo_open: bool = False,
    hi_open: bool = False,
    whole: bool = False,
    inf: bool = False,
    single: bool = False,
):
    """``x`` checked: numbers (or an array of them) in the domain, whole where ``whole``, finite unless
    ``inf`` (+inf allowed), one number where ``single``.  Returns a float (an int where ``whole``) for a
    single number, else a float array.  Anything else: an :class:`InputError` naming ``name``."""
    if isinstance(x, (str, bytes)) or x is None:
        raise InputError(f"{name}: must be a number or an array of numbers, got {x!r}")
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"{name}: must be a number or an array of numbers, got {x!r}") from None
    if a.size > MAX_VALUES:
        raise InputError(f"{name}: at most {MAX_VALUES} values, got {a.size}")
    if single and a.size != 1:
        raise InputError(f"{name}: must be a single number, got an array of shape {a.shape}")
    if a.size == 0:
        raise InputError(f"{name}: must hold at least one value")
    parts = []
    if whole:
        parts.append("a whole number")
    if lo is not None and hi is not None:
        parts.append(f"in {'(' if lo_open else '['}{_show(lo)}, {_show(hi)}{')' if hi_open else ']'}")
    elif lo is not None:
        parts.append(f"{'>' if lo_open else '>='} {_show(lo)}")
    with np.errstate(invalid="ignore"):
        ok = ~np.isnan(a) & (np.isfinite(a) | (inf & (a > 0)))
        if lo is not None:
            ok &= (a > lo) if lo_open else (a >= lo)
        if hi is not None:
            ok &= (a < hi) if hi_open else (a <= hi)
        if whole:
            ok &= (np.floor(a) == a) & (a <= MAX_WHOLE)
    if not np.all(ok):
        bad = float(a[~ok].flat[0])
        what = " ".join(parts) or "a finite number"
        if not inf and not math.isnan(bad) and math.isinf(bad):
            what = f"finite ({what})"
        raise InputError(f"{name}: must be {what}, got {_show(bad)}")
    if a.ndim == 0 or single:
        v = a.reshape(-1)[0]
        return int(v) if whole else float(v)
    return a


def broadcast(**arrays) -> None:
    """The arguments broadcast together, to at most :data:`MAX_VALUES` values."""
    shapes = [np.shape(v) for v in arrays.values() if v is not None]
    try:
        shape = np.broadcast_shapes(*shapes)
    except ValueError:
        names = ", ".join(k for k, v in arrays.items() if v is not None)
        raise InputError(f"{names}: the shapes {shapes} do not broadcast together") from None
    if math.prod(shape) > MAX_VALUES:
        raise InputError(f"the arguments broadcast to {math.prod(shape)} values, more than {MAX_VALUES}")


def choice(name: str, value, choices) -> str:
    """``value`` if it is one of ``choices``; else an :class:`InputError` naming ``name``."""
    if not isinstance(value, str) or value not in choices:
        raise InputError(f"{name}: must be one of {', '.join(choices)}, got {value!r}")
    return value


def optional(name: str, x, **domain):
    """``x`` checked as :func:`real` does, or ``None``."""
    return None if x is None else real(name, x, **domain)


def orders(alphas):
    """The Rényi orders ``alphas``, or dpcalc's 225 default orders for ``None``."""
    return DEFAULT_ORDERS if alphas is None else alphas
