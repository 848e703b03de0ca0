"""The pipeline as one chain: Spec -> Derivatives -> StableForms -> module source.

In: a `Spec`. Out: the generated module's text. Pure: no files, no TensorFlow.
"""

from __future__ import annotations

from codegen.derive import derive
from codegen.emit import emit
from codegen.spec import Spec
from codegen.stabilize import stabilize


def build(spec: Spec) -> str:
    """The generated module for `spec`."""
    return emit(stabilize(derive(spec)))
