"""``-q``: per configuration, the tightest certified value of the headline (:mod:`dpcalc.render.configs`)."""

import warnings
from typing import IO

from dpcalc.errors import DpcalcWarning, InputError
from dpcalc.render.cells import csv_cell, one_line
from dpcalc.render.configs import Tightest
from dpcalc.result import Result


class _Quiet:
    """``-q``: the tightest certified value of the headline per configuration: the value alone (one
    configuration) or ``LABEL<TAB>VALUE`` lines (several), LABEL being the inputs that vary.  A row that
    is not a certified bound (an estimate, an asymptotic or reference formula, ``valid=false``, a lower
    bound beside upper ones, a Monte Carlo bound) is never printed; a configuration without a certified
    value prints no line (a warning says how many), and a result where no row is one is an
    :class:`~dpcalc.errors.InputError` (nothing printed).  The configurations are held in bounded
    memory until the stream ends (:class:`~dpcalc.render.configs.Tightest`); a running series (a ``step``
    column: the odometer) prints one value per step as it comes."""

    def __init__(self, names: list[str], headline: str, stream: IO[str]) -> None:
        self.headline, self.stream, self.names = headline, stream, names
        self.has_value = headline in names
        self.series = "step" in names  # a running series (odometer): one value per step, as it streams
        self.tight: Tightest | None = None

    def write(self, chunk: Result) -> None:
        if self.series:
            values = chunk.column(self.headline) if self.has_value else [None] * len(chunk)
            self.stream.write("".join(csv_cell(v) + "\n" for v in values))
            return
        if self.tight is None:
            columns = [self.headline] if self.has_value else []
            self.tight = Tightest(self.names, self.headline, columns, getattr(chunk, "derived", ()))
        self.tight.feed(chunk)

    def close(self) -> None:
        tight = self.tight
        if tight is None or tight.rows == 0:
            self.stream.flush()
            return
        try:
            n = tight.count
            out: list[str] = []
            printed = missing = 0
            for cells, sep, picks in tight.configs():
                value, cell, _method, row, seen = picks[0] if picks else (None, "", None, None, 0)
                if value is None:
                    missing += bool(seen)
                    if n == 1 and not seen:
                        out.append("\n")  # one configuration where the value does not apply: an empty line
                    continue
                printed += 1
                if n == 1:
                    out.append(cell + "\n")
                    continue
                out.append(one_line(tight.label(cells, sep) or f"row={row}") + "\t" + cell + "\n")
                if len(out) >= 1024:
                    self.stream.write("".join(out))
                    out.clear()
            if missing and not printed:
                rows = ", ".join(tight.uncertified[0]) if tight.uncertified else ""
                raise InputError(
                    f"-q prints certified bounds only, and no row here is one ({rows}: an estimate, an "
                    "asymptotic or reference formula, a Monte Carlo bound or valid=false); -f csv shows every row"
                )
            self.stream.write("".join(out))
            if missing:
                warnings.warn(
                    DpcalcWarning(
                        f"-q: {missing} of {n} configurations have no certified {self.headline} (rows: "
                        f"{', '.join(tight.uncertified[0])}) and print no line; -f csv shows every row"
                    ),
                    stacklevel=2,
                )
        finally:
            tight.close()
        self.stream.flush()
