"""``dpcalc odometer``: adaptive budgets — privacy odometers, filters, and the ledger of CI jobs (docs/math.md §6).

* :mod:`.command`: event curves, streaming rows, ledger accounting (the part without click; the ledger file
  itself is :mod:`dpcalc.ledger`).
"""
