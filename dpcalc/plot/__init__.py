"""``--plot FILE``: results drawn with matplotlib (the optional ``plot`` extra, imported only here).

* :mod:`.draw`: every command's picture from a :class:`~dpcalc.result.PlotSpec`;
* :mod:`.audit`: an audit's points and confidence boxes over trade-off curves.
"""
