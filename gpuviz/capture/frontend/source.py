"""Read a kernel's Python source and what its names refer to.

Both instrumenters (the SIMT executor's and the per-thread one used on numba's simulator and on a
GPU) start here: the function's AST with absolute line numbers, its globals, and the device functions
it calls (transitively), so that their memory accesses are recorded too.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import textwrap
import types
from dataclasses import dataclass, field

from ..errors import UnsupportedConstruct


def python_function(kernel):
    """The Python function behind a ``@cuda.jit`` dispatcher (numba's or the simulator's), or the function itself."""
    fn = getattr(kernel, "py_func", None)
    if fn is None and isinstance(kernel, types.FunctionType):
        fn = kernel
    if not isinstance(fn, types.FunctionType):
        raise UnsupportedConstruct(
            f"{kernel!r} is not a @cuda.jit kernel or a Python function: gpuviz needs its Python source"
        )
    return fn


def is_device_function(obj) -> bool:
    return hasattr(obj, "py_func") and isinstance(getattr(obj, "py_func"), types.FunctionType)


@dataclass
class FunctionSource:
    """A parsed kernel or device function."""

    name: str
    fn: types.FunctionType
    tree: ast.FunctionDef  # line numbers are absolute lines of ``file``
    file: str
    first_line: int
    last_line: int
    globals: dict
    params: list[str]  # the positional parameters
    device_functions: dict[str, "FunctionSource"] = field(default_factory=dict)  # called by name
    #: device functions only passed as values (to a device function that calls its parameter)
    value_functions: dict[str, "FunctionSource"] = field(default_factory=dict)
    #: ``rest`` of ``def f(a, *rest)``: the further arguments, as a tuple (numba packs them so too)
    vararg: str | None = None

    @property
    def all_params(self) -> list[str]:
        """The names the parameters bind: the positional ones, then ``*rest``'s."""
        return self.params + ([self.vararg] if self.vararg else [])

    def all_device_functions(self) -> dict[str, "FunctionSource"]:
        return {**self.value_functions, **self.device_functions}

    def reachable(self, passed: bool = True) -> list["FunctionSource"]:
        """This function and every function it reaches: the device functions it calls (and with ``passed`` those it
        passes on as values), theirs, and so on; each once, in depth-first order (the same in every process)."""
        out, seen = [], set()

        def visit(fs):
            if id(fs.fn) in seen:
                return
            seen.add(id(fs.fn))
            out.append(fs)
            for sub in (fs.all_device_functions() if passed else fs.device_functions).values():
                visit(sub)

        visit(self)
        return out

    def where(self, node) -> str:
        return f"{self.file}:{getattr(node, 'lineno', self.first_line)}"

    def line_text(self, line: int) -> str:
        return linecache.getline(self.file, line).strip() if self.file else ""

    def names(self) -> dict:
        """Globals plus closure variables: what the function's free names refer to."""
        ns = dict(self.fn.__globals__)
        if self.fn.__closure__:
            for name, cell in zip(self.fn.__code__.co_freevars, self.fn.__closure__):
                try:
                    ns[name] = cell.cell_contents
                except ValueError:  # empty cell
                    pass
        return ns


def no_source_reason(fn: types.FunctionType) -> str | None:
    """Why ``fn`` has no source file to read, or None: a function built with ``exec()`` (or ``compile()``) names a
    pseudo-file such as ``<string>`` that no line cache holds (a notebook cell's pseudo-file is held: it reads)."""
    file = fn.__code__.co_filename
    if file.startswith("<") and file.endswith(">") and not linecache.getlines(file):
        return f"no source: built with exec() (its code names the file {file!r}, which holds no text)"
    return None


def parse_function(fn: types.FunctionType) -> FunctionSource:
    reason = no_source_reason(fn)
    if reason is not None:
        file, line = fn.__code__.co_filename, fn.__code__.co_firstlineno
        raise UnsupportedConstruct(
            f"{file}:{line}: {fn.__qualname__}: {reason}. gpuviz instruments a kernel from its Python source: "
            "the launch runs untraced; define the kernel in a .py file (or a notebook cell) to trace it",
            file=file, line=line)
    try:
        lines, first_line = inspect.getsourcelines(fn)
    except (OSError, TypeError) as exc:
        raise UnsupportedConstruct(
            f"cannot read the source of {fn.__qualname__}: {exc}. gpuviz instruments a kernel from its "
            "Python source, so define it in a .py file (or a notebook cell)"
        ) from exc
    file = inspect.getsourcefile(fn) or inspect.getfile(fn)
    src = textwrap.dedent("".join(lines))
    try:
        module = ast.parse(src)
    except SyntaxError as exc:
        raise UnsupportedConstruct(f"{file}:{first_line}: cannot parse {fn.__qualname__}: {exc}", file=file) from exc
    ast.increment_lineno(module, first_line - 1)
    fdefs = [n for n in module.body if isinstance(n, ast.FunctionDef)]
    if not fdefs:
        raise UnsupportedConstruct(f"{file}:{first_line}: {fn.__qualname__} is not a plain 'def' function", file=file)
    tree = fdefs[0]
    tree.decorator_list = []
    args = tree.args
    if args.kwarg or args.kwonlyargs or args.posonlyargs or args.defaults:
        raise UnsupportedConstruct(
            f"{file}:{tree.lineno}: kernel {tree.name} has **kwargs, keyword-only or default "
            "arguments; CUDA kernels take positional parameters (and *args)",
            file=file,
            line=tree.lineno,
        )
    last_line = max(getattr(n, "end_lineno", tree.lineno) or tree.lineno for n in ast.walk(tree))
    fs = FunctionSource(
        name=fn.__name__,
        fn=fn,
        tree=tree,
        file=file,
        first_line=tree.lineno,
        last_line=last_line,
        globals=fn.__globals__,
        params=[a.arg for a in args.args],
        vararg=args.vararg.arg if args.vararg else None,
    )
    return fs


def collect_device_functions(root: FunctionSource) -> dict[str, FunctionSource]:
    """All device functions reachable from ``root`` by name, keyed by the name used at the call."""
    found: dict[int, FunctionSource] = {}
    by_name: dict[str, FunctionSource] = {}

    def parsed(obj) -> FunctionSource:
        """A device function's source, parsed and walked once however often it is reached."""
        key = id(obj.py_func)
        if key not in found:
            found[key] = parse_function(obj.py_func)
            visit(found[key])
        return found[key]

    def visit(fs: FunctionSource):
        ns = fs.names()
        local_names = assigned_names(fs.tree) | set(fs.all_params)
        called = {n.func.id for n in ast.walk(fs.tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        for node in ast.walk(fs.tree):
            # called by name, or passed as a value (to a device function that calls its parameter)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                name = node.id
                if name in local_names:
                    continue
                obj = ns.get(name)
                if obj is not None and is_device_function(obj):
                    sub = parsed(obj)
                    (fs.device_functions if name in called else fs.value_functions)[name] = sub
                    by_name.setdefault(name, sub)
            # called as an attribute of another module: ``mymod.helper(x)``, keyed by its dotted text
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                text, obj = module_attribute(node.func, ns, local_names)
                if text is not None and is_device_function(obj):
                    sub = parsed(obj)
                    fs.device_functions[text] = sub
                    by_name.setdefault(text, sub)

    visit(root)
    return by_name


def reachable_functions(root: FunctionSource, *, callers_first: bool = False,
                        values: bool = True) -> list[FunctionSource]:
    """``root`` and every device function it reaches (collected by :func:`collect_device_functions`), each once:
    the one walk of a kernel's device functions. ``values``: also those passed as values, not only called.
    ``callers_first``: breadth first (a function before those it calls, but for recursion); else in the order a
    depth-first walk meets them (the plan numbers its functions so)."""
    edges = FunctionSource.all_device_functions if values else (lambda fs: fs.device_functions)
    order, seen = [root], {id(root.fn)}
    if callers_first:
        k = 0
        while k < len(order):
            fs = order[k]
            k += 1
            for sub in edges(fs).values():
                if id(sub.fn) not in seen:
                    seen.add(id(sub.fn))
                    order.append(sub)
        return order
    stack = [root]
    while stack:
        for sub in edges(stack.pop()).values():
            if id(sub.fn) not in seen:
                seen.add(id(sub.fn))
                order.append(sub)
                stack.append(sub)
    return order


def dotted_name(node) -> str | None:
    """``'mymod.helper'`` for an attribute chain rooted at a name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) and parts else None


def module_attribute(node, ns: dict, local_names=()) -> tuple[str | None, object]:
    """(``'mymod.helper'``, the object) for an attribute chain rooted at a module the function's namespace
    holds (``import mymod``), else (None, None)."""
    text = dotted_name(node)
    if text is None:
        return None, None
    root, *attrs = text.split(".")
    if root in local_names or not isinstance(ns.get(root), types.ModuleType):
        return None, None
    obj = ns[root]
    for attr in attrs:
        obj = getattr(obj, attr, None)
        if obj is None:
            return None, None
    return text, obj


def assigned_names(tree: ast.FunctionDef) -> set[str]:
    """Names bound inside the function body (Python makes them local): assigned, and a function defined
    inside it (a closure) with its parameters."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, ast.FunctionDef) and node is not tree:
            out.add(node.name)
            out.update(a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs))
            out.update(a.arg for a in (node.args.vararg, node.args.kwarg) if a is not None)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            raise UnsupportedConstruct(f"line {node.lineno}: 'global'/'nonlocal' cannot be used in a CUDA kernel")
    return out


def source_span(root: FunctionSource) -> tuple[str, int, int]:
    """(text, first, last): the lines of root's file that hold root and its same-file device functions."""
    funcs = [root] + [f for f in root.device_functions.values() if f.file == root.file]
    first = min(f.first_line for f in funcs)
    last = max(f.last_line for f in funcs)
    # include decorators above the first def so the source reads as the user wrote it
    lines = linecache.getlines(root.file)
    while first > 1 and lines and lines[first - 2].lstrip().startswith("@"):
        first -= 1
    if not lines:
        text = textwrap.dedent(inspect.getsource(root.fn))
        return text, root.first_line, root.first_line + text.count("\n")
    return "".join(lines[first - 1 : last]), first, last
