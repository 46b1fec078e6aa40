"""Text printed to a log GitHub Actions reads workflow commands from (docs/formats.md "Escaping").

The runner takes a line as a command when, after leading whitespace, it starts with `::` (the
`::warning ...::` form) and, in its older form, when `##[` occurs anywhere in it. Untrusted text
printed as part of a console line therefore
- never starts a line of its own: line breaks and every other control character (C0, DEL, C1, the
  Unicode line and paragraph separators) are shown as Python writes them, `\\n`, `\\x01`, `\\u2028`;
- never starts with `::` (its first colon is shown as `\\x3a`) and never holds `##[` (`#\\x23[`);
- never holds a lone surrogate (shown as `\\udc80`), which would stop the print with an encoding error.
Ordinary text (letters, digits, spaces, tabs, punctuation, non-ASCII letters) is printed as it is.

`command_data` and `command_property` are the runner's own escaping for the message and the
properties of a `::error file=...,line=...,title=...::message` command perfgate writes itself.
"""
from __future__ import annotations

import re

# Characters that end or hide a line in a log viewer: C0 but the tab, DEL, C1 (with NEL), U+2028/9,
# and lone surrogates.
_SHOWN = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r"}
_COMMAND_START = re.compile(r"^(\s*):(?=:)")


def _shown(match: re.Match) -> str:
    character = match.group(0)
    if character in _NAMED:
        return _NAMED[character]
    code = ord(character)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text) -> str:
    """`text` on one line: control characters and lone surrogates shown as escapes, nothing else changed."""
    return _SHOWN.sub(_shown, str(text))


def log_text(text) -> str:
    """Untrusted text for a console line: on one line, and neither a workflow command nor one's start."""
    line = visible(text).replace("##[", "#\\x23[")
    return _COMMAND_START.sub(lambda match: match.group(1) + "\\x3a", line)


def log_list(items, separator: str = ", ") -> str:
    """Several untrusted items joined for a console line, each escaped."""
    return separator.join(log_text(item) for item in items)


def command_data(text) -> str:
    """The message of a workflow command (after its `::`): the runner reads `%0A` back as a line break."""
    return (visible_surrogates(str(text)).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def command_property(text) -> str:
    """A property value of a workflow command (`file=`, `title=`): also no `:` or `,` that would end it."""
    return command_data(text).replace(":", "%3A").replace(",", "%2C")


def visible_surrogates(text: str) -> str:
    """Lone surrogates shown as `\\udc80`: the rest as it is."""
    return re.sub("[\ud800-\udfff]", _shown, text)
