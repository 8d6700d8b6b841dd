"""What importing tessel does: nothing but defining things."""

import subprocess
import sys


def test_importing_the_backend_starts_no_process():
    """torch.compile resolves backend="mlir" by importing tessel's backend module; the
    compile worker (and on a GPU machine, Triton's hashing thread) start at the first
    compile instead."""
    code = ("import tessel.frontend.backend, tessel.compile_worker as worker\n"
            "print(worker._worker._process is None)")
    printed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True).stdout.strip()
    assert printed == "True"


def test_every_exception_tessel_defines_is_a_tessel_error():
    """One hierarchy: `except tessel.TesselError` catches whatever tessel raises of its
    own, each class keeping the builtin base callers expect (ValueError, IndexError)."""
    import ast
    import importlib
    import pathlib

    import tessel
    package = pathlib.Path(tessel.__file__).parent
    found = []
    for path in package.rglob("*.py"):
        module_name = ".".join(path.relative_to(package.parent).with_suffix("").parts)
        classes = [node.name for node in ast.walk(ast.parse(path.read_text()))
                   if isinstance(node, ast.ClassDef)]
        if not classes:
            continue
        module = importlib.import_module(module_name)
        for name in classes:
            value = getattr(module, name, None)
            if isinstance(value, type) and issubclass(value, BaseException):
                found.append(value)
    assert len(found) >= 14
    assert [c.__name__ for c in found if not issubclass(c, tessel.TesselError)] == []
