"""``dpcalc sgd-epsilon``: the questions it answers about a DP-SGD run, gathered for the command line (the
one module it imports for them).  Each question's module is imported when its name is first read (a lazy
boundary, PEP 562), so one question loads the engine of its own rows only:

* ε of a run, or the noise multiplier, steps or sample rate a target ε allows:
  :func:`~dpcalc.commands.sgd.epsilon.sgd_epsilon_stream` (:mod:`dpcalc.commands.sgd.epsilon`), its parameters
  :class:`~dpcalc.commands.sgd.params.SgdEpsilonParams`;
* the largest true-positive rate of a membership test at false-positive rates (``--fpr``):
  :func:`~dpcalc.commands.sgd.tradeoff.sgd_tradeoff`;
* an attacker's advantage or success, and the noise for a target (``--advantage``, ``--prior``,
  ``--target-advantage``): :func:`~dpcalc.commands.sgd.risk.sgd_risk`;
* the run's Rényi curve (``--rdp-curve``): :func:`~dpcalc.commands.sgd.curve.sgd_curve`, which checks its
  inputs with the accounting's own checks (so this module sits above both).
"""

from __future__ import annotations

import importlib

#: Each name of this module -> the module of dpcalc.commands.sgd that defines it.
WHERE = {
    "SgdEpsilonParams": "params",
    "sgd_curve": "curve",
    "sgd_epsilon": "epsilon",
    "sgd_epsilon_stream": "epsilon",
    "sgd_risk": "risk",
    "sgd_tradeoff": "tradeoff",
}

__all__ = sorted(WHERE)


def __getattr__(name: str):
    if name not in WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"dpcalc.commands.sgd.{WHERE[name]}"), name)
