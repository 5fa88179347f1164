r"""Terminal control characters in untrusted strings: shown, never obeyed.

Kernel names, marker text, host names and file names come from the profile. Printed raw, an ESC
(`\\x1b[2J`, an OSC 8 hyperlink, an OSC 52 clipboard write), an 8-bit CSI (U+009B), a carriage
return that overwrites the line, or a bidi override (Trojan Source, U+202E) would be executed by
the terminal or reorder what the reader sees. `escape_controls` replaces each such character with
its visible Python escape (`\\x1b`, `\\u202e`): the text stays readable and reversible, and a
terminal sees only printable characters. Newline and tab are kept where the caller's layout
needs them (reports), and escaped where one line is promised (error messages).
"""

from __future__ import annotations

from typing import Any

_CONTROLS = [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0),
             # bidi embeddings, overrides and isolates; line and paragraph separators
             *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x2028, 0x2029,
             # invisible format characters that hide or reorder text: bidi marks (LRM, RLM, ALM), zero-width
             # space, word joiner, byte-order mark, and the tag characters (invisible ASCII look-alikes
             # that can smuggle text past a reader into a prompt)
             0x200E, 0x200F, 0x061C, 0x200B, 0x2060, 0xFEFF, *range(0xE0000, 0xE0080)]


def _escape(cp: int) -> str:
    if cp < 0x100:
        return f"\\x{cp:02x}"
    return f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}"


_TABLE = {cp: _escape(cp) for cp in _CONTROLS}
_TABLE_KEEP_LAYOUT = {cp: v for cp, v in _TABLE.items() if cp not in (0x0A, 0x09)}


def escape_controls(text: str, keep_layout: bool = False) -> str:
    """`text` with every control character written as a visible escape.

    keep_layout keeps newline and tab (for multi-line report text); otherwise the result is
    guaranteed to be a single line.
    """
    return text.translate(_TABLE_KEEP_LAYOUT if keep_layout else _TABLE)


def escape_controls_deep(value: Any, keep_layout: bool = False) -> Any:
    """A copy of a JSON-like value (dicts, lists, strings) with every string passed through escape_controls."""
    if isinstance(value, str):
        return escape_controls(value, keep_layout)
    if isinstance(value, dict):
        return {k: escape_controls_deep(v, keep_layout) for k, v in value.items()}
    if isinstance(value, list):
        return [escape_controls_deep(v, keep_layout) for v in value]
    return value


def escape_json_controls(text: str) -> str:
    r"""JSON text with the C1 controls and bidi characters a JSON encoder leaves raw written as \\uXXXX.

    json.dumps(ensure_ascii=False) and pydantic escape U+0000..U+001F but pass U+0080..U+009F and
    U+202E through; as JSON string escapes they decode to the same data.
    """
    return text.translate(_JSON_TABLE)


def _json_escape(cp: int) -> str:
    """JSON's u-escape (backslash, u, four hex digits), as a surrogate pair above U+FFFF."""
    if cp <= 0xFFFF:
        return f"\\u{cp:04x}"
    v = cp - 0x10000
    return f"\\u{0xD800 + (v >> 10):04x}\\u{0xDC00 + (v & 0x3FF):04x}"


_JSON_TABLE = {cp: _json_escape(cp) for cp in _CONTROLS if cp >= 0x7F}


def shown_url(url: str) -> str:
    """A URL as pa prints it: credentials in it (`http://user:secret@host`) replaced, controls escaped.

    A base URL may carry a user name and password; they go to that host only, never to a terminal,
    a log or a report.
    """
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
        if parts.username is not None or parts.password is not None:
            host = parts.hostname or ""
            netloc = f"***@{host}" + (f":{parts.port}" if parts.port else "")
            url = urlunsplit(parts._replace(netloc=netloc))
    except ValueError:
        url = "(an unparsable URL)"
    return escape_controls(url)
