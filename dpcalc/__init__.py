"""dpcalc: a differential-privacy calculator (command line and Python library).

The numeric engine lives in :mod:`dpcalc.engine` and needs only numpy and scipy.
This top-level module imports nothing heavy so that ``dpcalc --help`` stays fast.
"""

__version__ = "0.1.0"
