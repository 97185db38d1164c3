"""Composition theorems for (ε, δ)-DP mechanisms: basic, advanced, optimal (Kairouz et al.)."""
