"""The primitive ops, one family per file, each a `Function` with forward and backward side by
side."""
