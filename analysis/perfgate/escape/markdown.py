"""Text in GitHub Markdown: the step summary (report.md), the A/B reports, table cells and <summary>.

Untrusted text is shown as written, never as markup: every character that would start Markdown or
HTML is a numeric character reference, which GitHub decodes alike in paragraphs, table cells and
HTML blocks such as <summary> (where a backslash escape such as \\` would show its backslash):
- `<`, `>`, `&`: no HTML tag, comment or entity of the text's own;
- a `]` followed by `(`, `[` or `:`: no link `[x](javascript:...)`, image `![x](...)`, reference link
  `[x][r]`, reference definition `[x]: url` or footnote `[^x]: ...` (a shortcut `[x]` links only to a
  definition, and no text can make one), while `Max[1024 B]` stays as it reads;
- `://` and `www.` (as `&#58;//`, `www&#46;`): no autolink; `@` and `#` are followed by a zero-width
  joiner (U+200D): no @mention and no issue reference (`#12`, `org/repo#12`, which would link and
  notify another thread from a pull-request comment; GitHub finds both in the decoded text, so
  `&#64;` would not do), and no e-mail autolink;
- `|` (a table cell's end), backticks (code), `*`, `~` (emphasis), `\\`, and line breaks (as
  spaces) so a cell or a list item stays one line.
Other control characters (a terminal escape, `\x01`) and lone surrogates are shown as U+FFFD.
"""
from __future__ import annotations

import html
import re

ZERO_WIDTH_JOINER = "\u200d"
_REFERENCES = str.maketrans({"|": "&#124;", "`": "&#96;", "*": "&#42;", "~": "&#126;",
                             "\\": "&#92;", "@": "@" + ZERO_WIDTH_JOINER, "#": "#" + ZERO_WIDTH_JOINER,
                             "\n": " ", "\r": " ", "\u2028": " ", "\u2029": " ", "\x85": " "})
_LINK_STARTS = re.compile(r"(?i)(://|www\.|\](?=[(\[:]))")
_BROKEN = {"://": "&#58;//", "]": "&#93;"}
_UNSHOWABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")


def text(value) -> str:
    """Text shown as written on GitHub, in a table cell, a paragraph, a list item or an HTML block alike."""
    escaped = html.escape(_UNSHOWABLE.sub("\ufffd", str(value)), quote=False).translate(_REFERENCES)
    return _LINK_STARTS.sub(lambda match: _BROKEN.get(match.group(0)) or match.group(0)[:3] + "&#46;", escaped)


# A pull-request comment notifies: a mention, an issue reference (#12, org/repo#12) or an emoji code
# there reaches people and threads. So its text is inert: every character that can start Markdown or
# one of GitHub's extensions is a numeric reference, and a zero-width space follows `@`, `:`, `#` and
# `www` (GitHub finds mentions, references and emoji in the decoded text). It reads as written on
# GitHub; only the raw Markdown is harder to read, which nobody reads in a comment.
_ZERO_WIDTH_SPACE = "&#8203;"
_INERT = str.maketrans({**{c: f"&#{ord(c)};" for c in "\\`*_{}[]()+-.!|~<>&\"'="},
                        **{c: f"&#{ord(c)};{_ZERO_WIDTH_SPACE}" for c in "@:#"},
                        "\u200b": _ZERO_WIDTH_SPACE, "\n": " ", "\r": " ", "\t": " "})
_WWW = re.compile(r"(www)(?=\.)", re.IGNORECASE)


def inert_text(value) -> str:
    """Text of unknown origin for a pull-request comment: one line, no markup, link, mention,
    reference, emoji or HTML; unprintable characters (controls, lone surrogates) as spaces."""
    shown = "".join(c if c.isprintable() or c in "\n\r\t" else " " for c in str(value))
    return _WWW.sub("\\1\u200b", shown).translate(_INERT)
