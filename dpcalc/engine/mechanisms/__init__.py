"""The mechanisms dpcalc knows: their Rényi-DP curves, privacy loss distributions and exact profiles."""
