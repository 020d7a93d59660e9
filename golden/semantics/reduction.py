"""Golden semantics: reduction (being written)."""
