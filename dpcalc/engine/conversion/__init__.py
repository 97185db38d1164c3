"""Rényi DP ⇄ (ε, δ)-DP conversions: closed forms, the optimal conversion, curves of orders."""
