"""``python -m dpcalc`` runs the command line."""

from dpcalc.cli import main

if __name__ == "__main__":  # pragma: no cover - exercised through a subprocess test
    main()
