"""``dpcalc sgd-epsilon``: the questions it answers about a DP-SGD run, gathered for the command line (the
one module it imports for them).

* ε of a run, or the noise multiplier, steps or sample rate a target ε allows:
  :func:`~dpcalc.commands.sgd.epsilon.sgd_epsilon_stream` (:mod:`dpcalc.commands.sgd.epsilon`), its parameters
  :class:`~dpcalc.commands.sgd.params.SgdEpsilonParams`;
* the largest true-positive rate of a membership test at false-positive rates (``--fpr``):
  :func:`~dpcalc.commands.sgd.tradeoff.sgd_tradeoff`;
* the run's Rényi curve (``--rdp-curve``): :func:`~dpcalc.commands.sgd.curve.sgd_curve`, which checks its
  inputs with the accounting's own checks (so this module sits above both).
"""

from __future__ import annotations

from dpcalc.commands.sgd.curve import sgd_curve
from dpcalc.commands.sgd.epsilon import sgd_epsilon, sgd_epsilon_stream
from dpcalc.commands.sgd.params import SgdEpsilonParams
from dpcalc.commands.sgd.risk import sgd_risk
from dpcalc.commands.sgd.tradeoff import sgd_tradeoff

__all__ = ["SgdEpsilonParams", "sgd_curve", "sgd_epsilon", "sgd_epsilon_stream", "sgd_risk", "sgd_tradeoff"]
