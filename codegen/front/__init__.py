"""Stage 1, the front: a spec file's text -> a validated `Spec`.

`spec` reads the YAML safely and validates every field; `functions` is the
whitelist of callable functions (their SymPy classes and arities); `names`
reserves the identifiers a generated module uses for itself.
"""
