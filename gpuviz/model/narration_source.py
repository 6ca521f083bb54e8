"""What the narration reads from the kernel's own source: symbolic subscripts (``B[k, col]``) and warp shuffles
and votes (``shfl_down_sync(mask, v, offset)`` with the offsets a loop gives it), by source line, with :mod:`ast`.

numpy only: no Qt, no numba.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass

# ---- symbolic subscripts from the kernel's source ------------------------------------------------
@dataclass
class _Subscript:
    name: str
    store: bool
    dims: list[str]


def _parsed(launch):
    """(the kernel's source parsed, the offset that makes its lines absolute), or None when the launch has no
    source or it does not parse."""
    src = launch.source or ""
    if not src.strip():
        return None
    try:
        tree = ast.parse(textwrap.dedent(src))
    except SyntaxError:
        return None
    return tree, int(launch.first_line or 1) - 1


def _subscripts(launch) -> dict[int, list[_Subscript]]:
    """Absolute source line -> the ``name[...]`` subscripts written on it (read from launch.source)."""
    out: dict[int, list[_Subscript]] = {}
    parsed = _parsed(launch)
    if parsed is None:
        return out
    tree, base = parsed
    # ``a[i] += x`` reads a[i] before it writes it: its target is a load too (the first load of the line)
    aug_targets = {id(n.target) for n in ast.walk(tree) if isinstance(n, ast.AugAssign)}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)):
            continue
        sl = node.slice
        elts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
        try:
            dims = [ast.unparse(e) for e in elts]
        except Exception:  # noqa: BLE001 - an exotic node ast cannot print back: name the concrete elements instead
            continue
        out.setdefault(node.lineno + base, []).append(
            _Subscript(node.value.id, isinstance(node.ctx, ast.Store), dims)
        )
        if id(node) in aug_targets:
            out[node.lineno + base].append(_Subscript(node.value.id, False, dims))
    return out


# ---- warp shuffles and votes from the kernel's source ---------------------------------------------
#: the warp-level calls a WARP_OP event stands for
_WARP_CALLS = ("shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync", "ballot_sync", "all_sync",
               "any_sync", "syncwarp")


@dataclass
class _WarpCall:
    name: str  # "shfl_down_sync"
    args: list[str]  # the arguments as written: mask, value, offset
    #: the offset (lane, delta or xor mask) at each execution by one warp, when the source says it: a literal
    #: (one value, every time), ``for offset in (16, 8, 4, 2, 1)``, or ``offset = 16`` halved (``//= 2``, ``>>= 1``)
    #: or doubled in the loop around the call
    offsets: list[int] | None


def _int_literal(node) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return int(node.value)
    return None


def _offset_sequence(call: ast.Call, arg, parents: dict, tree) -> list[int] | None:
    lit = _int_literal(arg)
    if lit is not None:
        return [lit]
    if not isinstance(arg, ast.Name):
        return None
    name = arg.id
    node = parents.get(id(call))
    while node is not None and not isinstance(node, (ast.For, ast.While, ast.FunctionDef)):
        node = parents.get(id(node))
    if isinstance(node, ast.For) and isinstance(node.target, ast.Name) and node.target.id == name:
        if isinstance(node.iter, (ast.Tuple, ast.List)):
            vals = [_int_literal(e) for e in node.iter.elts]
            return vals if all(v is not None for v in vals) else None
        return None
    if not isinstance(node, ast.While):
        return None
    steps = [n for n in ast.walk(node) if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name)
             and n.target.id == name and _int_literal(n.value) is not None]
    starts = [n for n in ast.walk(tree) if isinstance(n, ast.Assign) and len(n.targets) == 1
              and isinstance(n.targets[0], ast.Name) and n.targets[0].id == name and _int_literal(n.value) is not None
              and n.lineno < node.lineno]
    if len(steps) != 1 or not starts:
        return None
    value, by, op = _int_literal(starts[-1].value), _int_literal(steps[0].value), type(steps[0].op)
    moves = {ast.FloorDiv: lambda v: v // by, ast.RShift: lambda v: v >> by, ast.Mult: lambda v: v * by,
             ast.LShift: lambda v: v << by}
    if op not in moves or by <= 0:
        return None
    out = []
    while 0 < value <= 1024 and len(out) < 12:  # a warp's lanes: an offset outside them ends any sane loop
        out.append(value)
        nxt = moves[op](value)
        if nxt == value:
            break
        value = nxt
    return out or None


def _warp_calls(launch) -> dict[int, list[_WarpCall]]:
    """Absolute source line -> the warp shuffles and votes called on it (read from launch.source)."""
    out: dict[int, list[_WarpCall]] = {}
    parsed = _parsed(launch)
    if parsed is None:
        return out
    tree, base = parsed
    parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        fn = node.func
        name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
        if name not in _WARP_CALLS:
            continue
        try:
            args = [ast.unparse(a) for a in node.args]
        except Exception:  # noqa: BLE001 - an argument ast cannot print back: the call without its words
            args = []
        offsets = (_offset_sequence(node, node.args[2], parents, tree)
                   if name.startswith("shfl") and len(node.args) >= 3 else None)
        out.setdefault(node.lineno + base, []).append(_WarpCall(name, args, offsets))
    return out


_IDENT = re.compile(r"^[A-Za-z_][A-Za-z_0-9]*$")
