"""DP-SGD's batch samplers, one module each, and their table (:mod:`dpcalc.engine.samplers.catalogue`):
each a :class:`~dpcalc.engine.samplers.base.Sampler` that says its relations, inputs, accountants, Rényi
curve and privacy-loss pair of a run, captions and notes (docs/math.md §3)."""
