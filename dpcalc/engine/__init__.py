"""The numeric engine of dpcalc: numpy/scipy only, never prints, never imports click or rich.

One package per topic (docs/math.md states each bound; each function cites its paper):

* ``conversion``   Rényi DP ⇄ (ε, δ)-DP: Mironov, Balle et al., Asoodeh et al.'s optimal conversion.
* ``mechanisms``   one module per kind of mechanism (spec keys, RDP curve, privacy loss model,
  per-release (ε, δ)) and the catalogue every accountant reads; the exact Gaussian profile.
* ``composition``  basic, advanced and optimal (Kairouz et al.) composition of (ε, δ)-DP mechanisms.
* ``dpsgd``        the subsampled Gaussian's RDP, DP-SGD accountants, noise calibration, step budgets.
* ``pld``          privacy loss distributions: discretisation, FFT composition, certified brackets.
* ``hidden_state`` amplification by iteration and Langevin dynamics (only the last iterate released).
* ``adaptive``     Rényi privacy filters and odometers.

Every function takes broadcastable array-likes and returns numpy arrays of the broadcast shape.  For
a small stable facade, see :mod:`dpcalc.api`.
"""
