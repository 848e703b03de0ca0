"""Tools that run a framework to measure generated ops: `verify` (each op, order and dtype
against the exact reference), `report` and `plots` (docs/accuracy.md and its plots), and
`testkit` (what the generated pytest modules call). Nothing on the build path imports them.
"""
