"""Adaptive budgets: Rényi privacy filters and odometers."""
