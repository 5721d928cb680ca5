r"""The names of macros.tex: TeX control words hold letters only, so numbers are spelled out the
way they are read (`x-kem-512` -> `XkemFiveTwelve`, `op_eta1` -> `OpEtaOne`), every name under
`\pqsimd`. Used by macros.py and by the sections that add macros of their own (footprint.py)."""

from __future__ import annotations

import re

_ONES = ["Zero", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine", "Ten", "Eleven",
         "Twelve", "Thirteen", "Fourteen", "Fifteen", "Sixteen", "Seventeen", "Eighteen", "Nineteen"]
_TENS = ["", "", "Twenty", "Thirty", "Forty", "Fifty", "Sixty", "Seventy", "Eighty", "Ninety"]
NAME_RE = re.compile(r"^\\pqsimd[A-Za-z]+$")


def _two(n: int) -> str:
    if n < 20:
        return _ONES[n]
    return _TENS[n // 10] + (_ONES[n % 10] if n % 10 else "")


def number_words(digits: str) -> str:
    """Read a digit string the way years are read: 512 FiveTwelve, 768 SevenSixtyEight, 1024 TenTwentyFour."""
    n = int(digits)
    if len(digits) <= 2 or n < 100:
        return ("Oh" if len(digits) == 2 and digits[0] == "0" and n else "") + _two(n)
    head, tail = digits[:-2], digits[-2:]
    tail_n = int(tail)
    tail_w = "Hundred" if tail_n == 0 else ("Oh" + _ONES[tail_n] if tail_n < 10 else _two(tail_n))
    return number_words(head) + tail_w


def camel(ident: str, join_alpha: bool = False) -> str:
    """`op_eta1` -> OpEtaOne; with join_alpha, `x-kem-512` -> XkemFiveTwelve."""
    parts = re.findall(r"[A-Za-z]+|[0-9]+", ident)
    out, alpha = [], []
    for p in parts:
        if p.isdigit():
            if alpha:
                out.append("".join(alpha).capitalize() if join_alpha else "".join(a.capitalize() for a in alpha))
                alpha = []
            out.append(number_words(p))
        else:
            alpha.append(p.lower())
    if alpha:
        out.append("".join(alpha).capitalize() if join_alpha else "".join(a.capitalize() for a in alpha))
    return "".join(out)


def macro_name(*parts: str) -> str:
    return "\\pqsimd" + "".join(parts)
