"""The JAX backend: `source` prints lowered programs with jax.numpy, `module` plans the module."""
