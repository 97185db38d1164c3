"""DP-SGD's accountants: a run of a sampler (Poisson, fixed-size, truncated Poisson, balls-in-bins, random
allocation; each an entry of the table :mod:`dpcalc.engine.samplers`, which says its Rényi curve and its
privacy-loss pair of a run) by Rényi DP, privacy loss distributions or Monte Carlo (balls-in-bins), and their
inverse questions (noise, steps, sample rate).  One step's or one round's math is the mechanisms'
(:mod:`dpcalc.engine.mechanisms.sgm`, :mod:`dpcalc.engine.mechanisms.random_allocation`)."""
