"""The capture front end: a kernel read once, for every back end, without any back end.

``source`` (a kernel's source and AST, what its names refer to, the device-function walk), ``constructs`` (the
construct table: every intercepted call once, what it records, which back ends model it), ``language`` (the
operators, builtins, functions and methods a kernel may use, by name), ``consteval`` (the constant evaluator),
``support`` (what gpuviz refuses: one diagnostic per construct), ``plan`` (the capture plan: names resolved,
tables, sites, diagnostics). None of them imports a back end (an import-linter contract in pyproject.toml).
"""
