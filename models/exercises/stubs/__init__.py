"""The student's files: each one is written into a workspace by `microtensor exercises start`,
with the piece to write replaced by a stub that raises NotImplementedError."""
