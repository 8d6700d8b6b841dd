"""The base of every exception tessel defines.

`except tessel.TesselError` catches whatever tessel raises of its own (a compile error
with fallback=False, a bad option, a runtime check); each class also keeps the builtin
base a caller would expect of it (ValueError for a bad option, IndexError for an index
out of range, RuntimeError for failures).
"""


class TesselError(Exception):
    """An error of tessel's own."""
