"""Jinja2 templates of hogen's generated files (packaged as `codegen.templates`)."""
