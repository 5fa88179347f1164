"""Text for a terminal of a given width: names shortened in the middle, lines wrapped between words.

Why a module of its own: `pa summary`'s tables and the text report both put kernel names and
numbers on a terminal of 80 to 200 columns. What a performance engineer needs from that view
(issue 29) is that the kernel name stays distinguishable and a number never breaks:

- `shorten_names` shortens a list of names *together*: each one in the middle, keeping the
  template argument (`par_ranged2d_kernel<PdV_kernel>`) and the `#2` suffix that tell names apart;
  names that would still read alike (cuBLAS names differing only in the tile size) keep the part
  where they differ instead.
- `wrap_line` wraps a line between words with a hanging indent, and never between a number and
  its unit ('19.4' / 'ms'); a single word longer than the line stays whole.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rich.cells import cell_len
from rich.table import Table
from rich.text import Text

ELLIPSIS = "…"
_SUFFIX = re.compile(r"^(.*?)( #\d+)$")
# A number and the unit pa.formatting writes after it: never split across two lines.
_NUMBER_UNIT = re.compile(r"(?<=\d) (?=(?:ns|µs|ms|s|%|B|kB|MB|GB|TB|[kMGT]?B/s|GPUs?|calls|gaps|kernels)"
                          r"(?![\w/]))")
_GLUE = "\x00"   # stands for a space that must not break while a line is wrapped
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# A line's label, under which its wrapped text continues: 'evidence:   ', 'GPU busy     ', '- ', '3. '.
_LABEL = re.compile(r"((?:[^ ]+ )*?[^ ]+ {2,}(?=\S)|- |\d+\. )")   # words, then two spaces or more
_MAX_LABEL = 24


def _cut_middle(text: str, width: int) -> str:
    """`text` in `width` cells: its start and its end around one ellipsis (the start gets the extra cell)."""
    if cell_len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    keep = width - 1
    right = keep // 2
    left = keep - right
    return text[:left] + ELLIPSIS + (text[-right:] if right else "")


def _template_parts(base: str) -> tuple[str, str, str]:
    """('head', '<first template argument list>', 'tail') of a C++ name; ('base', '', '') without one."""
    start = base.find("<")
    if start <= 0:
        return base, "", ""
    depth = 0
    for i in range(start, len(base)):
        depth += {"<": 1, ">": -1}.get(base[i], 0)
        if depth == 0:
            return base[:start], base[start:i + 1], base[i + 1:]
    return base, "", ""


def shorten_name(name: str, width: int) -> str:
    """One name in at most `width` cells, shortened in the middle.

    The `#n` suffix stays whole; a template argument list stays whole when it leaves room for a
    few characters of the name before it (what tells `par_ranged2d_kernel<PdV_kernel>` from
    `par_ranged2d_kernel<accelerate_kernel>`); what follows it (a parameter list) goes first.
    """
    if cell_len(name) <= width:
        return name
    m = _SUFFIX.match(name)
    base, suffix = (m.group(1), m.group(2)) if m else (name, "")
    room = width - cell_len(suffix)
    if room < 2:
        return _cut_middle(name, width)
    head, arg, tail = _template_parts(base)
    mark = ELLIPSIS if tail else ""   # stands for the dropped tail
    if arg and cell_len(arg) + min(cell_len(head), 6) + len(mark) <= room:
        return _cut_middle(head, room - cell_len(arg) - len(mark)) + arg + mark + suffix
    if arg and cell_len(head) + 2 <= room:   # the argument itself is too long: a third for the head
        head_room = min(cell_len(head), max(room // 3, 1))
        return _cut_middle(head, head_room) + _cut_middle(arg, room - head_room) + suffix
    return _cut_middle(base, room) + suffix


def _first_difference(a: str, b: str) -> int:
    """The index of the first character where `a` and `b` differ (the shorter length when one starts the other)."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return min(len(a), len(b))


def _around(name: str, at: int, width: int) -> str:
    """`name` in `width` cells: its first characters, then the stretch from just before index `at` on."""
    if width < 6:   # no room for a start and a stretch
        return _cut_middle(name, width)
    head = min(8, max(width // 4, 1))
    start = max(head, at - 2)
    piece = name[start:start + width - head - 1]
    if start + len(piece) < len(name):
        piece = piece[:-1] + ELLIPSIS
    return name[:head] + ELLIPSIS + piece


def shorten_names(names: list[str], width: int) -> list[str]:
    """Each name in at most `width` cells, the shortened names as distinct as `shorten_name` can keep them.

    Names that `shorten_name` makes alike are shown around where they differ from the others of
    their group: the stretch from the first difference on (which may reach the others), else from
    a later one, the first such form that no other shown name reads.
    """
    short = [shorten_name(n, width) for n in names]
    for _ in range(2):   # a second pass for a name its group's new forms collided with
        groups: dict[str, list[int]] = {}
        for i, s in enumerate(short):
            groups.setdefault(s, []).append(i)
        for members in groups.values():
            if len(members) < 2 or len({names[i] for i in members}) < 2:
                continue
            for i in members:
                diffs = sorted({_first_difference(names[i], names[j]) for j in members if names[j] != names[i]})
                others = {s for k, s in enumerate(short) if k != i}
                forms = [_around(names[i], d, width) for d in diffs]
                short[i] = next((f for f in forms if f not in others), forms[0])
    return short


def visible_len(text: str) -> int:
    """Cells `text` takes on a terminal: colour codes take none."""
    return cell_len(_ANSI.sub("", text))


def wrap_line(line: str, width: int) -> list[str]:
    """`line` wrapped between words to `width` cells, continued under the start of its text.

    The hanging indent is the line's own indent, plus the label when the line starts with one
    ('   evidence:   ...', '  span                 ...'), so a wrapped value reads as one block.
    A number stays on the line of its unit; a word longer than the line is left whole.
    """
    if visible_len(line) <= width:
        return [line]
    body = line.lstrip(" ")
    indent = len(line) - len(body)
    label = _LABEL.match(body)
    label_len = len(label.group(1)) if label and len(label.group(1)) <= _MAX_LABEL else 0
    hang = " " * min(indent + label_len, max(width // 2, 0))
    out: list[str] = []
    current = " " * indent
    for token in re.findall(r"\S+\s*", _NUMBER_UNIT.sub(_GLUE, body)):   # a word with the spaces after it
        if current.strip() and visible_len((current + token).rstrip(" ").replace(_GLUE, " ")) > width:
            out.append(current.rstrip(" "))
            current = hang
        current += token
    out.append(current.rstrip(" "))
    return [piece.replace(_GLUE, " ") for piece in out]


def wrap_text(text: str, width: int | None) -> str:
    """Every line of `text` wrapped to `width` cells (`wrap_line`); None leaves the text as it is."""
    if width is None:
        return text
    lines = text.split("\n")
    return "\n".join(piece for line in lines for piece in wrap_line(line, width))


NAME_CAP = 60      # the name width optional columns give way to; beyond it a long name is shortened instead
MIN_NAME = 16      # below this a name column reads as nothing: rich squeezes the table instead


@dataclass
class Column:
    """One column of a table fitted to the terminal: its cells as plain text, already formatted.

    `drop` > 0 makes the column optional: below the width the table needs, optional columns leave
    highest `drop` first; `name` marks the one column that is shortened (in the middle) to fit.
    """

    header: str
    cells: list[str] = field(default_factory=list)
    drop: int = 0
    name: bool = False
    numeric: bool = False


def add_row(cols: list[Column], row: list[str]) -> None:
    """Append one row's cells, one per column (a row of another length is a bug, not a short table)."""
    for col, cell in zip(cols, row, strict=True):
        col.cells.append(cell)


def _natural(col: Column) -> int:
    return max([cell_len(col.header), *(cell_len(c) for c in col.cells)])


def _table_width(cols: list[Column], name_width: int) -> int:
    """Cells rich draws for these columns: contents, one space each side, one border between and around."""
    return sum(name_width if c.name else _natural(c) for c in cols) + 3 * len(cols) + 1


def fit_columns(cols: list[Column], width: int, wide: bool = False) -> tuple[list[Column], list[Column]]:
    """(the columns shown, the optional ones left out) so that the table fits `width` cells.

    The name column gets its width first (its natural width up to NAME_CAP): optional columns
    leave before a name is shortened. Then the names take all the room left, shortened together
    (`shorten_names`) when it is not enough. `wide` keeps every column and every name whole.
    """
    name_col = next((c for c in cols if c.name), None)
    if wide:
        return list(cols), []
    target = min(_natural(name_col), NAME_CAP) if name_col else 0
    shown = list(cols)
    left_out: list[Column] = []
    for col in sorted((c for c in cols if c.drop), key=lambda c: -c.drop):
        if _table_width(shown, target) <= width:
            break
        shown.remove(col)
        left_out.append(col)
    if name_col is not None:
        room = width - _table_width([c for c in shown if not c.name], 0) - 3
        name_width = max(min(_natural(name_col), room), min(MIN_NAME, _natural(name_col)))
        if name_width < _natural(name_col):
            name_col = Column(name_col.header, shorten_names(name_col.cells, name_width), name_col.drop, True)
            shown = [name_col if c.name else c for c in shown]
    return shown, [c for c in cols if c in left_out]


def fitted_table(title: str | None, cols: list[Column], width: int, wide: bool = False) -> Table:
    """A rich table of `cols` fitted to `width` (fit_columns): no cell wraps, the names fit.

    Every cell is plain text (a rich Text, so a `[` in a kernel name is not markup) and never
    wraps; numbers are right-aligned. When optional columns are left out, the caption says which
    and how to see them.
    """
    shown, left_out = fit_columns(cols, width, wide)
    caption = f"more columns with --wide: {', '.join(c.header for c in left_out)}" if left_out else None
    table = Table(title=title, caption=caption, caption_justify="left")
    for col in shown:
        table.add_column(col.header, no_wrap=True, justify="right" if col.numeric else "left",
                         overflow="ellipsis")
    for row in zip(*(c.cells for c in shown), strict=True) if shown else []:
        table.add_row(*(Text(cell) for cell in row))
    return table
