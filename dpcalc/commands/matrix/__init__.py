"""``dpcalc matrix``: training with correlated noise, the matrix mechanism C·G + Z of DP-FTRL and banded
matrix factorization (docs/math.md §12).

* :mod:`.command`: the entry: strategies, participation patterns and accountants, one row each;
* :mod:`.sampled`: the rows under sampling over the whole run (MMCC for Poisson, Monte Carlo for
  balls-in-bins);
* :mod:`.risk`: membership-inference risk (``--advantage``, ``--prior``, ``--fpr`` and their targets).
"""
