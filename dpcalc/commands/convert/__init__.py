"""``dpcalc convert``: Rényi DP ⇄ (ε, δ), both ways, and what the guarantees people quote mean (docs/math.md §1).

* :mod:`.command`: the entry: points (α, ζ), a curve file, or ``--from dp``;
* :mod:`.profiles`: from (ε, δ), μ-GDP and ρ-zCDP to ε, δ, trade-off curves and risk.
"""
