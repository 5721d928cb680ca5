"""binary/: the one reader of a built library. The code hash, the placements and the code size walk the
same call tree, whose branches are the ISA's (data/isas.toml [binary]); these tests hold the cases where
the three readers used to disagree (x86 conditional tail jumps and aarch64 cbz/tbz missed by the hash,
aarch64 bl missed by the placements, an assembly routine's `ret; nop` taken to fall through)."""

from pathlib import Path

import pytest

from pqsimd import binary, codesize, isa, placement
from pqsimd.binary import Library
from pqsimd.verify.codehash import op_hashes


def objdump_text(funcs: dict[int, tuple[str, list[str]]]) -> str:
    """objdump -d -w's text of functions given as address -> (name, instructions), 4 bytes each."""
    out = []
    for start, (name, insns) in funcs.items():
        out.append(f"\n{start:016x} <{name}>:")
        out += [f"  {start + 4 * i:x}:\t90 90 90 90 \t{t}" for i, t in enumerate(insns)]
    return "\n".join(out) + "\n"


def nm_text(syms: list[tuple[str, int, int, str]]) -> str:
    return "".join(f"{a:016x} {n:016x} {k} {name}\n" for name, a, n, k in syms)


def lib(isa_name, funcs, syms=()):
    return Library(isa=isa_name, nm_text=nm_text(list(syms)), objdump_text=objdump_text(funcs))


def names(library: Library, start: int) -> set[str]:
    return {library.funcs[a].name for a in library.tree(start).functions}


def readers_agree(library: Library, start: int) -> set[str]:
    """The functions each reader sees for the op at `start`: one set, or the test fails."""
    img = placement.Image.__new__(placement.Image)
    img.lib, img.library, img.syms = library, library.path, library.symbols
    placed = {s.name for s in img.call_tree(start) if s.kind == "code"}
    size = codesize.Image.__new__(codesize.Image)
    size.lib, size.funcs = library, library.funcs
    size.ro, size.ro_starts, size.other = [], [], []
    sized = {n for k, n, _ in size.tree(start).members if k == "code"}
    assert placed == sized == names(library, start)
    return placed


def test_an_x86_conditional_tail_jump_is_in_the_tree_and_the_hash():
    def two(body):
        return lib("x86_64", {0x10: ("op", ["test %edi,%edi", "jne 40 <other>", "ret"]),
                               0x40: ("other", [body, "ret"])},
                   [("op", 0x10, 12, "t"), ("other", 0x40, 8, "t")])
    a, b = two("add $0x1,%eax"), two("add $0x2,%eax")
    assert readers_agree(a, 0x10) == {"op", "other"}
    assert op_hashes(a, {"x": 0x10}) != op_hashes(b, {"x": 0x10})  # the tail-called code differs


@pytest.mark.parametrize("branch", ["cbz x0, 40 <other>", "cbnz w1, 40 <other>", "tbz w0, #3, 40 <other>",
                                    "tbnz x2, #63, 40 <other>", "b.ne 40 <other>", "bl 40 <other>", "b 40 <other>"])
def test_aarch64_branches_and_calls_are_followed_by_every_reader(branch):
    def two(body):
        return lib("aarch64", {0x10: ("op", ["mov x1, x0", branch, "ret"]), 0x40: ("other", [body, "ret"])},
                   [("op", 0x10, 12, "t"), ("other", 0x40, 8, "t")])
    a, b = two("add x0, x0, #0x1"), two("add x0, x0, #0x2")
    assert readers_agree(a, 0x10) == {"op", "other"}
    assert op_hashes(a, {"x": 0x10}) != op_hashes(b, {"x": 0x10})


def test_riscv64_calls_and_branches_are_followed():
    lb = lib("riscv64", {0x10: ("op", ["jal 40 <f>", "beqz a0, 50 <g>", "ret"]), 0x40: ("f", ["ret"]),
                         0x50: ("g", ["j 60 <h>"]), 0x60: ("h", ["ret"])},
             [("op", 0x10, 12, "t"), ("f", 0x40, 4, "t"), ("g", 0x50, 4, "t"), ("h", 0x60, 4, "t")])
    assert readers_agree(lb, 0x10) == {"op", "f", "g", "h"}


def test_an_assembly_piece_falls_through_unless_it_returned_before_its_padding():
    lb = lib("x86_64", {0x10: ("op", ["call 40 <kernel>", "ret"]),
                        0x40: ("kernel", ["vpaddw %ymm0,%ymm1,%ymm2", "jne 50 <kernel_loop>"]),
                        0x50: ("kernel_loop", ["vpaddw %ymm0,%ymm1,%ymm2"]),  # falls through into its tail
                        0x54: ("kernel_tail", ["ret", "nop"]),
                        0x5c: ("unrelated", ["ud2", "ret"])},  # after `ret; nop`: never run by the op
             [("op", 0x10, 8, "t")])
    assert readers_agree(lb, 0x10) == {"op", "kernel", "kernel_loop", "kernel_tail"}


def test_a_plt_stub_is_a_leaf_named_external():
    lb = lib("x86_64", {0x10: ("op", ["call 30 <memcpy@plt>", "ret"]),
                        0x20: ("memcpy@plt-0x10", ["push 0x2fe2(%rip) # 3008 <_GLOBAL_OFFSET_TABLE_+0x8>"]),
                        0x30: ("memcpy@plt", ["jmp *0x2fe2(%rip) # 3018 <memcpy@GLIBC_2.14>", "jmp 20 <memcpy@plt-0x10>"])},
             [("op", 0x10, 8, "t")])
    assert names(lb, 0x10) == {"op", "memcpy@plt"} and lb.tree(0x10).external == ["memcpy"]


def test_the_isa_of_a_library_is_its_elf_machine(tmp_path):
    for name in isa.names():
        f = tmp_path / f"{name}.so"
        f.write_bytes(b"\x7fELF\x02\x01\x01" + bytes(11) + isa.get(name).elf_machine.to_bytes(2, "little") + bytes(44))
        assert binary.patterns.elf_isa(f) == name
    f.write_bytes(b"\x7fELF\x02\x01\x01" + bytes(11) + (999).to_bytes(2, "little") + bytes(44))
    with pytest.raises(Exception, match="elf_machine = 999"):
        binary.patterns.elf_isa(f)


def test_an_isa_is_data_to_the_reader():
    """No ISA's name and no mnemonic in binary/: a fourth ISA is a table in data/isas.toml."""
    src = Path(binary.__file__).parent
    for f in src.glob("*.py"):
        text = f.read_text()
        for word in [*isa.names(), "\"jmp\"", "jne", "\"bl\"", "cbz", "adrp", "%rip"]:
            assert word not in text, f"{f.name} names {word}"
    for name in isa.names():
        assert binary.patterns.of_isa(name).branch is not None


def test_nm_and_objdump_run_once_per_library(tmp_path, monkeypatch):
    calls = []

    def run(argv, library, timeout):
        calls.append(argv[0])
        return "" if argv[0] == "nm" else objdump_text({0x10: ("op", ["ret"])})
    monkeypatch.setattr(binary, "_run", run)
    monkeypatch.setattr(binary.patterns, "elf_isa", lambda p: "x86_64")
    monkeypatch.setattr(binary, "elf_isa", lambda p: "x86_64")
    so = tmp_path / "a.so"
    so.write_bytes(b"same bytes")
    copy = tmp_path / "b.so"
    copy.write_bytes(b"same bytes")
    for p in (so, copy, so):
        binary.library(p, ["objdump"]).tree(0x10)
        binary.library(p, ["objdump"]).functions()
    assert calls == ["nm", "objdump"] or sorted(calls) == ["nm", "objdump"]
