"""Hidden-state analyses: amplification by iteration and Langevin dynamics (last iterate released)."""
