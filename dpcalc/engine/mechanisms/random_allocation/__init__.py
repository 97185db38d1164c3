"""One round of random allocation (docs/math.md §3.8, §3.10): its Rényi curve (:mod:`.rdp`, with the add
direction's Laplace-transform bound in :mod:`.rdp_add`) and its certified loss models (:mod:`.round_loss`)."""
