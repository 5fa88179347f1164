"""The one Jinja sandbox for every template pa did not write itself.

Query files, `--templates DIR` report and comparison templates, and the evidence/suggestion
templates of rule packs are data, whatever their author intended: they are rendered here, in a
`SandboxedEnvironment` that

- exposes only the names its caller documents (Jinja's default globals such as `range`, `lipsum`,
  `cycler`, `joiner` and `namespace` are removed; callers add back what they document),
- refuses attribute access to internals (`__globals__`, `__class__`, `mro`, ...: Jinja's sandbox),
- bounds what a single operation may allocate (`'x' * 10**9`, `2 ** 10**9`, `'%999999999d' % 1`,
  `center(10**9)` are refused before they run), and
- is given a wall-clock budget per rendering (`render_bounded`): a loop nest or a recursive macro
  that would run for hours is stopped with TemplateBudgetError.

Callers turn TemplateError / TemplateBudgetError / SecurityError into one UserError line naming
the file; nothing here prints or exits.
"""

from __future__ import annotations

import math
import re
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from types import FrameType
from typing import Any

import jinja2
from jinja2.sandbox import SandboxedEnvironment, SecurityError

# Largest string or list one operation may produce, and the widest field a format may ask for.
MAX_ITEMS = 1 << 22          # 4 M characters or list items
MAX_FORMAT_WIDTH = 10_000
MAX_INT_BITS = 4096          # integer results beyond this are not "formatting a number"
# Largest rendering (characters) and default wall-clock budget of one rendering.
MAX_OUTPUT_CHARS = 1 << 26   # 64 M characters
DEFAULT_SECONDS = 10.0
# Time is checked every this many traced line events (a clock read per event would double the cost).
_CHECK_EVERY = 256

# printf-style conversions (`%-08.3f`, `%*d`) and the format-spec part of str.format fields.
_PRINTF = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")
_BRACE_SPEC = re.compile(r"\{[^{}]*?:([^{}]*)(\{)?")
_DIGITS = re.compile(r"\d+")


class TemplateBudgetError(Exception):
    """A template ran out of its time or size budget."""


def _check_width(fmt: Any) -> None:
    """Refuse a printf or str.format string asking for an absurd field width or precision."""
    if not isinstance(fmt, str):
        return
    for m in _PRINTF.finditer(fmt):
        for part in m.groups():
            if part == "*" or (part is not None and int(part) > MAX_FORMAT_WIDTH):
                raise SecurityError(f"format width or precision above {MAX_FORMAT_WIDTH} refused")
    for m in _BRACE_SPEC.finditer(fmt):
        if m.group(2) or any(int(d) > MAX_FORMAT_WIDTH for d in _DIGITS.findall(m.group(1))):
            raise SecurityError(f"format width or precision above {MAX_FORMAT_WIDTH} refused")


def _sized(x: Any) -> int | None:
    return len(x) if isinstance(x, (str, bytes, list, tuple)) else None


class PaSandbox(SandboxedEnvironment):
    """SandboxedEnvironment with bounded `*`, `**` and `%` and no default globals."""

    intercepted_binops = frozenset({"*", "**", "%"})

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.globals.clear()
        self.filters["center"] = _bounded_width_filter(self.filters["center"])
        self.filters["indent"] = _bounded_width_filter(self.filters["indent"])
        self.filters["format"] = _checked_format_filter(self.filters["format"])
        self.filters.pop("random", None)   # a rendering must be reproducible

    def call_binop(self, context: jinja2.runtime.Context, operator: str, left: Any, right: Any) -> Any:
        """Refuse operations whose result would be huge, before computing them."""
        if operator == "*":
            for seq, n in ((left, right), (right, left)):
                size = _sized(seq)
                if size is not None and isinstance(n, int) and size * max(n, 0) > MAX_ITEMS:
                    raise SecurityError(f"repetition to more than {MAX_ITEMS} items refused")
            if isinstance(left, int) and isinstance(right, int) and \
                    left.bit_length() + right.bit_length() > MAX_INT_BITS:
                raise SecurityError(f"integer product above {MAX_INT_BITS} bits refused")
        elif operator == "**":
            if isinstance(left, (int, float)) and isinstance(right, (int, float)) and \
                    abs(left) > 1 and abs(right) * math.log2(abs(left)) > MAX_INT_BITS:
                raise SecurityError(f"power above {MAX_INT_BITS} bits refused")
        elif operator == "%":
            _check_width(left)
        return super().call_binop(context, operator, left, right)

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        """str.format / format_map (wrapped when the attribute is read) may not ask for huge widths."""
        if isinstance(getattr(value, "__self__", None), str):
            _check_width(value.__self__)
        return super().wrap_str_format(value)

    def call(__self, __context: jinja2.runtime.Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        """str.center and friends may not ask for huge widths; everything else as the sandbox says."""
        widening = getattr(__obj, "__name__", None) in ("center", "ljust", "rjust", "zfill", "expandtabs")
        if widening and any(isinstance(a, int) and a > MAX_FORMAT_WIDTH for a in args):
            raise SecurityError(f"width above {MAX_FORMAT_WIDTH} refused")
        return super().call(__context, __obj, *args, **kwargs)


def _bounded_width_filter(fn: Callable[..., Any]) -> Callable[..., Any]:
    def filt(value: Any, width: Any = 80, *args: Any, **kwargs: Any) -> Any:
        if isinstance(width, int) and width > MAX_FORMAT_WIDTH:
            raise SecurityError(f"width above {MAX_FORMAT_WIDTH} refused")
        return fn(value, width, *args, **kwargs)

    return filt


def _checked_format_filter(fn: Callable[..., Any]) -> Callable[..., Any]:
    def filt(value: Any, *args: Any, **kwargs: Any) -> Any:
        _check_width(value)
        return fn(value, *args, **kwargs)

    return filt


def sandbox(**options: Any) -> PaSandbox:
    """A fresh sandboxed environment (StrictUndefined unless `undefined` is given)."""
    options.setdefault("undefined", jinja2.StrictUndefined)
    return PaSandbox(**options)


def render_bounded(template: jinja2.Template, context: Mapping[str, Any],
                   seconds: float = DEFAULT_SECONDS, max_chars: int = MAX_OUTPUT_CHARS) -> str:
    """Render `template` with `context`, stopping it after `seconds` or `max_chars` of output.

    Why a trace function: a Jinja loop nest or a recursive macro runs as ordinary Python code
    that no signal can reach from a worker thread; a line-event tracer on this thread sees every
    iteration and raises TemplateBudgetError once the deadline has passed. The previous tracer (a
    debugger, coverage) is restored afterwards.
    """
    deadline = time.monotonic() + seconds
    events = 0

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal events
        events += 1
        if events % _CHECK_EVERY == 0 and time.monotonic() > deadline:
            raise TemplateBudgetError(f"template still running after {seconds:g} s: stopped")
        return tracer

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        return _joined(template.generate(**context), max_chars)
    finally:
        sys.settrace(previous)


def _joined(chunks: Iterable[str], max_chars: int) -> str:
    out: list[str] = []
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > max_chars:
            raise TemplateBudgetError(f"template output above {max_chars} characters: stopped")
        out.append(chunk)
    return "".join(out)


# Exceptions a hostile or broken template can raise while it is parsed or rendered; callers catch
# exactly these and report them as one line.
TEMPLATE_FAILURES: tuple[type[BaseException], ...] = (
    jinja2.TemplateError, SecurityError, TemplateBudgetError, RecursionError, MemoryError,
    ArithmeticError, TypeError, ValueError, LookupError, AttributeError)


def describe(exc: BaseException) -> str:
    """One line for a template failure (the first line of the message, with its kind)."""
    if isinstance(exc, RecursionError):
        return "recursion too deep"
    if isinstance(exc, MemoryError):
        return "out of memory"
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    kind = type(exc).__name__
    return f"{kind}: {text}" if text else kind
