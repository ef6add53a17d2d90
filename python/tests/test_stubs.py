"""The type stubs and py.typed ship next to the extension."""

from __future__ import annotations

import ast
from pathlib import Path

import lockstep
from lockstep import _lockstep_ext


def test_stub_describes_the_extension():
    stub = Path(_lockstep_ext.__file__).with_name("_lockstep_ext.pyi")
    assert stub.is_file(), stub
    tree = ast.parse(stub.read_text())
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    for name in ("Scenario", "SimReport", "ExploreReport", "ParallelConfig", "Layout", "Decision"):
        assert name in classes, name
        assert getattr(lockstep, name) is getattr(_lockstep_ext, name)
    methods = {n.name for n in classes["Scenario"].body if isinstance(n, ast.FunctionDef)}
    assert {"from_file", "from_yaml", "from_dict", "to_yaml", "to_dict"} <= methods
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert {"fault_kinds", "mutants", "policies", "verdicts", "decision_inputs"} <= functions


def test_python_entry_points_are_annotated():
    import inspect

    # simulate/explore/decide wrap the extension's private functions in typed Python.
    for fn in (lockstep.simulate, lockstep.explore, lockstep.decide, lockstep.layout):
        sig = inspect.signature(fn)
        assert sig.return_annotation is not inspect.Signature.empty, fn


def test_package_is_typed():
    assert (Path(lockstep.__file__).parent / "py.typed").is_file()
