"""The PyTorch backend: `source` prints lowered programs with torch ops, `module` plans it."""
