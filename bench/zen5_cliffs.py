"""The Zen 5 cliffs explained as far as this host can: copies made again from the Zen 5 study's seeds.

    .venv/bin/python bench/zen5_cliffs.py ../shared/studies/zen5-ml-kem-layouts studies/std

The Zen 5 study (`copies.csv`: per copy its seed, stack offset, op offset and median) was built from the
same sources by the same gcc 12.2 as this host's builds: the avx2 build here has the Zen 5 build's
binary sha256 (manifest `builds`), so relinking its objects with a Zen 5 copy's seed gives that copy's
layout (checked: every op's offset equals the one copies.csv recorded). For each Zen 5 cliff copy (the
rule of analyze/cliffs.py on the Zen 5 copies) and its job partner:
* static: where every object of gen_a's and noise_x4's call trees sits in both, modulo 64 and 4096;
  and, over all 20 copies of the group, whether any object's placement separates the cliff copies from
  the others (a line or page offset shared by every cliff copy and no other);
* simulated: callgrind's I1/D1/LL misses and mispredictions per call of gen_a and noise_x4 in both copies
  under the Zen 5 geometry of data/caches.toml;
* measured here (AMD Zen 4): the two copies timed alone, interleaved, 5 processes (bench, not the cliff
  host: a Zen 5 cliff need not be one here).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from pqsimd import caches, layout, placement, store
from pqsimd.analyze.cliffs import flag
from pqsimd.stats.cliffs import retime_interval
from pqsimd.run.backends import Callgrind
from pqsimd.run.retime import OpSizes, spec_text, spin_medians
from pqsimd.run.sim import measure

OPS = ("gen_a", "noise_x4")


def local_link(manifest_build: dict) -> list[str]:
    """This host's build of the same binary (by sha256) from the build cache: its link command."""
    root = Path.home() / ".cache" / "pqsimd" / "builds"
    for d in sorted(root.glob(f"{manifest_build['variant']}.{manifest_build['compiler']}.{manifest_build['family']}-*")):
        try:
            b = json.loads((d / "build.json").read_text())
        except (OSError, ValueError):
            continue
        if b.get("sha256") == manifest_build["binary_sha256"]:
            return b["link"]
    sys.exit(f"no build here with the sha256 of {manifest_build['build']} ({manifest_build['binary_sha256'][:12]})")


def main() -> None:
    z5, std = Path(sys.argv[1]), Path(sys.argv[2])
    manifest = json.loads((z5 / "manifest.json").read_text())
    link = local_link(manifest["builds"]["avx2.gcc.ml-kem"])
    driver = std / "bin" / "driver"
    c = pd.read_csv(z5 / "copies.csv")
    c = c[(c["variant"] == "avx2") & (c["copy_median_per_call"] > 0)].rename(columns={"copy_median_per_call": "median"})
    work = Path(tempfile.mkdtemp(prefix="zen5-cliffs-"))
    libs: dict[tuple, Path] = {}

    def lib(scheme, job, copy, seed) -> Path:
        key = (scheme, job, copy)
        if key not in libs:
            out = work / f"{scheme}.{job}.{copy}.so"
            layout.relink(link, int(seed), out)
            offs = layout.op_offsets(driver, out, scheme)
            rec = c[(c["scheme"] == scheme) & (c["job"] == job) & (c["copy"] == copy)].set_index("op")["op_offset"]
            assert all(offs[o] == int(v) for o, v in rec.items()), f"{key}: offsets differ from the Zen 5 record"
            libs[key] = out
        return libs[key]

    for scheme in ("ml-kem-768", "ml-kem-1024"):
        g = c[(c["scheme"] == scheme) & (c["op"] == "noise_x4")].reset_index(drop=True)
        out, row = flag(g[["job", "copy", "seed", "stack", "median"]])
        cliffs = out[out["cliff"]]
        print(f"## {scheme} avx2 noise_x4 on Zen 5: {row['n_cliffs']} cliff copies of {row['n_copies']}: "
              f"{row['cliff_copies']}")
        # every copy's call-tree placement: does any object's line or page offset single out the cliffs?
        tables = {}
        for r in out.itertuples():
            img = placement.Image(lib(scheme, r.job, r.copy, r.seed))
            offs = layout.op_offsets(driver, libs[(scheme, r.job, r.copy)], scheme)
            for w in placement.where(img, {o: offs[o] for o in OPS}):
                tables.setdefault((w["op"], w["object"]), {})[(r.job, r.copy)] = (w["mod64"], w["mod4096"], w["lines"])
        cl = {(r.job, r.copy) for r in cliffs.itertuples()}
        # simulated I1 misses of noise_x4 in every copy, against its Zen 5 time (is it L1I pressure?)
        i1 = []
        for r in out.itertuples():
            p = measure(Callgrind(), caches.get("zen5"), driver, libs[(scheme, r.job, r.copy)], scheme, "noise_x4")
            i1.append(float(p.exact("I1mr")))
        from scipy.stats import spearmanr

        rho = spearmanr(i1, out["norm"]).statistic
        rank = sorted(range(len(i1)), key=lambda i: -i1[i])
        print(f"simulated I1 misses per noise_x4 call over the {len(i1)} copies: {min(i1):.0f}-{max(i1):.0f}, "
              f"Spearman with the Zen 5 time {rho:.2f}; the cliff copies rank "
              + ", ".join(str(rank.index(i) + 1) for i in range(len(i1)) if (out['job'][i], out['copy'][i]) in cl)
              + f" of {len(i1)} by I1 misses")
        separating = []
        for (op, obj), per in tables.items():
            for i, what in enumerate(("mod 64", "mod 4096", "lines")):
                vals_c = {per[k][i] for k in cl if k in per}
                vals_o = {v[i] for k, v in per.items() if k not in cl}
                if len(vals_c) == 1 and not (vals_c & vals_o):
                    separating.append(f"{op} {obj} {what} = {vals_c.pop()}")
        if len(cl) >= 2:
            print(f"static: {len(tables)} (op, object) placements over {len(out)} copies; placements shared by every "
                  f"cliff copy and no other: {', '.join(separating) if separating else 'none'}")
        else:
            print("static: one cliff copy: each of its placements is its own, nothing to separate it by")
        for w in cliffs.itertuples():
            partner = next(out[(out["job"] == w.job) & (out["copy"] != w.copy)].itertuples())
            wl, tl = lib(scheme, w.job, w.copy, w.seed), lib(scheme, partner.job, partner.copy, partner.seed)
            print(f"### job {w.job} copy {w.copy} (seed {w.seed}, {w.norm:.2f}× on Zen 5) vs copy {partner.copy} "
                  f"(seed {partner.seed}, {partner.norm:.2f}×)")
            geo = caches.get("zen5")
            for op in OPS:
                ev = {}
                for role, L in (("cliff", wl), ("partner", tl)):
                    p = measure(Callgrind(), geo, driver, L, scheme, op)
                    ev[role] = {e: float(p.exact(e)) for e in ("I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "Bcm", "Bim")}
                diff = [f"{e} {ev['cliff'][e]:.1f} vs {ev['partner'][e]:.1f}" for e in ev["cliff"]
                        if abs(ev["cliff"][e] - ev["partner"][e]) > max(0.01 * max(ev["cliff"][e], ev["partner"][e]), 0.5)]
                print(f"simulated (callgrind, Zen 5 geometry), {op} per call: "
                      + (", ".join(diff) if diff else "no event differs by more than 1% (" +
                         ", ".join(f"{e} {v:.1f}" for e, v in ev["cliff"].items()) + ")"))
            sizes = OpSizes(40, 10, 2, "auto", 50000, 26000)
            for op in OPS:
                lr = []
                for k in range(5):
                    libs_, stacks, roles = ([wl, tl], [int(w.stack), int(partner.stack)], [0, 1]) if k % 2 == 0 else \
                        ([tl, wl], [int(partner.stack), int(w.stack)], [1, 0])
                    spec = spec_text(scheme, libs_, stacks, 2, op, sizes, ["auto", "auto"], -1, 7 + k, [0, 0])
                    with tempfile.NamedTemporaryFile("w", suffix=".spec", delete=False) as f:
                        f.write(spec)
                    proc = subprocess.run([str(driver), "run", f.name], capture_output=True, text=True, check=True)
                    sm = spin_medians(proc.stdout)
                    m = sm.groupby("entry")["value"].median()
                    lr.append(math.log(m[roles.index(0)] / m[roles.index(1)]))
                r, lo, hi = retime_interval(np.array(lr))
                print(f"measured here (Zen 4), {op}: cliff copy / partner {r:.3f}× [{lo:.3f}, {hi:.3f}] (5 processes)")
        print()


if __name__ == "__main__":
    main()
