"""Golden semantics: datamove (being written)."""
