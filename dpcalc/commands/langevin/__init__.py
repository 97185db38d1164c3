"""``dpcalc langevin``: noisy gradient descent that releases only its last model (docs/math.md §5).

* :mod:`.command`: the entry: one row per method and combination, streamed in chunks.
"""
