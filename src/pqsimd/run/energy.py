"""The energy runner (metric energy): RAPL energy per call of every (build, scheme) job
(pqsimd/energy.py reads the RAPL domains and measures one op)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .metrics import pending, per_build_jobs
from .. import metrics as metrics_mod

METRIC = metrics_mod.ENERGY


def run(sd, study, ctx) -> bool:
    jobs = per_build_jobs(sd, study, ctx, METRIC)
    return execute(sd, study, jobs, pending(sd, jobs), ctx.console)


def execute(sd, study, jobs: list, todo: list, console=None, root: Path | None = None,
            min_seconds: float = 1.0, repeats: int = 2) -> bool:
    """Energy per call for every (build, scheme, op): DIR/raw/<variant>.<compiler>.<scheme>.energy.parquet,
    one metric per RAPL domain kind (energy_package, energy_dram, ...), raw = µJ of the difference,
    batch = its calls, per_call = µJ per call. Unavailable RAPL is recorded in the manifest
    (`metrics.energy`) with the reason and the rest of the study goes on; it returns False then, as
    any metric the study asked for and could not measure does (`pqsimd run` exits 1, like --metric mix
    without valgrind)."""
    import socket
    from datetime import datetime, timezone

    from .. import machine, store
    from ..energy import DEFAULT_ROOT as _root, ENERGY_METRICS, EnergyUnavailable, Reader, measure_op, status

    root = root or _root
    st = status(root)
    info: dict[str, Any] = {"status": "ok" if st["available"] else "unavailable", **st,
                            "method": "E(R2 samples) - E(R1 samples) of k calls each, whole driver runs bracketed by RAPL reads",
                            "min_seconds": min_seconds, "repeats": repeats}
    say = (console.print if console is not None else print)
    ok = True
    if st["available"]:
        reader = Reader(root)
        for job in todo:
            b, scheme = job.info["build"], job.info["scheme"]
            library = sd.gated_library(b.id)
            started = datetime.now(timezone.utc).isoformat()
            rows: dict[str, list] = {k: [] for k in ("op", "metric", "spin", "batch", "raw", "per_call")}
            details: dict[str, list] = {}
            try:
                for op in study.ops_for(scheme):
                    for rep in range(repeats):
                        m = measure_op(sd.gated_driver(), library, scheme, op, reader, min_seconds, cpu=study.cpu)
                        details.setdefault(op, []).append(m)
                        for dom in reader.domains:
                            uj = round(m["joules"][dom.key] * 1e6)
                            rows["op"].append(op)
                            rows["metric"].append(ENERGY_METRICS.get(dom.kind, f"energy_{dom.kind}"))
                            rows["spin"].append(rep)
                            rows["batch"].append(m["calls"])
                            rows["raw"].append(uj)
                            rows["per_call"].append(uj / m["calls"])
            except (RuntimeError, EnergyUnavailable) as e:
                ok = False
                say(f"energy {job.id} failed: {e}")
                continue
            table = store.raw_table(rows, {"scheme": scheme, "variant": b.variant, "compiler": b.compiler.id,
                                           "job": job.id, "job_index": 0, "rep": 0, "pos": 0, "warmup": False})
            record = {"id": job.id, "variant": b.variant, "compiler": b.compiler.id, "build": b.id, "scheme": scheme,
                      "index": 0, "metric": "energy", "cpu": study.cpu, "hostname": socket.gethostname(),
                      "cpu_model": machine.cpu_model(), "binaries": {b.id: store.sha256_file(library)},
                      "domains": st["domains"], "measurements": details, "unit": "µJ",
                      "started": started, "finished": datetime.now(timezone.utc).isoformat()}
            sd.write_raw(job.id, table, record)
            say(f"energy {b.variant} ({b.compiler.id}) {scheme}: {job.id}.parquet")
    else:
        say(f"energy: unavailable ({st['reason']}); the study goes on without it")
        ok = False
    sd.update_manifest(lambda m: m.setdefault("metrics", {}).__setitem__("energy", info))
    return ok
