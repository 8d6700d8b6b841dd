"""tessel's Python-defined dialects; `tessel.ir.context()` loads them."""
