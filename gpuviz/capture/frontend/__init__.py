"""The capture front end: a kernel read once, for every back end, without any back end.

``source`` (a kernel's source and AST, what its names refer to, the device-function walk), ``constructs`` (the
construct table: every intercepted call once, what it records, which back ends model it), ``consteval`` (the
constant evaluator), ``plan`` (the capture plan: names resolved, tables, sites, diagnostics).
"""
