"""Layer boundaries from DESIGN.md, checked by walking imports with ast."""

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "tessel"


def imported_modules(path: pathlib.Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def files(*parts):
    return sorted(PACKAGE.joinpath(*parts).rglob("*.py"))


@pytest.mark.parametrize("path", files("passes") + files("dialects"), ids=lambda p: p.name)
def test_passes_and_dialects_never_import_torch_or_triton(path):
    forbidden = {m for m in imported_modules(path)
                 if m.split(".")[0] in ("torch", "triton")}
    assert not forbidden, f"{path.name} imports {forbidden}"


@pytest.mark.parametrize("path", files("frontend"), ids=lambda p: p.name)
def test_frontend_never_imports_a_target_module(path):
    targets = {m for m in imported_modules(path)
               if m.startswith("tessel.targets") and m != "tessel.targets.base"}
    assert not targets, f"{path.name} imports {targets}; ask tessel.targets.base.get_target"


def below_the_frontend():
    """Targets, passes, dialects, and the modules of tessel's top level (the graph
    signature, the cache, the IR bindings, ...) that the frontend builds on."""
    return files("targets") + files("passes") + files("dialects") + sorted(PACKAGE.glob("*.py"))


@pytest.mark.parametrize("path", below_the_frontend(),
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_nothing_below_the_frontend_imports_it(path):
    frontend = {m for m in imported_modules(path) if m.startswith("tessel.frontend")}
    assert not frontend, (f"{path.relative_to(PACKAGE)} imports {frontend}; what targets "
                          "and the frontend share lives below both (tessel/signature.py, "
                          "tessel/cache.py)")


@pytest.mark.parametrize("path", files(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_mlir_bindings_only_through_tessel_ir(path):
    if path.name == "ir.py":
        return
    bindings = {m for m in imported_modules(path)
                if m in ("torch_mlir.ir", "torch_mlir.passmanager", "torch_mlir.rewrite",
                         "torch_mlir.execution_engine", "torch_mlir.dialects.ext")}
    assert not bindings, f"{path.name} imports {bindings} directly"
