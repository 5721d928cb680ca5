"""An ISA's instructions as objdump prints them, from data/isas.toml [isa.<name>.binary], and the ISA of
a library from its ELF header (`elf_machine`). Every key is a regular expression over one instruction's
text (whitespace collapsed), matched at its start:

    call          a direct call (its `ADDR <symbol>` is followed)
    jump          a direct unconditional jump (a tail call when it leaves the function)
    conditional   a conditional jump (a conditional tail call when it leaves the function)
    indirect      a call through a register or memory: counted, not followed
    ends          an instruction after which a routine does not fall through (return, jump)
    padding       alignment padding after a routine's last instruction
    data_ref      (searched anywhere) objdump's comment naming an address an instruction reads: group 1
    page, page_use (optional) a page address put in a register and the add or load of an offset into it:
                  `page` gives (register, page), `page_use` (register, offset) in groups 1, 2 or 3, 4
    address       (optional, the code hash) operands that hold an address, replaced by `address_as`
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ..errors import PqsimdError

REQUIRED = ("call", "jump", "conditional", "indirect", "ends", "padding", "data_ref")


@dataclass(frozen=True)
class Patterns:
    isa: str
    call: re.Pattern
    jump: re.Pattern
    conditional: re.Pattern
    indirect: re.Pattern
    ends: re.Pattern
    padding: re.Pattern
    data_ref: re.Pattern
    page: re.Pattern | None = None
    page_use: re.Pattern | None = None
    address: re.Pattern | None = None
    address_as: str = ""

    def branch(self, text: str) -> bool:
        """A direct call, jump or conditional jump: its target is part of the call tree."""
        return bool(self.call.match(text) or self.jump.match(text) or self.conditional.match(text))

    def refs(self, text: str, pages: dict[str, int]) -> list[int]:
        """The addresses a (not branching) instruction reads as data; `pages`: the registers holding a
        page address so far in this function (updated)."""
        if self.page is not None:
            m = self.page.match(text)
            if m:
                pages[m.group(1)] = int(m.group(2), 16)
                return []
        out = [int(m.group(1), 16) for m in self.data_ref.finditer(text)]
        if self.page_use is not None:
            m = self.page_use.match(text)
            if m:
                reg, imm = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
                if reg in pages:
                    out.append(pages[reg] + (int(imm, 0) if imm else 0))
        return out


@cache
def of_isa(isa_name: str) -> Patterns:
    from .. import isa

    d = isa.get(isa_name).binary or {}
    missing = [k for k in REQUIRED if k not in d]
    if missing:
        raise PqsimdError(f"data/isas.toml: [isa.{isa_name}.binary] lacks {', '.join(missing)} (how objdump's "
                          f"text of a call, jump, conditional jump, indirect call, end, padding and data reference look)")
    try:
        return Patterns(isa_name, **{k: re.compile(v) if k != "address_as" else v for k, v in d.items()})
    except (re.error, TypeError) as e:
        raise PqsimdError(f"data/isas.toml: [isa.{isa_name}.binary] {e}") from None


def elf_isa(path: Path) -> str:
    """The ISA whose `elf_machine` (data/isas.toml) is the ELF header's e_machine of the file."""
    from .. import isa

    try:
        with open(path, "rb") as f:
            head = f.read(20)
    except OSError as e:
        raise PqsimdError(f"cannot read {Path(path).name} ({e.strerror or e})") from None
    if len(head) < 20 or head[:4] != b"\x7fELF":
        raise PqsimdError(f"{Path(path).name} is not an ELF file")
    machine = int.from_bytes(head[18:20], "little" if head[5] == 1 else "big")
    for name in isa.names():
        if isa.get(name).elf_machine == machine:
            return name
    raise PqsimdError(f"{Path(path).name}: no ISA in data/isas.toml has elf_machine = {machine}")
