"""The IR contract between layers, written as data in one place.

Each target accepts only linalg-on-tensors IR whose ops come from these dialects
(plus the listed single ops). The `check-contract` pass enforces it as the first
step of every target pipeline, so an op that slipped through the frontend fails
with its name and location instead of deep inside LLVM lowering.
"""

_LINALG_ON_TENSORS = frozenset({
    "builtin", "func", "arith", "math", "tensor", "linalg", "scf", "affine",
    "bufferization", "complex",
    # torch-mlir's TMTensor ops (scatter, sort, ...) have their own bufferization
    "tm_tensor",
})

TARGET_INPUT_DIALECTS: dict[str, frozenset[str]] = {
    "cpu": _LINALG_ON_TENSORS,
    "gpu": _LINALG_ON_TENSORS,
}

# Single ops allowed beyond the dialects above.
TARGET_INPUT_OPS: dict[str, frozenset[str]] = {
    # torch-mlir emits shape checks as cf.assert; they lower to a runtime abort.
    "cpu": frozenset({"cf.assert"}),
    "gpu": frozenset({"cf.assert"}),
}
