"""Stage 4, the backends: `StableForms` -> the source text of a generated module.

Each framework is one printer and one template set: `tf` for TensorFlow, `jax` and
`torch`. `printing` and `forms` (lowered programs as lines, chosen forms as functions),
`doctext` (docstring text) and `templates_env` (the Jinja2 environment) are shared by all
of them. This package's own namespace imports only the standard library: the console
script's fast fresh check reads `BACKENDS`, `DEFAULT_OUT` and `header_sha256` from it.
"""

from __future__ import annotations

import hashlib
import importlib

BACKENDS = ("tf", "jax", "torch")
DEFAULT_OUT = {"tf": "generated", "jax": "generated_jax", "torch": "generated_torch"}


def header_sha256(spec_sha256: str, backend: str) -> str:
    """The hash a module's header records: the spec's, and for JAX and PyTorch the backend
    too, so a module built for one backend is never fresh for another (TF's is unchanged)."""
    if backend == "tf":
        return spec_sha256
    return hashlib.sha256(f"{spec_sha256}\0{backend}".encode()).hexdigest()


def emit(forms, backend: str = "tf") -> str:
    """The module `backend` generates from `forms` (imports that backend's emitter only)."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; expected one of {', '.join(BACKENDS)}")
    return importlib.import_module(f"codegen.backends.{backend}.module").emit(forms)
