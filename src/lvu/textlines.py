"""Lines of a JSONL (or TSV) text as JSON and CSV writers mean them.

`str.splitlines()` also breaks at U+2028, U+2029, U+0085, \\x1c-\\x1e, \\v and \\f, which
`json.dumps(..., ensure_ascii=False)` and pandas' `to_csv` leave unescaped inside a value: a reply
holding one made a whole file unreadable ("Unterminated string"). Every JSONL reader splits here.
"""

from __future__ import annotations


def text_lines(text: str) -> list[str]:
    """The lines of `text`, split at "\\n" only (a trailing "\\r" dropped, so CRLF files read the same)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line starts no line
    return [line.removesuffix("\r") for line in lines]
