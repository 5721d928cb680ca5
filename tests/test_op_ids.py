"""A family's op ids are written once (harness/ops/<family>_ops.h), equal to its data's op order, and every op
table of the family (its own in harness/ops/, a source library's in harness/impl/<library>/) names its ops
through them: a misspelt op does not compile."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from importlib import resources
from pathlib import Path

import pytest

HARNESS = Path(str(resources.files("pqsimd").joinpath("harness")))
OPS = HARNESS / "ops"
TABLES = sorted(p for p in HARNESS.rglob("*.c") if p.parent == OPS or "impl" in p.relative_to(HARNESS).parts)
FAMILIES = Path(str(resources.files("pqsimd").joinpath("data/families")))
HEADERS = sorted(OPS.glob("*_ops.h"))


def listed(header: Path) -> list[str]:
    return re.findall(r"X\(([a-z0-9_]+)\)", header.read_text())


def test_every_family_with_an_op_table_has_its_op_id_header():
    families = [f.stem.replace("-", "_") for f in FAMILIES.glob("*.toml") if "op_table" in f.read_text()]
    assert len(families) >= 8
    assert {f"{f}_ops.h" for f in families} <= {h.name for h in HEADERS}


@pytest.mark.parametrize("header", HEADERS, ids=lambda h: h.name)
def test_a_family_header_lists_the_datas_op_order(header):
    family = header.name[: -len("_ops.h")].replace("_", "-")
    order = tomllib.loads((FAMILIES / f"{family}.toml").read_text())["ops"]["order"]
    assert listed(header) == order


@pytest.mark.parametrize("header", HEADERS, ids=lambda h: h.name)
def test_every_op_table_of_the_family_names_its_ops_through_the_header(header):
    macro = re.search(r"#define (PQSIMD_\w+_OPS)\(X\)", header.read_text()).group(1)
    tables = [t for t in TABLES if f'#include "{header.name}"' in t.read_text() or f'#include "ops/{header.name}"' in t.read_text()]
    assert tables, header.name
    if header.name == "ml_kem_ops.h":  # PQClean's, its aarch64 one, mlkem-native's (both APIs), wolfSSL's
        assert len(tables) == 4, [t.relative_to(HARNESS) for t in tables]
    for t in tables:
        text = t.read_text()
        assert f"PQSIMD_DECLARE_OP_IDS({macro})" in text, t.name
        bare = [n for n in re.findall(r'\{"([a-z0-9_]+)",', text) if n in listed(header)]  # buffers ({"sk", ...}) aside
        assert not bare, f"{t.name} names an op by a bare string: {bare}"
        assert re.findall(r"\{PQSIMD_OP\(([a-z0-9_]+)\),", text), t.name


@pytest.mark.skipif(not shutil.which("cc"), reason="no C compiler")
def test_a_misspelt_op_is_a_compile_error(tmp_path):
    src = tmp_path / "table.c"
    body = ('#include "optable.h"\n#include "ml_kem_ops.h"\nPQSIMD_DECLARE_OP_IDS(PQSIMD_ML_KEM_OPS)\n'
            'static void f(void) {}\nconst pqsimd_op ops[] = {{PQSIMD_OP(%s), NULL, f}};\n')
    args = ["cc", "-c", f"-I{HARNESS}", f"-I{OPS}", str(src), "-o", str(tmp_path / "t.o")]
    src.write_text(body % "ntt")
    ok = subprocess.run(args, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    src.write_text(body % "nt")
    bad = subprocess.run(args, capture_output=True, text=True)
    assert bad.returncode != 0 and "pqsimd_op_id_nt" in bad.stderr
