"""Text embedded in an HTML page: element text, attribute values, JSON in <script>, plotly's markup.

- `text`: element text and quoted attribute values (`<`, `>`, `&`, `"`, `'` as references);
- `script_json`: a value as JSON inside a <script> element. JSON escapes quotes but not `<`: a
  string holding `</script>` would end the element and one holding `<!--<script>` would put the
  HTML parser in a state where the real `</script>` no longer ends it (no chart draws). Every `<`,
  `>` and `&` is written `\\u003c`, `\\u003e`, `\\u0026` (the same string to JavaScript), and the
  output is ASCII, so U+2028/U+2029 and lone surrogates are `\\u` escapes too;
- `plotly_text`: text plotly.js renders as its own small markup (titles, tick labels, hover texts,
  legend names read `<br>`, `<b>`, `<a href>`): references, which plotly shows as the characters.
"""
from __future__ import annotations

import html
import json
import re

_SURROGATE = re.compile("[\ud800-\udfff]")
_SCRIPT_UNSAFE = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"}


def _no_surrogates(text: str) -> str:
    # a lone surrogate cannot be written as UTF-8: shown as U+FFFD, the replacement character
    return _SURROGATE.sub("\ufffd", text)


def text(value) -> str:
    """Element text or a double- or single-quoted attribute value."""
    return html.escape(_no_surrogates(str(value)), quote=True)


def script_json(value, **dumps) -> str:
    """`value` as JSON that cannot end or change the <script> element it is written in."""
    encoded = json.dumps(value, ensure_ascii=True, **dumps)
    return re.sub("[<>&]", lambda match: _SCRIPT_UNSAFE[match.group(0)], encoded)


def plotly_text(value) -> str:
    """Text plotly.js shows literally (its markup, `<br>` and `<a>`, disarmed)."""
    return html.escape(_no_surrogates(str(value)), quote=False)
