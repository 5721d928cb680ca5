"""Which scheduling model llvm-mca really uses for each -mcpu name (writes data/mca_models.toml).

llvm-mca accepts many CPU names that have no model of their own: LLVM's processor table maps them to
another core's model (e.g. cortex-a72 to Cortex-A57's, apple-m1 to Cyclone's, from 2013). The
report must name the model, not the CPU the user asked for. Two observations per (llvm-mca
version, -mcpu), both from llvm-mca's own output on a fixed instruction sample (below, ours):

  1. the processor-resource names of the resource-pressure view: each model names its resources
     (A57UnitB, N1UnitB, CyUnitB, Zn3AGU0, SKLDivider, ...): RESOURCE_MODEL says whose they are;
  2. the whole output (instruction info + resource pressure + totals, CPU lines removed) is
     identical to that of the CPU that owns the model (`same_as`), and differs from other models.

    .venv/bin/python bench/mca_models.py [--write]      # prints the table; --write updates the TOML
"""

from __future__ import annotations

import argparse
import hashlib
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "src" / "pqsimd" / "data" / "mca_models.toml"

# Resource-name prefix -> (model, the -mcpu that owns it). From LLVM's AArch64/X86 Sched*.td names.
RESOURCE_MODEL = {
    "A53Unit": ("Cortex-A53", "cortex-a53"),
    "CortexA55Unit": ("Cortex-A55", "cortex-a55"),
    "CortexA510Unit": ("Cortex-A510", "cortex-a510"),
    "A57Unit": ("Cortex-A57", "cortex-a57"),
    "N1Unit": ("Neoverse-N1", "neoverse-n1"),
    "N2Unit": ("Neoverse-N2", "neoverse-n2"),
    "V1Unit": ("Neoverse-V1", "neoverse-v1"),
    "V2Unit": ("Neoverse-V2", "neoverse-v2"),
    "CyUnit": ("Apple Cyclone (A7, 2013)", "cyclone"),
    "HW": ("Haswell", "haswell"),
    "SKL": ("Skylake (client)", "skylake"),
    "SKX": ("Skylake-SP", "skylake-avx512"),
    "ICX": ("Ice Lake server", "icelake-server"),
    "ADLP": ("Alder Lake P-core", "alderlake"),
    "SPR": ("Sapphire Rapids", "sapphirerapids"),
    "SB": ("Sandy Bridge", "sandybridge"),
    "Zn4": ("Zen 4", "znver4"),
    "Zn3": ("Zen 3", "znver3"),
    "Zn2": ("Zen 2", "znver2"),
    "Zn": ("Zen 1", "znver1"),
}

TARGETS = {
    "aarch64": {
        "triple": "aarch64-unknown-linux-gnu", "extra": ["-mattr=+sha3"],
        "cpus": ["cortex-a72", "cortex-a76", "neoverse-n1", "neoverse-v1", "neoverse-v2", "cortex-a510", "apple-m1",
                 "cortex-a53", "cortex-a55", "cortex-a57", "cortex-a78", "cortex-x1", "neoverse-n2", "apple-m2",
                 "cyclone"],
        "sample": """\
.Lt:
add x0, x0, x1
mul x4, x4, x5
madd x6, x6, x7, x8
udiv x9, x9, x10
eor x12, x12, x13, ror #7
ldr x14, [x15, #8]
str x16, [x17, #16]
ldp x18, x19, [x20]
ld1 {v0.8h, v1.8h}, [x21]
st1 {v2.8h}, [x22]
ld4 {v4.8h, v5.8h, v6.8h, v7.8h}, [x23]
add v8.8h, v8.8h, v9.8h
mul v12.8h, v12.8h, v13.8h
mla v14.8h, v15.8h, v16.8h
sqdmulh v17.8h, v17.8h, v18.8h
sqrdmulh v19.8h, v19.8h, v4.h[1]
smull2 v24.4s, v25.8h, v26.8h
uzp1 v27.8h, v27.8h, v28.8h
trn1 v29.4s, v29.4s, v30.4s
zip2 v31.2d, v0.2d, v1.2d
ext v2.16b, v3.16b, v4.16b, #8
tbl v5.16b, {v6.16b}, v7.16b
dup v8.8h, w1
umov w3, v10.h[2]
sshr v11.8h, v11.8h, #1
xtn v14.4h, v15.4s
bsl v19.16b, v20.16b, v21.16b
eor3 v22.16b, v23.16b, v24.16b, v25.16b
b.ne .Lt
""",
    },
    "x86_64": {
        "triple": "x86_64-unknown-linux-gnu", "extra": ["-x86-asm-syntax=intel"],
        "cpus": ["znver1", "znver2", "znver3", "znver4", "haswell", "skylake", "skylake-avx512", "icelake-server",
                 "sapphirerapids", "emeraldrapids", "graniterapids", "alderlake"],
        "sample": """\
.Lt:
add rax, rbx
imul rcx, rdx
div rsi
mov rax, qword ptr [rdi + 8]
mov qword ptr [rdi + 16], rax
vpaddw ymm0, ymm1, ymm2
vpmullw ymm3, ymm4, ymm5
vpmulhw ymm6, ymm7, ymm8
vpshufb ymm9, ymm10, ymm11
vpermq ymm12, ymm13, 0x4e
vperm2i128 ymm14, ymm15, ymm0, 0x20
vpunpcklqdq ymm1, ymm2, ymm3
vpblendw ymm4, ymm5, ymm6, 0xaa
vmovdqa ymm7, ymmword ptr [rsi]
pdep rax, rbx, rcx
popcnt rdx, r8
pmullw xmm2, xmm3
jne .Lt
""",
    },
}


def observe(mca: str, target: dict, cpu: str, sample: Path) -> tuple[str, str]:
    """(first resource name, digest of the output without the CPU lines) of one llvm-mca run."""
    out = subprocess.run([mca, f"-mtriple={target['triple']}", f"-mcpu={cpu}", *target["extra"], "-iterations=100",
                          "-instruction-info", "-resource-pressure", str(sample)],
                         capture_output=True, text=True, check=True).stdout
    body = "\n".join(line for line in out.splitlines() if not line.startswith(("Target:", "CPU")))
    resource = re.search(r"^Resources:\n\[[\d.]+\]\s+- (\S+)", out, re.M).group(1)
    return resource, hashlib.sha256(body.encode()).hexdigest()


def model_of(resource: str) -> tuple[str, str]:
    for prefix in sorted(RESOURCE_MODEL, key=len, reverse=True):
        if resource.startswith(prefix):
            return RESOURCE_MODEL[prefix]
    raise SystemExit(f"unknown resource name {resource}: add its model to RESOURCE_MODEL")


def table(mca: str) -> dict[str, dict[str, dict[str, str]]]:
    out: dict[str, dict[str, dict[str, str]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for isa, target in TARGETS.items():
            sample = Path(tmp) / f"{isa}.s"
            sample.write_text(target["sample"])
            seen = {cpu: observe(mca, target, cpu, sample) for cpu in target["cpus"]}
            rows = {}
            for cpu, (resource, digest) in seen.items():
                model, owner = model_of(resource)
                owner_digest = seen.get(owner, observe(mca, target, owner, sample))[1]
                if owner_digest != digest:
                    raise SystemExit(f"{mca} -mcpu={cpu}: resources {resource} but output differs from -mcpu={owner}")
                rows[cpu] = {"model": model, "same_as": owner, "resource": resource}
            out[isa] = rows
    return out


def to_toml(tables: dict[str, dict]) -> str:
    lines = [
        "# Which scheduling model llvm-mca really uses for each -mcpu name, per LLVM major version and ISA.",
        "# Generated by bench/mca_models.py (read its docstring for the method): the resource names of",
        "# llvm-mca's resource-pressure view, and byte-identical output with the CPU that owns the model",
        "# (`same_as`). A report names `model`, never the -mcpu alone (apple-m1 is Cyclone's 2013 model).",
    ]
    for version, isas in tables.items():
        for isa, rows in isas.items():
            lines += ["", f"[llvm{version}.{isa}]"]
            for cpu, r in rows.items():
                lines.append(f'{cpu} = {{ model = "{r["model"]}", same_as = "{r["same_as"]}", resource = "{r["resource"]}" }}')
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    tables = {}
    for version in ("16", "19"):
        mca = shutil.which(f"llvm-mca-{version}")
        if mca:
            tables[version] = table(mca)
    text = to_toml(tables)
    print(text, end="")
    if args.write:
        DATA.write_text(text)


if __name__ == "__main__":
    main()
