"""The docstring header of a tool file (`extract_frontmatter` in the reference).

Python semantics matter here: `splitlines` splits on more than newlines and
`strip` trims more than ASCII spaces, so this runs in Python, not in Node.
"""
from __future__ import annotations

import re

_LINE = re.compile(r'^\s*([a-z_]+):\s*(.*)\s*$', re.IGNORECASE)


def extract_frontmatter(content: str) -> dict[str, str]:
    lines = content.splitlines()
    if not lines or lines[0].strip() != '"""':
        return {}
    frontmatter: dict[str, str] = {}
    for line in lines[1:]:
        if '"""' in line:
            break
        match = _LINE.match(line)
        if match:
            key, value = match.groups()
            frontmatter[key.strip()] = value.strip()
    return frontmatter


def requirements_of(frontmatter: dict[str, str]) -> list[str]:
    """The comma-separated `requirements:` value as the reference's installer splits it."""
    field = frontmatter.get('requirements', '')
    if not field:
        return []
    return [item.strip() for item in field.split(',') if item.strip()]
