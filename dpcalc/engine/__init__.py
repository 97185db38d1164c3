"""The numeric engine of dpcalc: numpy/scipy only, never prints, never imports click or rich.

Import the submodules you need, e.g. ``from dpcalc.engine import conversions``.
Every function takes broadcastable array-likes and returns numpy arrays of the broadcast shape.
"""
