"""``dpcalc audit``: what an attack proved about ε, beside what the accountant claims (docs/math.md §11).

* :mod:`.command`: the entry: the lower bound on ε from an attack's counts;
* :mod:`.claim`: the claim beside it (an ε as given, or a mechanism's trade-off curve);
* :mod:`.plot`: the points and confidence boxes that ``--plot`` draws.
"""
