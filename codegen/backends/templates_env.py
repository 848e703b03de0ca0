"""The Jinja2 environment for hogen's templates (shipped as the `codegen.templates` package).

In: a template name and a context of precomputed strings. Out: rendered text.
`StrictUndefined` turns a missing name into an error instead of an empty string.
"""

from __future__ import annotations

from functools import lru_cache

import jinja2


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("codegen.templates", "."),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )


def render(template: str, context: dict) -> str:
    return _environment().get_template(template).render(**context)
