"""dpcalc's commands as library calls: parsed values in, a :class:`dpcalc.result.Result` out (no click)."""
