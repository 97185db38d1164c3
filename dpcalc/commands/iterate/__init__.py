"""``dpcalc iterate``: privacy amplification by iteration, the intermediate iterates hidden (docs/math.md §4).

* :mod:`.command`: the entry: one row per method and combination, streamed in chunks; ``--rdp-curve``;
* :mod:`.rows`: the columns of a chunk of rows under each method; :mod:`.plot`: the ``--plot`` figure.
"""
