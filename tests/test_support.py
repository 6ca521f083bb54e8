"""The capture plan is made without any back end (issue 24): the front end's support check
(gpuviz.capture.frontend.support) decides what gpuviz refuses, for every back end alike, and the CPU executor
generates its code itself, once per plan, kept in its own cache that holds neither plans nor kernels alive.

The CPU executor's code generator still reads every statement and refuses what it cannot run: the tests below hold
its refusals to the front end's, diagnostic for diagnostic (construct, file, line, message), so the two cannot
drift apart."""

import gc
import importlib
import weakref

import numpy as np
import pytest
from numba import cuda

import gpuviz
from gpuviz.capture.backends.cpu import compile as cpu_compile
from gpuviz.capture.backends.cpu import executor, tables
from gpuviz.capture.backends.cpu.executor import compile_for_cpu
from gpuviz.capture.errors import UnsupportedConstruct
from gpuviz.capture.frontend import language
from gpuviz.capture.frontend.plan import plan_for
from gpuviz.capture.frontend.support import support_diagnostics
from gpuviz.catalog import all_kernels

from . import corpus_support as C
from .support_examples import EXAMPLES

#: modules of the test suite whose module-level kernels are checked too (the examples of what gpuviz refuses and
#: of what it runs that the other tests use)
KERNEL_MODULES = ["tests.support_examples", "tests.capture_kernels", "tests.plan_kernels", "tests.view_kernels",
                  "tests.constructs_tail_helpers", "tests.other_dtype_kernels", "tests.test_capture_language",
                  "tests.test_capture_semantics", "tests.test_constructs_tail", "tests.test_construct_table",
                  "tests.test_records", "tests.test_watchdog"]


def _generator_diagnostics(kernel):
    plan = plan_for(kernel)
    return cpu_compile.compile_kernel(plan, debug=plan.debug)[1]


def _module_kernels():
    out = []
    for name in KERNEL_MODULES:
        module = importlib.import_module(name)
        for attr, obj in vars(module).items():
            if getattr(getattr(obj, "py_func", None), "__module__", None) == name:
                out.append(pytest.param(obj, id=f"{name.split('.')[-1]}.{attr}"))
    return out


@pytest.mark.parametrize("name", sorted(all_kernels()))
def test_the_front_end_accepts_every_bundled_kernel_as_the_generator_does(name):
    kernel = all_kernels()[name].kernel
    assert support_diagnostics(plan_for(kernel)) == _generator_diagnostics(kernel) == []


@pytest.mark.parametrize("kernel, says", [pytest.param(k, says, id=k.py_func.__name__) for k, says in EXAMPLES])
def test_the_front_end_refuses_each_construct_as_the_generator_does(kernel, says):
    """Each example reaches the refusal it is there for (``says``), with the same diagnostics from both readers, and
    the plan keeps them."""
    plan = plan_for(kernel)
    front = support_diagnostics(plan)
    assert front == _generator_diagnostics(kernel)
    if says is None:
        assert front == [] and plan.diagnostics == []
    else:
        assert any(says in d.message for d in front), [d.message for d in front]
        assert [d for d in plan.diagnostics if d in front] == front


@pytest.mark.parametrize("kernel", _module_kernels())
def test_the_front_end_reads_the_suites_kernels_as_the_generator_does(kernel):
    assert support_diagnostics(plan_for(kernel)) == _generator_diagnostics(kernel)


@pytest.mark.skipif(not C.CORPUS.exists(), reason="no corpus file: run bench/corpus_extract.py")
def test_the_front_end_reads_numba_cudas_corpus_as_the_generator_does():
    index, arrays = C.load()
    rb = C.Rebuilder(index, arrays)
    seen, read, refused = set(), 0, 0
    for launch in index["launches"]:
        if "kernel" not in launch or "unstorable" in launch or repr(launch["kernel"]) in seen:
            continue
        seen.add(repr(launch["kernel"]))
        try:
            kernel = rb.function(launch["kernel"])
            plan = plan_for(kernel)
        except (C.Unstorable, UnsupportedConstruct):  # not rebuilt, or refused before any statement is read
            continue
        front = support_diagnostics(plan)
        assert front == _generator_diagnostics(kernel), launch.get("test")
        read, refused = read + 1, refused + bool(front)
    # every kernel of numba-cuda's corpus is read alike and accepted by both readers since alignment= runs (the
    # readers' refusals are compared on tests/support_examples.py's kernels, each of which is refused)
    assert read > 450 and refused == 0


def test_the_generators_tables_map_exactly_the_names_the_front_end_accepts():
    assert set(tables.MATH) == language.MATH_FUNCTIONS
    assert set(tables.BUILTINS) == language.BUILTIN_CALLS
    assert set(tables.OPERATOR) == language.OPERATOR_FUNCTIONS
    assert set(tables.BINOPS) == language.BINARY_OPERATORS
    assert set(tables.CMPOPS) == language.COMPARISONS
    assert set(tables.CUDA_DIMS) == language.THREAD_INDEXES and set(tables.XYZ) == language.AXES


def test_the_plan_is_read_without_the_cpu_generator(monkeypatch):
    """Making a plan runs no back end: with the generator broken, a new kernel still gets its plan (and the
    refusals the front end finds); the CPU executor meets the broken generator only when it runs the kernel."""
    def broken(plan, *, debug=False):
        raise AssertionError("the CPU generator ran")

    monkeypatch.setattr(cpu_compile, "compile_kernel", broken)
    monkeypatch.setattr(executor, "compile_kernel", broken)
    kernel = _make_kernel(2.0)
    assert plan_for(kernel).diagnostics == []
    refused = cuda.jit(EXAMPLES[0][0].py_func)  # a new kernel object: a new plan
    assert "'while ... else'" in plan_for(refused).diagnostics[0].message
    with pytest.raises(AssertionError, match="the CPU generator ran"):
        gpuviz.capture(kernel, 1, 8, np.zeros(8))


def test_a_refusal_only_the_generator_makes_is_raised_when_the_executor_first_runs_the_kernel(monkeypatch):
    """Should the generator refuse a statement the front end accepted, the CPU executor refuses the kernel with the
    generator's diagnostics, as the same UnsupportedConstruct the plan would raise, and caches nothing."""
    refused = EXAMPLES[0][0]
    kernel = _make_kernel(3.0)
    monkeypatch.setattr(executor, "compile_kernel", lambda plan, debug=False: cpu_compile.compile_kernel(
        plan_for(refused), debug=debug))
    with pytest.raises(UnsupportedConstruct) as refusal:
        gpuviz.capture(kernel, 1, 8, np.zeros(8))
    with pytest.raises(UnsupportedConstruct) as expected:
        plan_for(refused).raise_if_unsupported()
    assert str(refusal.value) == str(expected.value) and refusal.value.diagnostics == expected.value.diagnostics
    monkeypatch.undo()
    out = np.zeros(8)
    gpuviz.capture(kernel, 1, 8, out)
    assert out.tolist() == [3.0 * i for i in range(8)]


def _make_kernel(scale):
    """A new kernel object each call, as a kernel factory makes them (closures over ``scale``)."""
    @cuda.jit
    def scaled(out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = scale * i

    return scaled


def test_a_second_capture_of_a_kernel_reuses_its_cpu_code(monkeypatch):
    generated = []

    def counting(plan, *, debug=False):
        generated.append(plan)
        return cpu_compile.compile_kernel(plan, debug=debug)

    monkeypatch.setattr(executor, "compile_kernel", counting)
    kernel = _make_kernel(2.0)
    for _ in range(2):
        out = np.zeros(8)
        gpuviz.capture(kernel, 1, 8, out)
        assert out.tolist() == [2.0 * i for i in range(8)]
    assert generated == [plan_for(kernel)]
    assert compile_for_cpu(kernel).entry is compile_for_cpu(kernel).entry
    other = _make_kernel(2.0)  # another kernel object of the same factory: its own plan, its own code
    gpuviz.capture(other, 1, 8, np.zeros(8))
    assert len(generated) == 2 and compile_for_cpu(other).entry is not compile_for_cpu(kernel).entry


def test_a_kernel_nobody_holds_frees_its_plan_and_its_cpu_code():
    """The plan cache holds a kernel weakly and the executor's cache holds plans weakly, and what they keep does not
    point back: once the program lets go of a kernel, its plan and its compiled code go too."""
    kernel = _make_kernel(2.0)
    gpuviz.capture(kernel, 1, 8, np.zeros(8))
    ck = compile_for_cpu(kernel)
    plan, entry, kernel_ref = weakref.ref(ck.plan), weakref.ref(ck.entry), weakref.ref(kernel)
    del ck
    assert plan() is not None and entry() is not None
    del kernel
    gc.collect()
    assert kernel_ref() is None
    assert plan() is None and entry() is None
