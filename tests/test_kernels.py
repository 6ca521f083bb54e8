"""The bundled example kernels: each one, launched plainly at its small size, matches its numpy reference.

Runs under numba's CUDA simulator (tests/conftest.py), or on a real GPU with GPUVIZ_TEST_GPU=1.
"""

import ast
import inspect
import os
import textwrap

import numpy as np
import pytest

from gpuviz.catalog import KernelSpec, all_kernels, get_kernel

SIMULATOR = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
SPECS = all_kernels()
REQUIRED = [
    "vector_add",
    "mandelbrot",
    "reduce_sum",
    "matmul_naive",
    "matmul_tiled",
    "transpose_naive",
    "transpose_shared",
    "transpose_padded",
    "reduce_interleaved",
    "reduce_sequential",
    "reduce_first_add",
    "reduce_warp_shuffle",
    "histogram_global",
    "histogram_shared",
    "race_missing_sync",
    "race_fixed",
    "attention_naive",
    "attention_fused",
    "stencil_heat",
]


def run_plain(spec: KernelSpec, size: int, seed: int = 0):
    """Launch the plain kernel once; return (args before the launch, args after it)."""
    rng = np.random.default_rng(seed)
    args = spec.make_args(size, rng)
    before = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    grid, block = spec.launch(size, spec.default_block)
    spec.kernel[grid, block](*args)
    return before, args


def assert_matches(spec: KernelSpec, actual, expected, where: str):
    assert actual.dtype == expected.dtype, f"{where}: dtype {actual.dtype}, expected {expected.dtype}"
    # atol on the array's own scale, so float32 rounding of values near zero is not judged relative to zero
    atol = spec.rtol * float(np.max(np.abs(expected), initial=0.0))
    np.testing.assert_allclose(actual, expected, rtol=spec.rtol, atol=atol, err_msg=where)


def test_all_required_kernels_are_bundled_once():
    assert list(SPECS) == [s.name for s in SPECS.values()]
    missing = [name for name in REQUIRED if name not in SPECS]
    assert not missing, f"missing kernels: {missing}"
    assert len({id(s.kernel) for s in SPECS.values()}) == len(SPECS), "two specs share one kernel"


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(KeyError) as err:
        get_kernel("nope")
    message = str(err.value)
    assert "'nope'" in message
    for name in ("vector_add", "attention_fused", "race_fixed"):
        assert name in message


def test_get_kernel_returns_the_spec():
    assert get_kernel("matmul_tiled") is SPECS["matmul_tiled"]


@pytest.mark.parametrize("name", list(SPECS))
def test_spec_metadata(name):
    spec = SPECS[name]
    assert spec.description and "\n" not in spec.description
    sentences = [s for s in spec.note.replace("? ", ". ").split(". ") if s.strip()]
    assert 2 <= len(sentences) <= 5, f"{name}: note has {len(sentences)} sentences"
    assert 1 <= spec.small_size <= spec.default_size
    assert all(isinstance(b, int) and b >= 1 for b in spec.default_block)
    if spec.group:
        ranks = sorted(s.rank for s in SPECS.values() if s.group == spec.group)
        assert ranks == list(range(len(ranks))), f"group {spec.group!r} ranks {ranks}"


@pytest.mark.parametrize("name", list(SPECS))
def test_launch_covers_the_problem(name):
    spec = SPECS[name]
    for size in (spec.small_size, spec.default_size, 1, 33):
        grid, block = spec.launch(size, spec.default_block)
        assert len(grid) == len(block) == len(spec.default_block)
        threads = 1
        for dim, (g, b) in enumerate(zip(grid, block)):
            threads *= g * b
            # every dimension of the problem (elements, or rows and columns) is covered
            covered = g * b * (spec.items_per_thread if dim == len(block) - 1 else 1)
            assert covered >= size, f"{name} at size {size}: grid {grid} x block {block} covers {covered}"
        if size == spec.default_size:
            assert threads <= 20_000, f"{name}: {threads} threads at default size is too many for the CPU executor"
        if size == spec.small_size:
            assert threads <= 1024, f"{name}: {threads} threads at small size"


@pytest.mark.parametrize(
    "name", ["matmul_tiled", "transpose_shared", "transpose_padded", "stencil_heat", "reduce_sum", "race_fixed"]
)
def test_fixed_tile_kernels_refuse_other_blocks(name):
    spec = SPECS[name]
    wrong = tuple(b // 2 for b in spec.default_block)
    with pytest.raises(ValueError, match=name):
        spec.launch(spec.default_size, wrong)


@pytest.mark.parametrize("name", list(SPECS))
def test_args_have_explicit_dtypes(name):
    spec = SPECS[name]
    args = spec.make_args(spec.small_size, np.random.default_rng(1))
    for pos, arg in enumerate(args):
        if isinstance(arg, np.ndarray):
            assert arg.dtype in (np.float32, np.int32), f"{name} arg {pos} is {arg.dtype}"
    expected = spec.reference([a.copy() if isinstance(a, np.ndarray) else a for a in args])
    assert expected, f"{name}: reference checks no output"
    for pos, arr in expected.items():
        assert isinstance(args[pos], np.ndarray) and arr.shape == args[pos].shape and arr.dtype == args[pos].dtype


@pytest.mark.parametrize("name", list(SPECS))
def test_kernel_matches_reference(name):
    spec = SPECS[name]
    if spec.uses_warp_shuffle and SIMULATOR:
        pytest.skip(f"{name} uses cuda.shfl_down_sync, which numba's simulator lacks (checked on a GPU and gpuviz's executor)")
    before, after = run_plain(spec, spec.small_size)
    expected = spec.reference(before)
    if spec.has_race:
        # the racy kernel's output depends on thread timing; only what no race can touch is fixed:
        # the first thread of each block reads its neighbour from global memory, not the shared tile
        block_first = np.arange(0, spec.small_size, spec.default_block[0])
        for pos, arr in expected.items():
            assert_matches(spec, after[pos][block_first], arr[block_first], f"{name} arg {pos}")
        return
    for pos, arr in expected.items():
        assert_matches(spec, after[pos], arr, f"{name} arg {pos}")


@pytest.mark.parametrize(
    "name,block",
    [("vector_add", (96,)), ("matmul_naive", (8, 4)), ("histogram_shared", (32,)), ("attention_fused", (16,))],
)
def test_kernels_without_a_fixed_tile_take_other_blocks(name, block):
    spec = SPECS[name]
    args = spec.make_args(spec.small_size, np.random.default_rng(2))
    before = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    grid, block = spec.launch(spec.small_size, block)
    spec.kernel[grid, block](*args)
    for pos, arr in spec.reference(before).items():
        assert_matches(spec, args[pos], arr, f"{name} arg {pos} with block {block}")


def test_race_pair_differs_only_by_the_barrier():
    racy = SPECS["race_missing_sync"]
    fixed = SPECS["race_fixed"]
    assert racy.has_race and not fixed.has_race
    assert racy.make_args is fixed.make_args and racy.reference is fixed.reference
    racy_lines = inspect.getsource(racy.kernel.py_func).splitlines()[2:]
    fixed_lines = inspect.getsource(fixed.kernel.py_func).splitlines()[2:]
    extra = [line for line in fixed_lines if line not in racy_lines]
    assert [line.split("#")[0].strip() for line in extra] == ["cuda.syncthreads()"]
    assert [line for line in fixed_lines if line not in extra] == racy_lines


FORBIDDEN = {
    ast.Slice: "array slicing",
    ast.Lambda: "a lambda",
    ast.JoinedStr: "an f-string",
    ast.Try: "try/except",
    ast.ClassDef: "a class",
}


def _jitted_functions():
    """Every @cuda.jit function (kernels and device helpers) of every kernel module, as AST."""
    modules = {inspect.getmodule(spec.kernel.py_func) for spec in SPECS.values()}
    for module in sorted(modules, key=lambda m: m.__name__):
        tree = ast.parse(textwrap.dedent(inspect.getsource(module)))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and any("cuda.jit" in ast.unparse(d) for d in node.decorator_list):
                yield module.__name__, node


@pytest.mark.parametrize("module,func", [(m, f) for m, f in _jitted_functions()], ids=lambda x: getattr(x, "name", x))
def test_kernels_use_only_plain_constructs(module, func):
    """gpuviz's executor rewrites kernels' Python; these constructs are outside what it (and students) expect."""
    for node in ast.walk(func):
        for kind, what in FORBIDDEN.items():
            assert not isinstance(node, kind), f"{module}.{func.name} line {node.lineno}: {what}"


def test_some_device_function_touches_memory():
    touching = []
    for module, func in _jitted_functions():
        decorator = " ".join(ast.unparse(d) for d in func.decorator_list)
        if "device=True" in decorator and any(isinstance(n, ast.Subscript) for n in ast.walk(func)):
            touching.append(f"{module}.{func.name}")
    assert touching


@pytest.mark.gpu
@pytest.mark.parametrize("name", [n for n, s in SPECS.items() if not s.has_race])
def test_kernel_matches_reference_at_default_size(name):
    """On a real GPU the app's default sizes are cheap: check them too."""
    spec = SPECS[name]
    before, after = run_plain(spec, spec.default_size)
    for pos, arr in spec.reference(before).items():
        assert_matches(spec, after[pos], arr, f"{name} arg {pos} at size {spec.default_size}")
