"""Matrix-factorization mechanisms (correlated noise: DP-FTRL, banded MF): strategies, their sensitivity under a
participation pattern, and the privacy of a run (docs/math.md §12)."""
