"""What the GPU rewrite reads off a kernel's call graph before it rewrites: the compile-time values a device
function's parameters are bound to at every call (numba compiles them as constants), its locals bound once to a
constant, and the parameters that receive array views."""

from __future__ import annotations

import ast

import numpy as np

from ...frontend.consteval import UNKNOWN, fold
from ...frontend.source import FunctionSource, dotted_name, reachable_functions
from ..rewrite import RewriteBase


def called_function(fs: FunctionSource, node) -> FunctionSource | None:
    """The device function ``node`` calls, when it is a call of one: by name (``helper(x)``) or as an attribute
    of another module (``mymod.helper(x)``, which the source walk keys by its dotted text)."""
    if not isinstance(node, ast.Call):
        return None
    name = node.func.id if isinstance(node.func, ast.Name) else dotted_name(node.func)
    return fs.device_functions.get(name) if name is not None else None


def compile_time_locals(fs: FunctionSource, bindings: dict) -> dict:
    """``bindings`` (the parameters every call passes one constant) plus the function's names assigned
    once, at the top of its body, a constant expression (``N = 100``; ``shape = (N, 2)``)."""
    out = dict(bindings)
    stores: dict[str, int] = {}
    for n in ast.walk(fs.tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            stores[n.id] = stores.get(n.id, 0) + 1
    for st in fs.tree.body:
        if (isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)
                and stores.get(st.targets[0].id) == 1 and st.targets[0].id not in fs.params):
            value = fold(st.value, fs, out)
            if value is not UNKNOWN and isinstance(value, (int, float, tuple, np.integer, np.floating)):
                out[st.targets[0].id] = value
    return out


def callers_first(root: FunctionSource) -> list[FunctionSource]:
    """``root`` and every device function it calls, breadth first (a function before those it calls, but for
    recursion), each once."""
    return reachable_functions(root, callers_first=True, values=False)


def call_bindings(root: FunctionSource) -> dict[int, dict]:
    """{id of a device function: {parameter: value}} for the parameters that every call of the function in
    the kernel passes one and the same constant (a shape, a dtype, an atomic): numba compiles one copy per
    set of such constants, gpuviz's GPU build one per device function, so a parameter two calls pass
    different constants stays unresolved."""
    found: dict[int, dict] = {}
    conflicting: dict[int, set] = {}
    order = callers_first(root)
    for fs in order:  # callers before callees (breadth first): a caller's own bindings are known
        constants = compile_time_locals(fs, found.get(id(fs.fn), {}))
        for node in ast.walk(fs.tree):
            sub = called_function(fs, node)
            if sub is None:
                continue
            mine = found.setdefault(id(sub.fn), {})
            bad = conflicting.setdefault(id(sub.fn), set())
            given = dict(zip(sub.params, node.args))
            given.update({kw.arg: kw.value for kw in node.keywords if kw.arg})
            for p in sub.params:
                value = fold(given.get(p), fs, constants)
                if value is UNKNOWN or p in bad:
                    bad.add(p)
                    mine.pop(p, None)
                elif p in mine and not _same(mine[p], value):
                    bad.add(p)
                    del mine[p]
                elif p not in bad:
                    mine[p] = value
    return found


def _is_view_expr(node, views: set) -> bool:
    """Whether ``node`` makes a view (``a[i:j]``, ``a[i, :]``, ``.view(dtype)``/``.reshape(...)`` of one) or names
    one of ``views``."""
    if isinstance(node, ast.Name):
        return node.id in views
    if isinstance(node, ast.Subscript):
        return RewriteBase.index_expr(node.slice) is None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("view", "reshape"):
        return isinstance(node.func.value, ast.Subscript) and _is_view_expr(node.func.value, views) or \
            isinstance(node.func.value, ast.Name) and node.func.value.id in views
    return False


def view_parameters(root: FunctionSource) -> dict[int, set[str]]:
    """{id of a device function: its parameters that some call passes a view}, read off the source before the
    rewrite (callers are rewritten before their callees, and every caller must pass such a parameter the view's
    offset): an argument that makes a view, or names one the caller made or was given."""
    order = callers_first(root)
    found: dict[int, set[str]] = {}
    changed = True
    while changed:
        changed = False
        for fs in order:
            views = set(found.get(id(fs.fn), ()))
            for _ in range(2):  # a view of a view
                views |= {n.targets[0].id for n in ast.walk(fs.tree)
                          if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
                          and _is_view_expr(n.value, views)}
            for node in ast.walk(fs.tree):
                sub = called_function(fs, node)
                if sub is not None:
                    for p, a in zip(sub.params, node.args):
                        if _is_view_expr(a, views) and p not in found.setdefault(id(sub.fn), set()):
                            found[id(sub.fn)].add(p)
                            changed = True
    return {k: v for k, v in found.items() if v}


def _same(a, b) -> bool:
    if a is b:
        return True
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001
        return False


def _calls_itself(fs: FunctionSource) -> bool:
    """Whether ``fs`` reaches itself through the device functions it calls (recursion)."""
    seen, stack = set(), list(fs.device_functions.values())
    while stack:
        sub = stack.pop()
        if sub.fn is fs.fn:
            return True
        if id(sub.fn) not in seen:
            seen.add(id(sub.fn))
            stack.extend(sub.device_functions.values())
    return False
