"""``dpcalc matrix``: training with correlated noise, the matrix mechanism C·G + Z of DP-FTRL and banded
matrix factorization (docs/math.md §12).

* :mod:`.command`: the entry: strategies, participation patterns and accountants, one row each;
* :mod:`.params`: its parameters and their checks (``--participation`` parsed, the step counts, the methods);
* :mod:`.plan`: the runs whose methods apply, their work estimated and spread over processes;
* :mod:`.sampled`: the rows under sampling over the whole run (MMCC for Poisson, Monte Carlo for
  balls-in-bins);
* :mod:`.risk`: membership-inference risk (``--advantage``, ``--prior``, ``--fpr`` and their targets), each row
  read from its privacy profile (:mod:`.profiles`).
"""
