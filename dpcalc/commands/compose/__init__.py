"""``dpcalc compose``: many mechanisms, one guarantee (docs/math.md §2, §7).

* :mod:`.command`: the entry: specs parsed, methods chosen, rows of ε at δ or δ at ε;
* :mod:`.methods`: each method (basic, advanced, optimal, rdp, pld) on a list of parsed mechanisms;
* :mod:`.calibration`: the noise of specs that leave it out, for a target (ε, δ);
* :mod:`.tradeoff` (``--fpr``), :mod:`.risk` (``--advantage``, ``--prior``), :mod:`.group` (``--group-size``).
"""
