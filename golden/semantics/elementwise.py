"""Golden semantics: elementwise (being written)."""
