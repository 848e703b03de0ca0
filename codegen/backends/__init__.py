"""Stage 4, the backends: `StableForms` -> the source text of a generated module.

Each framework is one printer and one template set: `tf` for TensorFlow.
`doctext` (docstring text) and `templates_env` (the Jinja2 environment) are
shared by all of them.
"""
