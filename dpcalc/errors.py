"""Exceptions shared by the engine and the command line (pure Python, no imports).

The command line maps them to exit statuses (see :mod:`dpcalc.exitcodes`):

* :class:`InputError` -> 2: the input is out of the domain of a theorem or malformed.
  Its message should name the option or input line at fault, e.g.
  ``"--delta: must lie in (0, 1), got 1.5"`` (:mod:`dpcalc.api` names the parameter instead:
  ``"delta: ..."``).  It is a ``ValueError``, so code that catches ``ValueError`` keeps working.
* :class:`UncertifiedError` -> 1: a computation could not produce a certified bound.
"""


class DpcalcError(Exception):
    """Base class of dpcalc's own errors."""


class InputError(DpcalcError, ValueError):
    """Bad input: out of a theorem's domain, malformed, or an impossible combination."""


class UncertifiedError(DpcalcError, ArithmeticError):
    """A bound could not be certified (the computation did not converge, or ran out of range)."""


class DpcalcWarning(UserWarning):
    """A warning for the user (written once to stderr by the command line, never to stdout)."""
