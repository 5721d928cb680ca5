"""The methods text of a study: one sentence per statistic, with this study's settings and family
level filled in. summary.json carries it and the report prints it verbatim (a test compares them),
so what a reader sees is what the code did."""

from __future__ import annotations

from ..model import Design, LayoutMode
from ..results import level_text
from ..stats.multiplicity import FamilyLevel
from ..analysis_settings import Settings


ESTIMAND = {
    "laid_out": "the typical layout: with randomized layouts a speedup is the median, over process states (jobs) "
                "and layouts (copies) together, of the ratio of one copy of the baseline to one copy of the variant "
                "(copy l of both, timed in the same spins); it does not depend on how many copies a job times; its "
                "interval is the clustered sign interval (method csign), jobs the clusters",
    "fixed": "the median over jobs of the job ratio (method sign), the one layout the builds were linked in",
    "one_copy": "the median over jobs of the job ratio (method sign); with randomized layouts and one copy per job "
                "each job is its own process state and its own layout, so it is the typical job and layout together",
    "separate": "the ratio of the geometric means of the baseline's and the variant's job medians (method t), "
                "every build timed alone in its own jobs",
    "not_estimated": "the expected cost over layouts (the geometric or arithmetic mean over all layouts): a cliff "
                     "one layout in ten or fewer carries decides it, and J x L copies that drew none of it cannot "
                     "bound it; cliffs are findings of their own (results/cliffs, cliff_finding), with their copies",
}


def estimand_of(design: str, layout: dict | None) -> str:
    """Which of ESTIMAND a study's speedups are: its design and how it laid out its code."""
    if design != Design.PAIRED:
        return "separate"
    layout = layout or {}
    if layout.get("mode") != LayoutMode.RANDOM:
        return "fixed"
    return "laid_out" if int(layout.get("copies_per_job") or 1) > 1 else "one_copy"


def methods(settings: Settings, fam: FamilyLevel | None, design: str, estimand: str = "fixed") -> dict[str, str]:
    thr = f"±{settings.threshold:.0%}"
    level = level_text(fam.level) if fam else f"{1 - settings.alpha:.0%}"
    adjust = {
        "fcr": (f"false coverage-statement rate control (Benjamini & Yekutieli 2005): the Benjamini-Hochberg "
                f"step-up at alpha = {settings.alpha:g} over the comparisons' decision p-values selects R"
                + (f" = {fam.selected} of m = {fam.m}" if fam else "") + f"; every interval is printed at level "
                f"1 - R alpha / m ({level}); the expected share of verdicts whose interval misses the true speedup "
                f"is at most {settings.alpha:g}"),
        "by": (f"false coverage-statement rate control under any dependence (Benjamini & Yekutieli 2001, 2005): the "
               f"Benjamini-Yekutieli step-up at alpha = {settings.alpha:g} / c(m), c(m) = sum of 1/i for i <= m, selects R"
               + (f" = {fam.selected} of m = {fam.m}" if fam else "") + f"; every interval is printed at level "
               f"1 - R alpha / (m c(m)) ({level}); the expected share of verdicts whose interval misses the true "
               f"speedup is at most {settings.alpha:g} whatever the correlation between comparisons"),
        "bonferroni": (f"Bonferroni: every interval at level 1 - alpha / m ({level}"
                       + (f", m = {fam.m}" if fam else "") + f"): the chance that any interval misses is at most "
                       f"{settings.alpha:g}"),
        "none": f"no multiplicity control: every interval at level 1 - alpha ({level})",
    }[settings.adjust]
    other = (fam.other or {}) if fam else {}
    if other:
        name = {"fcr": "Benjamini-Hochberg (fcr)", "by": "Benjamini-Yekutieli (by)"}
        adjust += (f"; {name[other['adjust']]} would print at {level_text(other['level'])} and change "
                   f"{other['verdicts_changed']} verdict(s) (given or withheld)")
    return {
        "unit": "spin median = median of per_call over the R reps of one (job, spin); warmup spins excluded; "
                "job median = median of a job's spin medians; the job (one process) is the unit of independence",
        "per_call": "per_call = (sample ticks - null) / calls per sample, null being the median of 3 samples of as "
                    "many calls of an empty function through the same loop, taken right after the op's samples in "
                    "the same spin (raw column null_raw): what remains is the op's own time, as the core's clock "
                    "ran at that moment (ticks are not cycles); the family's empty op reads it as ~0 (summary "
                    "self_check, tolerance +-1 tick)",
        "group": "a group's estimate (groups.median) is the median of its job medians (with an even number of jobs "
                 "the geometric mean of the middle two); median_ci_* the order-statistic interval of the job "
                 f"medians at the widest level up to {1 - settings.alpha:.0%} its J reaches (median_ci_level). "
                 "With randomized layouts the group's typical layout: the median of its copies' medians over jobs "
                 "and copies (each job weighing alike), median_ci_* the clustered sign interval; a job's value is the "
                 "median of its copies' medians (two copies: their geometric mean), read by every consumer",
        "estimand": f"{ESTIMAND[estimand]}. Not estimated: {ESTIMAND['not_estimated']}",
        "speedup": "paired design with randomized layouts: the median of the J x L copy pairs' log ratios (copy l "
                   "of the baseline / copy l of the variant, timed in the same spins), each job weighing alike, "
                   "method csign; paired design, one layout: the median over jobs of the job ratio (job "
                   "median of the baseline / job median of the variant), method sign; separate design: the ratio "
                   "of the geometric means of the two groups' job medians, method t; deterministic counts: the "
                   "exact ratio, method exact",
        "ci": "paired, laid out (csign): the clustered sign interval, every theta whose jobs' sign scores (the "
              "mean over a job's copy pairs of sign(log ratio - theta)) a one-sample t test over the J jobs (J - 1 "
              "df; p at least 2^(1-J)) does not reject at the family's level, ci_level = that level (jobs are the "
              "clusters: a job's copies share its process state; coverage measured by plasmode in "
              "bench/bench_layout_coverage.py); below 6 jobs [min, max] of the copy pairs, withheld. "
              "Paired, one layout (sign): the distribution-free order-statistic interval [x(k), x(J+1-k)] of the J job ratios, "
              "k the largest whose confidence 1 - 2 P(Bin(J, 1/2) <= k-1) is at least the family level; it holds "
              "for any distribution of job effects (skewed, a few disturbed jobs, ties); ci_level is that "
              "confidence. J jobs reach at most 1 - 2^(1-J) (93.75% at 5, 99.8% at 10): below the family level "
              "the interval printed is [min, max] with its own level and the verdict is withheld. Separate (t): "
              "exp(d -+ t(1 - gamma/2, df) se) of the job-level test: Welch on log job medians when both groups "
              "have >= 5 jobs, else the test pooled over the ops of a job (limma-style moderated job-state and "
              "op-specific variances, Welch-Satterthwaite df); rows whose effective df < 4, with a group of < 2 "
              "jobs, or (2 jobs) mostly op-specific variance are withheld",
        "family": f"the multiple-testing family: every comparison with a sampling interval (methods sign, csign and "
                  f"t), excluding n/a, exact, withheld-by-design and A/A rows; comparisons whose evidence shares a "
                  f"cliff copy (cliff_finding) are one unit (its p the smallest member's times their number; "
                  f"Benjamini-Bogomolov), so one slow copy is not counted as many findings; {adjust}",
        "p_decision": "the smallest miss probability gamma at which the comparison's (1 - gamma) interval gives a "
                      "verdict (two-sided sign test, or t test, of the interval hypothesis it would decide); the "
                      "family's intervals give a verdict exactly where p_decision <= gamma",
        "verdict": f"read off the printed interval: faster if it lies above 1 + threshold, slower below "
                   f"1/(1 + threshold), same inside {thr}, ~ if it reaches into the band's edge, withheld when the "
                   f"design cannot give an interval at the family's level (reason says why), n/a if a side has no "
                   f"data; exact rows from the exact ratio",
        "mde": "the smallest true speedup that gets a faster verdict with power 0.8 at the family's level: paired, "
               "from the sign interval's rule (>= J+1-k jobs above the band: Bin(J, p), jobs' log ratios normal "
               "with the robust SD 1.4826 MAD of this comparison's job ratios); separate, the noncentral t of the "
               "row's se and df",
        "cliffs_delta": "P(variant < baseline) - P(variant > baseline) over spin medians (from the Mann-Whitney U); "
                        f"delta_ci_* its {1 - settings.alpha:.0%} percentile interval over job resamples (jobs "
                        "matched in the paired design); descriptive, like mwu_p (one-sided Mann-Whitney U on spin "
                        "medians, the paper's, pseudo-replicated)",
        "decomposition": "factor_<stage> is the stage comparison (estimate and interval as in comparisons); total is "
                         "the product of the factors, share_<stage> = log factor / log total; every derived interval "
                         "is the range over the box of the stage intervals, so it contains its estimate and covers "
                         "whenever all stage intervals do (total_ci_level = 1 - the stages' summed miss "
                         "probabilities, Bonferroni); shares n/a when the total's interval reaches the threshold band",
        "regimes": "paired design, >= 6 jobs: each comparison's job log ratios are split once, at the widest gap "
                   "leaving >= 2 jobs on each side; a candidate split has its clusters more than the threshold (and "
                   "twice the clock's resolution) apart and farther apart than either is wide. Job-state test (pooled "
                   "over a parameter set's comparisons measured in the same jobs): W counts, per pair of jobs, the "
                   "other ops' comparisons split beyond the threshold that put both on the same side (comparisons of "
                   "the same op share its groups' noise and are left out); the statistic is the sum of W over the "
                   "pairs this split puts together, and its p-value the exact share of all assignments of the jobs "
                   "to clusters of these sizes that reach it (at least 1 / C(J, m), 1/120 for 3 of 10 jobs); "
                   f"Benjamini-Hochberg over the candidates (regime_p). Dip test (a state of one comparison alone): "
                   f"Hartigan's dip test of the job log ratios smoothed by uniform noise of the threshold's width, "
                   f"Benjamini-Hochberg over the comparisons tested (regime_dip_p). Flagged when either adjusted p < "
                   f"{settings.alpha:g} (the job-state test for candidates only, the dip test for splits apart by more "
                   "than the threshold); regime_jobs: the smaller cluster's jobs (of an even split, the half more "
                   "often in the other ops' smaller clusters, else the upper); without_minority_*: the comparison "
                   "recomputed without them, its interval at the family's level and the verdict read off it",
        "shared_cpu": "a timing job whose driver waited more than 25% of its time (and >= 0.05 s) for its CPU, another "
                      "program using it, is discarded and run again, or kept with `pqsimd run DIR --shared-cpu keep`, "
                      "or (the default, adapt) kept once the sizing probe and a job's attempt showed the CPUs busy "
                      "(jobs.csv shared_cpu, cpu_waited_fraction); groups and comparisons count the kept jobs they use "
                      "(shared_cpu_jobs) and each comparison that uses any is recomputed without them "
                      "(without_shared_*: the same estimate and interval, the separate design's job-level test again "
                      "over its blocks, at the family's level; summary shared_cpu counts the verdicts that change and "
                      "how far the estimates move: the ratio without / with, its median, range and 5-95%)",
        "drift": "per job, the least-squares slope of 8 block medians of consecutive spins (t test, 6 df: robust "
                 "to the spins' autocorrelation) of what the estimate uses: per-spin log ratios (paired) or log spin "
                 "medians (separate); a comparison's p is the smallest job p times its jobs (Bonferroni), "
                 f"Benjamini-Hochberg over comparisons; flagged when adjusted p < {settings.alpha:g} and a job's "
                 "fitted change exceeds the threshold (drift_jobs); summary drift gives the rate of job tests "
                 f"below {settings.alpha:g} against the {settings.alpha:g} expected without drift",
        "disturbed_jobs": "results/jobs: per job, how far it is off in a quarter of its numbers (the upper "
                          "quartile over its comparisons, or ops in the separate design, of |its log ratio (time) - "
                          "the median over jobs|); disturbed when that exceeds 4 x the median over the scheme's jobs "
                          "and a quarter of the threshold; a timing job too few jobs or comparisons judge has a row "
                          "with units 0 (for its shared_cpu, cpu_waited_fraction)",
        "carryover": "paired design: does the build run just before in the spin change a group's time? "
                     "Kruskal-Wallis of log spin medians across predecessor builds, each (job, position in the spin) "
                     "centred on its own, over the positions >= 1 with two or more predecessors (two builds: "
                     "position 0 alone, after itself or after the other); levels with < 3 spins left out; too few "
                     "levels: predecessors pooled by variant across compilers; Holm over the groups tested; "
                     "carryover = adjusted p < alpha and the worst level's median shifted by more than the "
                     "threshold. Position 0 follows the driver writing the previous spin's results: position0 "
                     "tests first against later positions (job-centred Kruskal-Wallis, Holm, the same rule)",
        "attribution": f"an ablation's Shapley values, shares, leave-one-out, add-one-in and interaction from the "
                       f"comparisons all-C -> cell; each interval with its level (*_ci_level): the Shapley values "
                       f"and shares by a job-level percentile bootstrap at {1 - settings.alpha:.0%} ({settings.n_boot} "
                       f"resamples of the paired jobs, every cell's median recomputed; from 5 jobs on, coverage "
                       f"measured in bench/bench_attribution.py; each end moved out by what the cells' clock "
                       f"resolutions allow), else and for the rest the range over the cells' "
                       f"intervals at 1 - their summed miss probabilities",
        "groups": "iqr, min, max, mad (unscaled) of spin medians; outliers by Tukey fences (1.5 IQR) on log spin "
                  "medians, counted never dropped; icc = one-way random-effects ICC(1) of log spin medians within "
                  "jobs; job_cv = sd/mean of job medians, between_var = var of log job medians, within_sd = sqrt of "
                  "the pooled within-job variance of log spin medians, deff = 1 + (S - 1) max(icc, 0), n_eff = J S "
                  "/ deff (tends to J / icc as S grows); short_jobs = jobs whose median sample lasts fewer than half "
                  "of 1,000 clock steps",
        "resolution": "a sample reads a whole number of clock steps (the step each job's driver measured: the "
                      "largest divisor of the most frequent increment dividing >= 99% of back-to-back deltas), so a "
                      "per-call time lies on a lattice step / calls per sample apart (groups.resolution, the "
                      "largest over the jobs); a group's median interval is widened by it on each side, and every "
                      "timed comparison's interval by the largest change of the log ratio both groups' lattice "
                      "steps allow (comparisons.resolution), with the decision p-value testing the band moved by "
                      "as much; resolution_limited = the widening is more than half the width; spin medians <= 0 "
                      "are kept (rank statistics unchanged, log-scale statistics at half the smallest positive one)",
        "design": design,
    }
