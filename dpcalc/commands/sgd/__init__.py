"""``dpcalc sgd-epsilon``: what a DP-SGD run costs (ε, δ), and the noise, steps, sample rate or batch size a
target allows (docs/math.md §3).

The command line imports :mod:`.command` (the questions, gathered); the rest, top down:

* :mod:`.epsilon`: ε of a run or the inverse questions, as rows streamed in chunks (the entry of the sweep);
* :mod:`.question`: the question decided once — the inputs checked before any work, the accountants that
  answer, the one quantity solved for (:class:`~dpcalc.commands.sgd.question.Question`); :mod:`.work`: its
  estimated work; everything below reads the question instead of asking again;
* :mod:`.group`: which sampler and accountant answer a person's rows (``--group-size``: the route);
  :mod:`.rows`: ε (or the quantity solved for) by one accountant; :mod:`.delta`: δ at ε (``--epsilon``);
  :mod:`.searched`: inverse questions of samplers without a vectorised accountant; :mod:`.mc`: the Monte
  Carlo accountant;
* :mod:`.columns`: the output columns of the rows, their notes and caption; :mod:`.plot`: the ``--plot`` figure;
* :mod:`.curve` (``--rdp-curve``), :mod:`.tradeoff` (``--fpr``), :mod:`.risk` (``--advantage``, ``--prior``,
  ``--target-advantage``), :mod:`.schedule` (``--schedule FILE``: a run in phases);
* :mod:`.params`: the parameters of the questions (:class:`~dpcalc.commands.sgd.params.SgdEpsilonParams`).

``python tests/trace_params.py dpcalc/commands/sgd/epsilon.py:sgd_epsilon:params`` traces the parameters through
these modules (tests/test_question_trace.py: none is entered more than three times).
"""
