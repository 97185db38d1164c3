"""``dpcalc sgd-epsilon``: what a DP-SGD run costs (ε, δ), and the noise, steps, sample rate or batch size a
target allows (docs/math.md §3).

The command line imports :mod:`.command` (the questions, gathered); the rest, top down:

* :mod:`.epsilon`: ε of a run or the inverse questions, as rows streamed in chunks (the entry of the sweep);
  :mod:`.columns`: the output columns of its rows and their notes; :mod:`.plot`: its ``--plot`` figure;
* :mod:`.checks`: the inputs checked before any work; :mod:`.rows`: the rows of one accountant;
  :mod:`.searched`: inverse questions of samplers without a vectorised accountant;
* :mod:`.delta` (``--epsilon``: δ at ε), :mod:`.curve` (``--rdp-curve``), :mod:`.tradeoff` (``--fpr``),
  :mod:`.risk` (``--advantage``, ``--prior``, ``--target-advantage``), :mod:`.group` (``--group-size``),
  :mod:`.schedule` (``--schedule FILE``: a run in phases);
* :mod:`.params`: the parameters of the questions (:class:`~dpcalc.commands.sgd.params.SgdEpsilonParams`).
"""
