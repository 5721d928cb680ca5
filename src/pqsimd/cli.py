"""The `pqsimd` command line. Each command hands off to one pipeline stage."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from . import metrics as metrics_registry
from .errors import Interrupted, PqsimdError, command
from .model import AloneLayouts, AloneSets, Design, LayoutMode, Multiplicity, SharedCpu, choices


class Seconds(click.ParamType):
    """A duration in seconds: 0.5, 0.5s or 500ms (as time budgets are usually written)."""

    name = "seconds"
    UNITS = {"ms": 1e-3, "s": 1.0}
    NO_LIMIT = ("inf", "infinity", "none")

    def __init__(self, no_limit: bool = False):
        self.no_limit = no_limit  # inf / none mean "no limit", written 0

    def convert(self, value, param, ctx):
        if isinstance(value, (int, float)):
            return float(value)
        text = str(value).strip().lower()
        if text in self.NO_LIMIT and self.no_limit:
            return 0.0
        if text.lstrip("+-") in (*self.NO_LIMIT, "nan"):
            self.fail(f"{value!r} is not a duration: give seconds, e.g. 0.5, 0.5s or 500ms", param, ctx)
        scale = 1.0
        for unit in ("ms", "s"):
            if text.endswith(unit):
                text, scale = text[: -len(unit)].strip(), self.UNITS[unit]
                break
        try:
            return float(text) * scale
        except ValueError:
            self.fail(f"{value!r} is not a duration: give seconds, e.g. 0.5, 0.5s or 500ms", param, ctx)


def _csv(value: str | None) -> list[str] | None:
    if value is None:
        return None
    items = [v.strip() for v in value.split(",") if v.strip()]
    return items or None


def _vlens(value: str | None) -> list[int] | None:
    """--vlen 128,256,512 as numbers (checked against the ISA's limits by the study)."""
    items = _csv(value)
    if items is None:
        return None
    try:
        out = [int(x) for x in items]
    except ValueError:
        raise PqsimdError(f"--vlen {value!r}: give vector lengths in bits, e.g. --vlen 128,256,512") from None
    if len(set(out)) != len(out):
        raise PqsimdError(f"--vlen {value!r} names a length twice")
    return out


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="pqsimd")
def cli() -> None:
    """pqsimd: where does the speedup of an optimized post-quantum implementation come from?

    \b
    Typical use:
      pqsimd run study            build, verify, time (standard preset)
      pqsimd analyze study        statistics into study/results/
      pqsimd report study         figures, tables, index.html into study/report/
      pqsimd show study           the results as a terminal table
    """


@cli.command()
@click.argument("directory", type=click.Path(path_type=Path), default="study")
@click.option("--preset", type=str, default=None, help="quick | standard (default) | paper")
@click.option("--schemes", type=str, default=None,
              help="comma list of parameter sets, family names (ml-dsa = all its sets) or all "
                   "(default: the default family's; `pqsimd list`)")
@click.option("--variants", type=str, default=None, help="comma list of variants (default: the chain's; `pqsimd list`)")
@click.option("--aa", type=str, default=None,
              help="comma list of variants to build twice and time beside themselves: the A/A check of the verdicts")
@click.option("--ops", type=str, default=None, help="comma list of op ids, filtered per family (default: all)")
@click.option("--jobs", "jobs", type=int, default=None, help="J: jobs (processes) per (variant, scheme)")
@click.option("--spins", type=int, default=None, help="S: spins per op per job")
@click.option("--reps", type=int, default=None, help="R: timed samples per spin")
@click.option("--warmup", type=int, default=None, help="warmup spins per op (recorded, not analysed)")
@click.option("--batch", type=str, default=None, help="auto (default) or K calls per sample; 1 = the paper")
@click.option("--cpu", type=int, default=None,
              help="CPU to pin every job to (default: each job chooses an allowed CPU that is idle when it starts)")
@click.option("--shared-cpu", "shared_cpu", type=click.Choice(choices(SharedCpu)), default=None,
              help="a job whose CPU another program used: discard runs it again, on an idle CPU when "
                   "there is one; keep keeps it, marked in jobs.csv, its groups and comparisons flagged, the "
                   "verdicts shown with and without such jobs (for a machine you cannot get quiet); adapt "
                   "(default) discards until the sizing probe and a job's attempts show the CPUs busy, then keeps")
@click.option("--cc", type=str, default=None,
              help="compiler(s), comma list (default gcc), e.g. gcc-12,clang-16 or id=/path/to/cc")
@click.option("--design", type=click.Choice(choices(Design)), default=None,
              help="paired (default): all variants in one process, per-spin random order; separate: one process per variant (the paper's)")
@click.option("--layout", type=click.Choice(choices(LayoutMode)), default=None,
              help="random (default): every timing job links its own copies of the builds, code and data in a "
                   "seeded order (needs lld); fixed: the builds as linked (verdicts are then about one layout)")
@click.option("--layouts", type=int, default=None,
              help="layout random: copies of each build per job, spins alternate between them (standard 2)")
@click.option("--alone", type=int, default=None,
              help="paired: jobs per build and set that time the build alone in its process, for the "
                   "paired/alone (co-residency) ratio (standard 1, 0: none)")
@click.option("--alone-layouts", "alone_layouts", type=click.Choice(choices(AloneLayouts)), default=None,
              help="alone job r times the copies of paired job r (paired, default: the layout cancels in the "
                   "paired/alone ratio) or copies of its own (own)")
@click.option("--alone-sets", "alone_sets", type=click.Choice(choices(AloneSets)), default=None,
              help="the parameter sets alone jobs time: each family's first (default) or all")
@click.option("--budget", type=Seconds(), default=None,
              help="time per op and job (0.5, 0.5s or 500ms): spins/reps/batch chosen per op")
@click.option("--job-timeout", "job_timeout", type=Seconds(no_limit=True), default=None,
              help="time limit per timing job and probe (0, inf or none: no limit; default: derived from the op times, run/limits.py)")
@click.option("--max-call", "max_call_s", type=Seconds(), default=None,
              help="an op whose one call takes longer is not timed for that build (0: no cap; quick 0.2 s, standard 2 s)")
@click.option("--timer-quantum", "timer_quantum", type=int, default=None,
              help="TICKS: the driver rounds every clock read down to a multiple of it (a coarse clock, to test the "
                   "analysis; 0: none)")
@click.option("--warmup-ns", "warmup_ns", type=int, default=None, help="paired: untimed warm-up before each variant's reps (ns, default 50000)")
@click.option("--source", type=click.Path(path_type=Path), default=None, help="your own PQClean-layout tree")
@click.option("--sources", "sources", type=str, multiple=True,
              help="NAME=PATH: a checkout you bring (a git clone) for the implementations whose family TOML "
                   "says `checkout = NAME` (`pqsimd list` names them); repeatable")
@click.option("--seed", type=int, default=None, help="seed for the job order and the bootstraps")
@click.option("--metric", type=str, default=None, help=f"comma list of {metrics_registry.help_list()}")
@click.option("--mca-cpu", "mca_cpus", type=str, default=None,
              help="mix: llvm-mca CPU models to estimate, comma list, e.g. znver1,znver3,skylake (default: this host's)")
@click.option("--sim-cpu", "sim_cpus", type=str, default=None,
              help="sim: cache geometries to simulate, comma list of host (default), cascadelake, zen4, zen5, "
                   "cortex-a72, neoverse-n1, neoverse-v2, apple-m1 (data/caches.toml)")
@click.option("--isa", type=str, default=None,
              help="instruction set to build and measure (data/isas.toml; default: this host's); another ISA "
                   "runs under qemu-user: --metric instructions,mix")
@click.option("--vlen", type=str, default=None,
              help="vector length(s) in bits of an ISA that has one (riscv64: 128-1024, default 256; 0: no vector "
                   "unit); a comma list runs the study once per length in DIR/vlen/<N> and compares them")
@click.option("--executor", type=click.Choice(["local", "slurm"]), default=None,
              help="local (default) or slurm (a machine set: slurm)")
@click.option("--partition", type=str, default=None, help="slurm: partition")
@click.option("--nodelist", type=str, default=None, help="slurm: node(s) to run on")
@click.option("--exclusive", is_flag=True, default=False, help="slurm: whole node per task")
@click.option("--time", "time_limit", type=str, default=None, help="slurm: time limit HH:MM:SS per task")
@click.option("--account", type=str, default=None, help="slurm: account")
@click.option("--sbatch-arg", "sbatch_args", type=str, multiple=True, help="slurm: extra sbatch argument (repeatable)")
@click.option("--machines", type=str, default=None,
              help="slurm: comma list of partitions (machine types): the study once per partition in "
                   "DIR/machines/<name>, then their campaign in DIR/campaign")
@click.option("--no-run", is_flag=True, default=False, help="build and verify only")
@click.option("--like", "like", type=click.Path(path_type=Path), default=None,
              help="a new study with the settings of the study in this directory (its study.toml); "
                   "the options given here change them (a quiet rerun: --like DIR --shared-cpu discard)")
@click.option("--ablation", is_flag=True, default=False,
              help="time each family's ablation: its variant with every subset of its kernel groups native")
def run(directory: Path, **opts) -> None:
    """Build, verify and time a study into DIRECTORY (re-running continues it)."""
    from .pipeline import run_study

    for key in ("schemes", "variants", "ops", "aa"):
        if opts[key] is not None:
            opts[key] = _csv(opts[key]) or []  # an empty list is refused by the study, with the reason
    opts["metric"] = _csv(opts["metric"])
    opts["mca_cpus"] = _csv(opts["mca_cpus"])
    opts["sim_cpus"] = _csv(opts["sim_cpus"])
    opts["ablation"] = True if opts["ablation"] else None  # not given: the stored study's
    if opts.get("source") is not None:
        opts["source"] = str(opts["source"])
    opts["sources"] = [x for item in opts["sources"] for x in (_csv(item) or [])] or None
    vlens = _vlens(opts.pop("vlen"))
    from .studydir import CAMPAIGN_DIR, MACHINES_DIR, VLEN_DIR, is_machine_set, is_vlen_set
    from .studysets import run_machines, run_vlens

    vlen_set = is_vlen_set(directory) or (vlens is not None and len(vlens) > 1)
    if vlens is not None and len(vlens) == 1 and not vlen_set:
        opts["vlen"] = vlens[0]
    slurm = {k: opts.pop(k) for k in ("partition", "nodelist", "exclusive", "time_limit", "account", "sbatch_args")}
    _start_like(directory, opts.pop("like"))
    executor = opts.pop("executor")  # None: local, or the set's own (a machine set runs on SLURM)
    no_run = opts.pop("no_run")
    machines = _csv(opts.pop("machines"))
    if machines or is_machine_set(directory):  # the study once per partition (a set continues with its own)
        if vlens is not None and len(vlens) > 1:
            raise PqsimdError(f"--vlen {','.join(map(str, vlens))} with a machine set: each machine's study has one "
                              f"length; give one --vlen N, or run the lengths in a directory of their own "
                              f"(--vlen without --machines)")
        if executor != "slurm" and (machines or executor is not None):
            raise PqsimdError("--machines runs on a SLURM cluster: add --executor slurm" if machines else
                              f"{directory} is a machine set, run on a SLURM cluster: drop --executor {executor}")
        ok = run_machines(directory, machines, opts, slurm, time_jobs=not no_run)
        if not ok:
            sys.exit(1)
        click.echo(_next_step(directory, no_run, report=directory / CAMPAIGN_DIR / "report"))
        return
    executor = executor or "local"
    if not vlen_set and not (directory / "study.toml").exists():
        _refuse_beside_set_parts(directory, MACHINES_DIR, VLEN_DIR)
    if vlen_set:  # the study once per vector length (a set continues with its own lengths)
        ok = run_vlens(directory, vlens, opts, executor=executor, slurm_options=slurm, time_jobs=not no_run)
    else:
        ok = run_study(directory, overrides=opts, executor=executor, slurm_options=slurm, time_jobs=not no_run)
    if not ok:
        sys.exit(1)
    click.echo(_next_step(directory, no_run, report=directory / "report" if vlen_set else None))


def _start_like(directory: Path, like: Path | None) -> None:
    """--like DIR: DIRECTORY starts as a copy of DIR's study.toml (then `run` continues it, the options given
    changing it as they change any stored study)."""
    if like is None:
        return
    src = Path(like) / "study.toml"
    if not src.is_file():
        raise PqsimdError(f"--like {like}: no study.toml there; give the directory of a study that a run made")
    if (directory / "study.toml").exists():
        raise PqsimdError(f"{directory} holds a study already: --like starts a new one; give a new directory")
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "study.toml").write_bytes(src.read_bytes())


def _next_step(directory: Path, no_run: bool, report: Path | None) -> str:
    """What to type after `pqsimd run`, with DIRECTORY as the user gave it: time it (after --no-run),
    analyse and report it (a study), or read it (a set, analysed and reported by its run: `report`)."""
    from .errors import command

    if no_run:
        return f"built and verified; next: {command('run', directory)} times it"
    if report is not None:
        return f"next: {command('show', directory)} prints the results; open {report / 'index.html'}"
    return (f"next: {command('analyze', directory)}, then {command('report', directory)} "
            f"(or {command('show', directory)} for the tables in the terminal)")


def _refuse_beside_set_parts(directory: Path, machines_dir: str, vlen_dir: str) -> None:
    """A plain study is never made beside a set's sub-studies (a set whose marker file is missing)."""
    import tomllib

    from .errors import command

    for sub, marker in ((machines_dir, "machines.toml"), (vlen_dir, "vlens.toml")):
        d = directory / sub
        names = sorted((p.name for p in d.iterdir() if p.is_dir()), key=lambda n: (len(n), n)) if d.is_dir() else []
        if not names:
            continue
        if sub == machines_dir:
            how = command("run", directory, "--executor", "slurm", "--machines", ",".join(names))
        else:
            try:
                isa = tomllib.loads((d / names[0] / "study.toml").read_text())["study"]["isa"]
            except (OSError, ValueError, KeyError, TypeError):
                isa = "ISA"
            how = command("run", directory, "--isa", isa, "--vlen", ",".join(names))
        raise PqsimdError(f"{directory} holds {sub}/ but no {marker}, so a study made here would sit beside its "
                          f"sub-studies; continue the set with {how} or use a new directory")


@cli.command("list")
def list_() -> None:
    """What pqsimd can time: families, parameter sets, ops, variants, the chain, presets."""
    from rich.table import Table
    from rich.text import Text

    from . import catalog
    from .console import PROSE_WIDTH, stdout_console

    con = stdout_console(piped_width=PROSE_WIDTH)
    for fam in catalog.families().values():
        # a Text, so "[ml-kem, kind kem]" is printed, not taken for markup
        t = Table(title=Text(f"{fam.title}  [{fam.name}, kind {fam.kind}{', default' if fam.default else ''}]"),
                  title_justify="left", box=None, header_style="bold")
        t.add_column("parameter sets")
        t.add_column("implementations")
        t.add_column("ops (the report's label)")
        t.add_row(", ".join(fam.schemes), ", ".join(fam.implementations), _ops_with_labels(fam))
        con.print(t)
        con.print(f"  from {fam.source}")
        for impl in fam.implementations.values():
            if impl.table.get("checkout"):
                con.print(f"  {impl.name} is built from a checkout you bring: --sources {impl.table['checkout']}=PATH"
                          + (f" ({impl.table['checkout_hint']})" if impl.table.get("checkout_hint") else ""))
            if impl.groups:
                con.print(f"  {impl.name} ({impl.layout}) kernel groups: {', '.join(impl.groups)}"
                          + (f"; --ablation switches them in {fam.ablation['variant']}" if fam.ablation else ""))
    fam = catalog.default_family()
    op, label = next(((o, l) for o, l in fam.op_names().items() if l.casefold() != o.casefold()), (fam.ops[0],) * 2)
    con.print(f"an op is named by its id or by its label in parentheses, in any case: --ops {op} and "
              f"--ops {label.upper()} name one op")
    t = Table(title="variants", title_justify="left", box=None, header_style="bold")
    for c in ("variant", "sources", "flags", "default", "description"):
        t.add_column(c)
    for v in catalog.builtin_variants().values():
        t.add_row(v.id, v.sources, " ".join(v.flags), "yes" if v.default else "", v.description)
    con.print(t)
    from . import isa as isa_mod

    for name in isa_mod.names():
        ch = catalog.chain(name)
        con.print(f"chain ({name}): " + " → ".join(ch.variants) + "  ("
                  + ", ".join(f"{s.stage} = {s.base}→{s.variant}" for s in ch.steps) + ")")
    con.print("presets: " + "; ".join(f"{k} ({v.get('description', '')})" for k, v in catalog.presets().items()))
    con.print("compilers known on Debian 12: " + ", ".join(catalog.compilers_doc()["known"]["debian12"])
              + "  (`pqsimd doctor` says which are installed)")


def _ops_with_labels(fam) -> str:
    """`op_id (label), other_op, ...`: each op id with the label the report and `show` print for it,
    where they differ other than in case (either is accepted wherever an op is named)."""
    return ", ".join(op if label.casefold() == op.casefold() else f"{op} ({label})"
                     for op, label in fam.op_names().items())


@cli.command()
def doctor() -> None:
    """Check this machine: ISA, TSC, frequency scaling, counters, compilers, cargo."""
    from .doctor import run_doctor

    sys.exit(0 if run_doctor() else 1)


@cli.command()
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--bootstrap", "n_boot", type=int, default=None, help="bootstrap resamples B (default 5000)")
@click.option("--seed", type=int, default=None, help="bootstrap seed")
@click.option("--multiplicity", "adjust", type=click.Choice(choices(Multiplicity)), default=None,
              help="the family level of the intervals: fcr (Benjamini-Hochberg, default), by (Benjamini-Yekutieli: "
                   "any dependence), bonferroni, none; [analysis] adjust")
def analyze(directory: Path, n_boot: int | None, seed: int | None, adjust: str | None) -> None:
    """Statistics of a study into DIRECTORY/results/."""
    from .analyze import analyze_study
    from .studydir import MACHINE_SET, STUDY, VLEN_SET, is_machine_set, is_vlen_set, require_kind
    from .studysets import analyse_machines, analyse_set

    require_kind(directory, "analyze", (STUDY, VLEN_SET, MACHINE_SET))
    if is_vlen_set(directory):  # every length's study, then the vector-length view
        click.echo(f"results written to {analyse_set(directory)}")
        return
    if is_machine_set(directory):  # every partition's study, then their campaign again
        click.echo(f"campaign results written to {analyse_machines(directory)}")
        return

    out = analyze_study(directory, n_boot=n_boot, seed=seed, adjust=adjust)
    click.echo(f"results written to {out}")


@cli.command()
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--reference", type=click.Choice(["paper"]), default=None, help="put the paper's Table 1 beside ours")
@click.option("--beside", type=click.Path(path_type=Path), default=None,
              help="a study of another ISA: a cross-ISA section (hand SIMD on each, per op)")
def report(directory: Path, reference: str | None, beside: Path | None) -> None:
    """Figures, tables and index.html into DIRECTORY/report/."""
    from .studysets import report_study
    from .studydir import CAMPAIGN, MACHINE_SET, STUDY, VLEN_SET, is_machine_set, is_vlen_set, require_kind

    if require_kind(directory, "report", (STUDY, CAMPAIGN, VLEN_SET, MACHINE_SET)) == CAMPAIGN:
        from .report.campaign import write_campaign_report

        out = write_campaign_report(directory)
        click.echo(f"report written to {out}/ — open {out / 'index.html'}")
        return
    if is_vlen_set(directory) or is_machine_set(directory):
        from .studysets import report_machines, report_set

        out = report_set(directory) if is_vlen_set(directory) else report_machines(directory)
        click.echo(f"report written to {out}/ — open {out / 'index.html'}")
        return

    _analyse_again_if_older(directory)
    out = report_study(directory, reference=reference, beside=beside)
    click.echo(f"report written to {out}/ — open {out / 'index.html'}")


def _analyse_again_if_older(directory: Path) -> None:
    """Results computed from other raw files than raw/ holds now (a metric added since, more jobs, a job
    run again, a raw file copied in or removed: told by the files' names and sha256, results.stale_jobs,
    not by their times), analysed again with the settings the last analysis was given (a later edit of
    study.toml's [analysis] wins: analysis_settings.again), so the report shows everything measured.
    Results analysed from raw files the study does not hold are read as they are (never replaced)."""
    from .analysis_settings import again
    from .analyze import analyze_study
    from .results import read_json, stale_files
    from .studydir import StudyDir

    sd = StudyDir(directory)
    path = sd.results("summary.json")
    if not path.is_file() or sd.analysed_elsewhere():
        return
    summary = read_json(path)
    if not isinstance(summary, dict):
        return
    if isinstance(summary.get("computed_from"), dict):
        stale = stale_files(directory, summary)
    else:  # results of an older pqsimd say nothing of their raw files: their time is all there is
        when = path.stat().st_mtime
        stale = [p.name for p in sd.raw_files() if p.stat().st_mtime > when]
    if not stale:
        return
    n = len(stale)
    click.echo(f"{n} raw file{'s' if n > 1 else ''} ({stale[0]}{', ...' if n > 1 else ''}) changed since results/ was "
               f"analysed (new, run again or gone): analysing again first", err=True)
    analyze_study(directory, **again(directory, summary))


@cli.command()
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--metric", type=str, default=None, help="ticks | instructions | ...")
@click.option("--stage", type=str, default=None, help="only this stage, e.g. hand_simd")
@click.option("--compiler", type=str, default=None, help="only this compiler (default: all)")
@click.option("--beside", type=click.Path(path_type=Path), default=None,
              help="a study of another ISA: print the cross-ISA lines too")
def show(directory: Path, metric: str | None, stage: str | None, compiler: str | None, beside: Path | None) -> None:
    """The results of a study (or of a campaign) as a terminal table, grouped by family."""
    from .analyze.campaign import is_campaign
    from .studydir import CAMPAIGN, MACHINE_SET, STUDY, VLEN_SET, is_machine_set, is_vlen_set, require_kind

    require_kind(directory, "show", (STUDY, CAMPAIGN, VLEN_SET, MACHINE_SET))
    if is_vlen_set(directory):
        from .report.vlen import show_vlen
        from .results import read_json
        from .studydir import StudyDir
        from .studysets import show_set_missing

        if not read_json(StudyDir(directory).results("vlen.json")):
            show_set_missing(directory)
        show_vlen(directory)
        return
    if is_machine_set(directory):
        from .report.campaign import show_campaign
        from .studysets import machine_campaign

        show_campaign(machine_campaign(directory), stage=stage)
        return
    if is_campaign(directory):
        from .report.campaign import show_campaign

        show_campaign(directory, stage=stage)
        return
    from .report import ct as ct_view
    from .report.terminal import show_study
    from .results import has_comparisons

    _analyse_again_if_older(directory)  # a metric measured since the last analysis is shown, as report shows it
    verdicts_only = metric in metrics_registry.REGISTRY and metrics_registry.REGISTRY[metric].verdicts
    if (verdicts_only or not has_comparisons(directory)) and ct_view.has_ct(directory):
        from rich.console import Console

        if metric is not None and not verdicts_only:  # a study that only tested constant time has no such numbers
            raise PqsimdError(f"{directory} tested constant time only: it has no {metric} measurements; add them with "
                              f"{command('run', directory, '--metric', metric)}, or drop --metric")

        ct_view.show(directory, Console())  # constant time alone (`--metric ct`, or a study that only tested it)
        return
    if beside is not None:
        from .studysets import prepare_beside

        prepare_beside(directory, beside)  # the cross-ISA tables show prints after the study's
    show_study(directory, metric=metric, stage=stage, compiler=compiler, beside=beside)


@cli.command()
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--scheme", required=True, type=str, help="parameter set, e.g. as `pqsimd show DIR` lists it")
@click.option("--op", required=True, type=str, help="op id, or the label the report shows (`pqsimd list` names both)")
@click.option("--variants", type=str, default=None, help="comma list of variants (default: the chain step that matters)")
@click.option("--compiler", type=str, default=None, help="compiler (default: the study's first)")
def explain(directory: Path, scheme: str, op: str, variants: str | None, compiler: str | None) -> None:
    """Why one op's variants differ: instruction mix, ticks per instruction, cost model (--metric mix)."""
    from .report.explain import explain_op

    from .studydir import require_kind

    require_kind(directory, "explain", again=lambda d: ["explain", d, "--scheme", scheme, "--op", op])
    op = _study_op(directory, op, scheme)
    click.echo(explain_op(directory, scheme, op, variants=_csv(variants), compiler=compiler))


def _study_op(directory: Path, op: str, scheme: str | None) -> str:
    """The op id an --op names (its id or the report's label) in the families a study's results
    recorded, of `scheme`'s family when one is given; as given when there are no results (the command
    then says what to run)."""
    from .catalog import recorded_op_names, resolve_op
    from .results import read_summary

    names = recorded_op_names(read_summary(directory).get("families") or {}, scheme)
    return resolve_op(op, names, scheme or "the study's families") if names else op


def _campaign_options(command):
    """--labels and the stated subset of a campaign, for `campaign` and `compare --speedups` (a campaign
    of two studies), whose refusals name them."""
    for option in reversed((
            click.option("--labels", type=str, default=None,
                         help="comma list: a name per study (default: the directory names)"),
            click.option("--schemes", type=str, default=None, help="stated subset: only these parameter sets"),
            click.option("--ops", type=str, default=None, help="stated subset: only these ops (ids or labels)"),
            click.option("--variants", type=str, default=None,
                         help="stated subset: only comparisons between these variants"),
            click.option("--compilers", type=str, default=None, help="stated subset: only these compilers"))):
        command = option(command)
    return command


@cli.command()
@click.argument("dir_a", type=click.Path(path_type=Path))
@click.argument("dir_b", type=click.Path(path_type=Path))
@click.option("--speedups", is_flag=True, default=False,
              help="compare speedups, not times: a campaign of the two studies (machines named, ratio of each speedup)")
@click.option("--stage", type=str, default=None, help="with --speedups: only this stage, e.g. hand_simd")
@_campaign_options
def compare(dir_a: Path, dir_b: Path, speedups: bool, stage: str | None, labels: str | None, **subset) -> None:
    """The same (scheme, op, variant) across two studies: B/A ratio, CI and verdict."""
    from .studydir import require_kind

    given = [f"--{k}" for k, v in {"labels": labels, "stage": stage, **subset}.items() if v is not None]
    if given and not speedups:
        raise PqsimdError(f"{', '.join(given)} only work{'s' * (len(given) == 1)} with --speedups (a campaign of "
                          f"the two studies); add it, or leave {'them' if len(given) > 1 else 'it'} out to compare "
                          f"every time")
    extra = ["--speedups"] if speedups else []
    require_kind(dir_a, "compare", again=lambda d: ["compare", d, dir_b, *extra])
    require_kind(dir_b, "compare", again=lambda d: ["compare", dir_a, d, *extra])
    if speedups:
        from .analyze.campaign import build_campaign, read_spec
        from .report.campaign import from_tables, show_campaign

        spec = read_spec(Path("."), [dir_a, dir_b], {k: _csv(v) for k, v in subset.items()}, _csv(labels))
        show_campaign(from_tables(build_campaign(spec)), stage=stage)
        return
    from .analyze.crossstudy import compare_studies
    from .report.terminal import print_comparison

    print_comparison(dir_a, dir_b, compare_studies(dir_a, dir_b))


@cli.command()
@click.argument("out", type=click.Path(path_type=Path))
@click.argument("studies", nargs=-1, type=click.Path(path_type=Path))
@_campaign_options
@click.option("--bootstrap", "n_boot", type=int, default=None, help="job resamples per ratio (default 4000)")
@click.option("--seed", type=int, default=None, help="bootstrap seed")
def campaign(out: Path, studies: tuple[Path, ...], labels: str | None, n_boot: int | None, seed: int | None,
             **subset) -> None:
    """The same study on several machines (or compilers): does each speedup hold? Reads each STUDY's
    results/, manifest, plan and study.toml (no raw/) into OUT/results and OUT/report. Without
    STUDIES: from OUT/campaign.toml."""
    from .analyze.campaign import DEFAULT_BOOT, DEFAULT_SEED, run_campaign
    from .report.campaign import write_campaign_report

    from .analysis_settings import MAX_BOOT, MAX_SEED

    if n_boot is not None and not 100 <= n_boot <= MAX_BOOT:
        raise PqsimdError(f"--bootstrap must be from 100 to {MAX_BOOT:,} resamples, got {n_boot}")
    if seed is not None and not 0 <= seed <= MAX_SEED:
        raise PqsimdError(f"--seed must be an integer from 0 to {MAX_SEED}, got {seed}")
    results = run_campaign(out, list(studies), {k: _csv(v) for k, v in subset.items()}, _csv(labels),
                           n_boot=n_boot or DEFAULT_BOOT, seed=DEFAULT_SEED if seed is None else seed)
    report = write_campaign_report(out)
    from .errors import command

    click.echo(f"campaign results in {results}, report in {report}/ — {command('show', out)} prints the table")


@cli.command()
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--retime", is_flag=True, default=False,
              help="re-time the worst flagged groups: their worst and a typical copy made again from the job records, "
                   "timed alone and in the worst copy's job; then where they differ, simulated events and a search")
@click.option("--scheme", type=str, default=None, help="only groups of this parameter set")
@click.option("--op", type=str, default=None, help="only groups of this op")
@click.option("--variant", type=str, default=None, help="only groups of this variant")
@click.option("--compiler", type=str, default=None, help="only groups of this compiler")
@click.option("--max", "limit", type=int, default=3, show_default=True, help="--retime: at most this many groups, worst first")
@click.option("--processes", type=int, default=5, show_default=True, help="--retime: driver processes per test")
@click.option("--no-search", is_flag=True, default=False, help="--retime: no placement search")
@click.option("--no-sim", is_flag=True, default=False, help="--retime: no simulated events (callgrind)")
def cliffs(directory: Path, retime: bool, limit: int, processes: int, no_search: bool, no_sim: bool, **select) -> None:
    """Laid-out copies far slower than the rest of their group: the flags, and with --retime the proof
    (re-timed from the records) and the explanation (placement, simulated events, search)."""
    from .report.cliffs import show_cliffs
    from .studydir import require_kind

    if select.get("op"):
        select["op"] = _study_op(directory, select["op"], select.get("scheme"))
    if retime:
        from .analyze import analyze_study
        from .run.retime import retime as run_retime

        if limit is not None and limit < 1:
            raise PqsimdError(f"--max {limit}: give at least 1")
        if processes < 2:
            raise PqsimdError(f"--processes {processes}: the re-timing's interval needs at least 2 processes")
    require_kind(directory, "cliffs")
    if retime:
        from .studydir import StudyDir

        StudyDir(directory).refuse_analysed_elsewhere("re-timed")  # this machine's times beside another's
        run_retime(directory, {k: v for k, v in select.items() if v}, limit, processes, not no_search, not no_sim,
                   notify=lambda line: click.echo(line, err=True))
        from .analysis_settings import again
        from .results import read_summary

        analyze_study(directory, **again(directory, read_summary(directory)))  # the last analysis's settings
    show_cliffs(directory, {k: v for k, v in select.items() if v})


@cli.group()
def slurm() -> None:
    """Inspect or cancel a study's SLURM jobs."""


@slurm.command("status")
@click.argument("directory", type=click.Path(path_type=Path))
def slurm_status(directory: Path) -> None:
    """Show the state of a study's SLURM array tasks."""
    from .run.slurm.status import status

    status(directory)


@slurm.command("cancel")
@click.argument("directory", type=click.Path(path_type=Path))
def slurm_cancel(directory: Path) -> None:
    """Cancel a study's SLURM jobs (finished raw files are kept)."""
    from .run.slurm.status import cancel

    cancel(directory)


@cli.command("job", hidden=True)
@click.argument("directory", type=click.Path(path_type=Path))
@click.argument("job_id", type=str)
@click.option("--build-on-node", is_flag=True, default=False, help="build and gate the variant here first (-march=native)")
def job(directory: Path, job_id: str, build_on_node: bool) -> None:
    """Run one job of a study (what the local and SLURM executors call)."""
    from .run.job import run_job

    # a SLURM task's lines (a wait for its CPU, a discarded attempt) go to its log in DIR/logs/slurm/
    run_job(directory, job_id, build_on_node=build_on_node, notify=lambda line: print(line, file=sys.stderr, flush=True))


def _utf8_mode() -> None:
    """pqsimd's files (data TOML, study files, reports) are UTF-8 whatever the locale: under a latin-1
    or ASCII locale the process starts again in Python's UTF-8 mode (PYTHONUTF8=1, inherited by the
    processes it starts), before it has done anything."""
    import locale

    if sys.flags.utf8_mode or locale.getpreferredencoding(False).lower().replace("-", "") == "utf8":
        return
    os.environ["PYTHONUTF8"] = "1"
    os.execv(sys.executable, [sys.executable, "-m", "pqsimd.cli", *sys.argv[1:]])


def _tolerant_output() -> None:
    """A character the terminal's encoding lacks (→, ×, ± under a latin-1 or ASCII locale) prints as
    `?` instead of stopping the command with UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")


def main() -> None:
    from .run.child import install_stop_handlers

    _utf8_mode()
    _tolerant_output()
    install_stop_handlers()
    try:
        cli.main(standalone_mode=False, prog_name="pqsimd")
    except click.exceptions.Abort:
        click.echo("interrupted: finished jobs are kept; run the same command again to continue", err=True)
        sys.exit(130)
    except Interrupted as e:
        click.echo(str(e), err=True)
        sys.exit(130)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except PqsimdError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(2)
    except OSError as e:  # a full disk, a read-only study directory: the machine's problem, in one line
        from .errors import os_problem

        click.echo(f"error: {os_problem(e)}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        click.echo("interrupted: finished jobs are kept; run the same command again to continue", err=True)
        sys.exit(130)


if __name__ == "__main__":
    main()
