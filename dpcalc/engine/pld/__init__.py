"""Tight numerical accounting with privacy loss distributions (certified brackets), for any loss models:
discretisation, FFT composition, δ(ε), ε(δ), profiles and searches."""
