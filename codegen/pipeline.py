"""The pipeline as one chain: Spec -> Derivatives -> StableForms -> module source.

In: a `Spec` and a backend name. Out: the generated module's text. Pure: no files, no
framework imported.
"""

from __future__ import annotations

from sympy.core.cache import clear_cache

from codegen.backends import emit
from codegen.derive import DEFAULT_MAX_OPS, derive
from codegen.front.spec import Spec
from codegen.lower import clear_lowered
from codegen.stabilize import stabilize


def build(spec: Spec, max_ops: int = DEFAULT_MAX_OPS, backend: str = "tf") -> str:
    """The generated module for `spec`; `max_ops` bounds the size of any one derivative.

    SymPy's cache starts empty: what an earlier spec left in it can change how SymPy writes
    this one's derivatives (erfc(-u) kept whole or turned into 2 - erfc(u)), so the bytes
    would depend on which specs one process built before. Lowered programs are forgotten
    too, so a process that builds many specs does not keep every form of the earlier ones."""
    clear_cache()
    clear_lowered()
    return emit(stabilize(derive(spec, max_ops)), backend)
