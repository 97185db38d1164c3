"""The mechanisms dpcalc knows, one release each: their Rényi-DP curves, privacy loss distributions and exact
profiles; the subsampled Gaussian's one-step math in :mod:`.sgm`, one random-allocation round's in
:mod:`.random_allocation`."""
