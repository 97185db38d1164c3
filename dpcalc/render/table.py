"""The table for people, laid out: it fits the width and never folds a cell (pure Python; drawn with rich by
:mod:`dpcalc.render.rich_table`)."""

import unicodedata
from dataclasses import dataclass, field

from dpcalc.render.cells import (
    GLUE,
    MARK_DOWN,
    MARK_RTOL,
    MARK_UP,
    _missing,
    direction_in,
    table_cell,
    wrap_words,
)
from dpcalc.result import TABLE_ALIASES, Result

# -- the table ----------------------------------------------------------------------------------
#: short headers for long column names (shown with a legend when the table is too wide)
ABBREVIATIONS = {
    "noise_multiplier": "σ",
    "sigma": "σ",
    "sample_rate": "q",
    "batch_size": "B",
    "dataset_size": "N",
    "epsilon": "ε",
    "epsilon_lower": "ε low",
    "epsilon_estimate": "ε est.",
    "epsilon_rdp": "ε rdp",
    "target_epsilon": "target ε",
    "delta": "δ",
    "delta_lower": "δ low",
    "delta_estimate": "δ est.",
    "alpha": "α",
    "best_alpha": "best α",
    "rdp_lower": "rdp low",
    "rdp_certifying": "rdp cert.",
    "accountant": "acct.",
    "conversion": "conv.",
    "crossing_steps": "crossing",
    "neighbors": "nbrs",
    "mechanism": "mech.",
}

#: ASCII for the characters dpcalc's tables and captions use (the rest: accents dropped, else ``?``)
_ASCII = {
    "ε": "eps",
    "δ": "delta",
    "σ": "sigma",
    "α": "alpha",
    "β": "beta",
    "γ": "gamma",
    "ζ": "zeta",
    "η": "eta",
    "λ": "lambda",
    "μ": "mu",
    "ρ": "rho",
    "θ": "theta",
    "κ": "kappa",
    "ν": "nu",
    "π": "pi",
    "τ": "tau",
    "φ": "phi",
    "ω": "omega",
    "Σ": "Sigma",
    "‖": "||",
    "Δ": "Delta",
    "—": "-",
    "–": "-",
    "−": "-",
    MARK_UP: "+",
    MARK_DOWN: "-",
    "≤": "<=",
    "≥": ">=",
    "≈": "~",
    "→": "->",
    "←": "<-",
    "×": "x",
    "·": "*",
    "…": "...",
    "‘": "'",
    "’": "'",
    "“": '"',
    "”": '"',
    "∞": "inf",
    "√": "sqrt",
    "²": "^2",
}
_ASCII_TABLE = str.maketrans(_ASCII)
#: what a table writes beyond ASCII: if the stream cannot encode these, it gets an ASCII table
_TABLE_CHARS = "┏━┳┓┃┡╇┩│└┴┘—εσδα" + MARK_UP + MARK_DOWN


def to_ascii(text: str) -> str:
    """``text`` in ASCII: Greek letters spelled out, dashes and arrows as ASCII, accents dropped."""
    text = unicodedata.normalize("NFKD", text.translate(_ASCII_TABLE))
    text = "".join(ch for ch in text if not unicodedata.combining(ch))
    return text.encode("ascii", "replace").decode("ascii")


def _encodes(stream, chars: str = _TABLE_CHARS) -> bool:
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        chars.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


@dataclass
class _Plan:
    """What to draw: ``kind`` ``rows`` (one line per row) or ``blocks`` (``quantity | value`` lines,
    a section per row), or ``lines`` (plain ``quantity: value`` lines, the last resort)."""

    kind: str
    headers: list[str]
    body: list[list[str]]
    right: list[bool]
    prose: list[bool] = field(default_factory=list)  # blocks: a value cell that may wrap between words
    sections: set[int] = field(default_factory=set)  # blocks: the body lines that end a row's block
    caption: list[tuple[str, str]] = field(default_factory=list)  # (kind, text): items, prose, note
    width: int = 0  # the width it needs (blocks: with prose wrapped at its longest word)
    compact: bool = False  # rows: no borders, one space between columns
    full_width: int = 0  # blocks: the width with every value on one line


class _Table:
    """The layout of one result as a table (see the module docstring): columns, cells, captions."""

    def __init__(self, result: Result, tx, measure) -> None:
        self.result, self.tx, self.measure = result, tx, measure
        self.rows = result.rows()
        names = result.names
        self.single = len(self.rows) == 1
        self.fixed: list[str] = []
        keep: list[str] = []
        names = [n for n in names if not self._alias(n, names)]
        #: one row: the columns that do not apply to it (no value, or no text), left out and counted
        self.unshown = 0
        if self.single:
            keep = [n for n in names if n in (result.headline,) or not self._empty(self.rows[0][n])]
            self.unshown = len(names) - len(keep)
        else:
            for name in names:
                values = [r[name] for r in self.rows]
                same = bool(values) and all(
                    v == values[0] or (_missing(v) and _missing(values[0])) for v in values
                )
                if same and name not in ("method", result.headline):
                    if not _missing(values[0]) and values[0] != "":
                        self.fixed.append(name)
                else:
                    keep.append(name)
            keep = self._drop_repeats(keep)
        self.keep = keep
        self.prose_cols = {
            n
            for n in keep
            if any(isinstance(r[n], str) and any(ch.isspace() for ch in r[n]) for r in self.rows)
        }
        self.per_method = [] if self.single else self._per_method(keep)

    def _per_method(self, keep: list[str]) -> list[str]:
        """The text and flag columns (not the headline) that hold one value per method, where some
        method has several rows: a narrow table may say them once per method in the caption."""
        if "method" not in keep:
            return []
        methods = [r["method"] for r in self.rows]
        if len(set(methods)) < 2 or len(set(methods)) == len(methods):
            return []
        out = []
        for name in keep:
            if name in ("method", self.result.headline):
                continue
            values = [r[name] for r in self.rows]
            if not all(_missing(v) or isinstance(v, (str, bool)) for v in values):
                continue
            seen: dict = {}
            if all(
                seen.setdefault(m, v) == v or (_missing(v) and _missing(seen[m]))
                for m, v in zip(methods, values)
            ):
                out.append(name)
        return out

    # columns
    @staticmethod
    def _empty(v) -> bool:
        """A value that does not apply: none, a nan, or an empty text (no note)."""
        return _missing(v) or v == ""

    def _alias(self, name: str, names: list[str]) -> bool:
        """Column ``name`` is another's alias (:data:`~dpcalc.result.TABLE_ALIASES`) with its values."""
        other = TABLE_ALIASES.get(name)
        if other not in names:
            return False
        return all(r[name] == r[other] or (_missing(r[name]) and _missing(r[other])) for r in self.rows)

    def _drop_repeats(self, keep: list[str]) -> list[str]:
        out: list[str] = []
        for b in keep:
            if b not in ("method", self.result.headline) and any(self._repeats(b, a) for a in out):
                continue
            out.append(b)
        return out

    def _repeats(self, b: str, a: str) -> bool:
        """Column ``b`` holds no more than column ``a``: one-to-one with it, each value equal to (or,
        for text, contained in) the value beside it."""
        fwd: dict = {}
        back: dict = {}
        for r in self.rows:
            x, y = r[a], r[b]
            if _missing(x) or _missing(y):
                if not (_missing(x) and _missing(y)):
                    return False
                continue
            if fwd.setdefault(x, y) != y or back.setdefault(y, x) != x:
                return False
            if not (x == y and type(x) is type(y) or isinstance(x, str) and isinstance(y, str) and y in x):
                return False
        return True

    # cells
    def cell(self, name: str, v, digits: int, marks: bool = True) -> str:
        """``v`` of column ``name``, rounded as the column's role in this result says (:func:`direction_in`)."""
        r = self.result
        direction = direction_in(name, r.headline, r.derived, getattr(r, "found", ()))
        return table_cell(name, v, digits, marks=marks, direction=direction)

    def cells(self, name: str, digits: int, marks: set[str]) -> list[str]:
        out = []
        for r in self.rows:
            text = self.cell(name, r[name], digits)
            if text[-1:] in (MARK_UP, MARK_DOWN):
                marks.add(text[-1])
            out.append(self.tx(text))
        return out

    def header(self, name: str, abbreviate: bool, taken: set[str]) -> str:
        short = ABBREVIATIONS.get(name) if abbreviate else None
        if short is None or short in taken:
            return self.tx(name)
        taken.add(short)
        return self.tx(short)

    def _numeric(self, name: str) -> bool:
        return all(isinstance(r[name], (int, float)) or r[name] is None for r in self.rows)

    # captions
    def caption(
        self,
        digits: int,
        marks: set[str],
        legend: list[tuple[str, str]],
        notes: list[str],
        moved: list[str] = (),
    ):
        tx = self.tx
        parts: list[tuple[str, str]] = []
        if self.fixed:
            items = []
            for n in self.fixed:  # "name = value" never breaks, but prose breaks between its words
                value = self.cell(n, self.rows[0][n], digits)
                if value[-1:] in (MARK_UP, MARK_DOWN):
                    marks.add(value[-1])
                if not any(ch.isspace() for ch in value):
                    value = value.replace(" ", GLUE)
                items.append(f"{n}{GLUE}={GLUE}{value}")
            parts.append(("items", tx(", ".join(items))))
        for name in moved:  # a column said once per method ("name by method: m = value, ...")
            said_of = {}
            for r in self.rows:
                v = r[name]
                if not (_missing(v) or v == "") and r["method"] not in said_of:
                    said_of[r["method"]] = self.cell(name, v, digits, marks=False)
            if not said_of:
                continue
            if name in self.prose_cols:  # methods with the same text share its line
                by_text: dict[str, list[str]] = {}
                for m, v in said_of.items():
                    by_text.setdefault(v, []).append(str(m))
                for v, ms in by_text.items():
                    parts.append(("note", tx(f"{name} of {', '.join(ms)}: {v}")))
            else:
                items = (f"{m} = {v}".replace(" ", GLUE) for m, v in said_of.items())
                parts.append(("items", tx(f"{name} by method: " + ", ".join(items))))
        if self.result.caption:
            parts.append(("prose", tx(self.result.caption)))
        if legend:
            items = (f"{short} = {name}".replace(" ", GLUE) for short, name in legend)
            parts.append(("items", tx(", ".join(items))))
        said = []
        if MARK_UP in marks:
            said.append(f"x{MARK_UP}: a bound just above x (by under {MARK_RTOL:g} relative)")
        if MARK_DOWN in marks:
            said.append(f"x{MARK_DOWN}: a bound just below x (by under {MARK_RTOL:g} relative)")
        if said:
            parts.append(("prose", tx("; ".join(said))))
        if self.unshown:
            s = "" if self.unshown == 1 else "s"
            parts.append(("prose", tx(f"{self.unshown} column{s} not shown: none apply")))
        for k, note in enumerate(notes, start=1):
            parts.append(("note", tx(f"[{k}] {note}")))
        return parts

    # layouts
    def rows_plan(
        self, digits: int, abbreviate: bool, footnotes: bool, compact: bool = False, per_method: bool = False
    ) -> _Plan:
        marks: set[str] = set()
        taken: set[str] = set()
        headers, body_cols, right, legend, notes = [], [], [], [], []
        moved = self.per_method if per_method else []
        for name in self.keep:
            if name in moved:
                continue
            h = self.header(name, abbreviate, taken)
            if h != self.tx(name):
                legend.append((h, self.tx(name)))
            headers.append(h)
            if footnotes and name in self.prose_cols:
                col = []
                for r in self.rows:
                    v = r[name]
                    if _missing(v) or v == "":
                        col.append("" if v == "" else self.tx("—"))
                        continue
                    if v not in notes:
                        notes.append(v)
                    col.append(f"[{notes.index(v) + 1}]")
                body_cols.append(col)
                right.append(False)
            else:
                body_cols.append(self.cells(name, digits, marks))
                right.append(self._numeric(name))
        body = [list(row) for row in zip(*body_cols)]
        widths = [max(self.measure(c) for c in [h, *col]) for h, col in zip(headers, body_cols)]
        width = sum(widths) + len(widths) - 1 if compact else sum(w + 3 for w in widths) + 1
        plan = _Plan("rows", headers, body, right, width=width, compact=compact)
        plan.caption = self.caption(digits, marks, legend, notes, moved)
        return plan

    def blocks_plan(self, digits: int, abbreviate: bool, kind: str = "blocks") -> _Plan:
        marks: set[str] = set()
        taken: set[str] = set()
        legend = []
        heads = {}
        for name in self.keep:
            heads[name] = self.header(name, abbreviate, taken)
            if heads[name] != self.tx(name):
                legend.append((heads[name], self.tx(name)))
        cols = {n: self.cells(n, digits, marks) for n in self.keep}
        body, prose, sections = [], [], set()
        for i in range(len(self.rows)):
            for name in self.keep:
                if self.rows[i][name] == "":
                    continue  # an empty text (no note): no line
                body.append([heads[name], cols[name][i]])
                prose.append(name in self.prose_cols and not _missing(self.rows[i][name]))
            sections.add(len(body) - 1)
        qw = max((self.measure(q) for q, _ in body), default=0)
        qw = max(qw, self.measure(self.tx("quantity")))
        vw = max((self._token_width(v, p) for (_, v), p in zip(body, prose)), default=0)
        vw = max(vw, self.measure(self.tx("value")))
        plan = _Plan(
            kind,
            [self.tx("quantity"), self.tx("value")],
            body,
            [False, True],
            prose=prose,
            sections=sections if not self.single else set(),
            width=qw + vw + 7,
        )
        plan.caption = self.caption(digits, marks, legend, [])
        plan.full_width = qw + max((self.measure(v) for _, v in body), default=0) + 7
        return plan

    def _token_width(self, text: str, prose: bool) -> int:
        if not prose:
            return self.measure(text)
        return max((self.measure(w) for w in text.split()), default=0)

    def plan(self, limit: int | None) -> _Plan:
        """The first layout that fits ``limit`` columns (``None``: any width; see the module docstring)."""
        if limit is None:
            if self.single:
                p = self.blocks_plan(6, False)
                p.width = p.full_width
                return p
            return self.rows_plan(6, False, False)
        if not self.single:
            variants = [(6, False, False, False, False)]
            if self.prose_cols:
                variants.append((6, False, True, False, False))
            variants.append((6, True, True, False, False))
            if self.per_method:
                variants.append((6, True, True, False, True))
            variants += [(d, True, True, True, bool(self.per_method)) for d in (6, 5, 4, 3)]
            for digits, abbreviate, footnotes, compact, per_method in variants:
                p = self.rows_plan(digits, abbreviate, footnotes, compact, per_method)
                if p.width <= limit:
                    return p
        for digits, abbreviate in ((6, False), (6, True), (3, True)):
            p = self.blocks_plan(digits, abbreviate)
            if p.width <= limit:
                return p
        return self.blocks_plan(3, True, kind="lines")


def _wrap(kind: str, text: str, width: int) -> list[str]:
    """Caption lines at most ``width`` wide, broken only between words (between ``items``: never inside
    a ``name = value``); a word longer than ``width`` is broken after a separator (``,`` ``;`` ``:``),
    or stands alone on its line where it has none (:func:`~dpcalc.render.cells.wrap_words`)."""
    indent = "    " if kind == "note" else ""
    return [line.replace(GLUE, " ") for line in wrap_words(text, width, indent)]
