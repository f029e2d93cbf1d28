"""The Jinja2 environment of faasprof's HTML pages (``report.html`` of a run, of a comparison, of a
sweep and of ``faasprof reproduce``; Fig 14's section that ``faasprof interference`` adds to a run's):
the templates in ``faasprof/analyzer/templates/`` (package data), escaped by Jinja2's autoescape,
with the number formats of ``faasprof.analyzer.markup`` as filters.

A page is a template that extends ``page.html`` (the house style sheet and the page around the
body), one block per section; the Python side gives each block its data from one function per
section. ``Table`` is what the ``table`` macro of ``macros.html`` draws.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from faasprof.analyzer import markup


@dataclass
class Table:
    """A table of the ``table`` macro: numbers are formatted by ``cell``; ``groups``: (label,
    number of columns) from the first column on, a header row that names what a run of columns
    measures; ``row_classes``: a CSS class per row (the modes' colours)."""

    headers: list[str]
    rows: list[list[Any]]
    left: int = 1
    row_classes: list[str] | None = None
    groups: list[tuple[str, int]] = field(default_factory=list)


@dataclass(frozen=True)
class Image:
    """A PNG embedded in the page (a data URI: the page stays one self-contained file)."""

    alt: str
    base64_png: str


def cell(value: object) -> str:
    """A cell's text: a number as ``markup.fmt`` writes it (no exponents, thousands separated),
    a flag as yes/no, nothing as –; text as it is, for the template to escape."""
    if value is None or isinstance(value, (bool, int, float)):
        return markup.fmt(value)
    return str(value)


def embedded_image(path: Path, alt: str) -> Image:
    return Image(alt, base64.b64encode(path.read_bytes()).decode("ascii"))


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("faasprof.analyzer", "templates"),
        autoescape=True,  # every value is text to show, never markup, unless it is Markup
        undefined=StrictUndefined,  # a name the template expects and the code did not give fails the render
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(cell=cell, ms=markup.ms, pct=markup.pct, rate=markup.rate, ratio=markup.ratio)
    env.globals["style"] = Markup(markup.STYLE)
    return env


ENVIRONMENT = _environment()


def render(template: str, **context: object) -> str:
    """The page ``template`` (a file of ``faasprof/analyzer/templates/``) rendered with ``context``."""
    return ENVIRONMENT.get_template(template).render(**context)
