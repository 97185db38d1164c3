"""DP-SGD's accountants: a sampler's steps (Poisson, fixed-size, truncated Poisson, shuffling, balls-in-bins,
random allocation) composed over a run, by Rényi DP, privacy loss distributions or Monte Carlo, and their
inverse questions (noise, steps, sample rate).  One step's or one round's math is the mechanisms'
(:mod:`dpcalc.engine.mechanisms.sgm`, :mod:`dpcalc.engine.mechanisms.random_allocation`)."""
