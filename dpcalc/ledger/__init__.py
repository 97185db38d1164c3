"""The privacy ledger: an append-only, human-readable file of spent budget shared by CI jobs (pure Python).

* :mod:`.file`: reading, checking and appending a ledger file, under a lock;
* :mod:`.lines`: its format: a header, then one line per event with a chained checksum (no file access);
* :mod:`.head`: pinned heads, which catch truncation and rollback (``odometer --head``).
"""
