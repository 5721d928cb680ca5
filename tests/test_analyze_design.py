"""The separate design's statistics of `pqsimd analyze` (stats/pooled.py, moderation.py, power.py)
against scipy, statsmodels, limma reference values and brute force; simulations of its CI coverage
and A/A false verdicts at the level of job medians (fast, vectorised); and analyze_study end to end on
small synthetic studies (J = 2, zero variance, the paired design with machine states). The paired
design's order-statistic intervals, the family level and the diagnostics: test_statistics.py.

The limma values (limma 3.54 squeezeVar / trigammaInverse, R 4.2) are stored below; the test that
regenerates them runs only where R with limma is installed.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings, strategies as st
from scipy import optimize, stats
from synthetic import make_synthetic_study

from pqsimd.analyze import analyze_study
from pqsimd.stats import moderation as md
from pqsimd.stats import pooled as pl
from pqsimd.stats.interval import Evidence, verdict_of
from pqsimd.stats.multiplicity import family_level
from pqsimd.stats.power import mde, mde_se, variance_components

ALPHA, THR = 0.05, 0.02

# limma 3.54: squeezeVar(s2, df) -> var.post, df.prior (d0), var.prior (s0); trigammaInverse(T_x) = T_y
LIMMA_REF = """
A_s2 = [0.0031, 0.0009, 0.0052, 0.00012, 0.0024, 0.0047, 0.0019, 0.0008, 0.0066, 0.0013, 0.0029, 0.00041]
A_post = [0.0025275, 0.0025275, 0.0025275, 0.0025275, 0.0025275, 0.0025275, 0.0025275, 0.0025275, 0.0025275, 0.0025275, 0.0025275, 0.0025275]
A_d0 = Inf
A_s0 = 0.0025275
B_s2 = [0.8, 1.3, 0.5, 2.1, 0.9, 1.1, 0.7, 1.6, 0.95, 1.2]
B_df = [4, 4, 9, 9, 19, 19, 1, 1, 4, 9]
B_post = [1.115, 1.115, 1.115, 1.115, 1.115, 1.115, 1.115, 1.115, 1.115, 1.115]
B_d0 = Inf
B_s0 = 1.115
T_x = [0.01, 0.5, 1, 3, 100]
T_y = [100.499166681943, 2.45995294835231, 1.42625512021508, 0.67547810528137, 0.100723758800053]
E_s2 = [0.000242757830255948, 0.00286039361855522, 0.00282089908255742, 0.000842812325277815, 0.0014044849197645, 0.00398377663330907, 0.00249803942715648, 0.000519446194952892, 8.45653357132235e-06, 0.000427957849372094, 0.00490754657727857, 0.00141485283824144, 0.00213910260237855, 0.000436220862283854, 0.00213301450985804, 0.00123019665841059, 0.00466399044548557, 0.00143876623374477, 0.00115838350163185, 0.00311752006776905, 0.0146935815622656, 0.00315106667811341, 0.0019958343018093, 0.00234501197045065, 0.00374036559683751, 0.0027711458176547, 0.0113154967225976, 0.00230622076962018, 0.00273517566625231, 0.00411698622444468, 0.00250714512624503, 0.00491780786006146, 0.00207261583739683, 0.0121901837299282, 0.00268871825481583, 0.00267711140116508, 0.000164438110502826, 0.000440156625453776, 0.00245709366607784, 0.00542624723626705]
E_df = [1, 3, 8, 19, 1, 3, 8, 19, 1, 3, 8, 19, 1, 3, 8, 19, 1, 3, 8, 19, 1, 3, 8, 19, 1, 3, 8, 19, 1, 3, 8, 19, 1, 3, 8, 19, 1, 3, 8, 19]
E_post = [0.00271038335868728, 0.00279133256624447, 0.00279204764404238, 0.00207598117969979, 0.00274450859426586, 0.00288483600382596, 0.0027291167150662, 0.00195792590591882, 0.0027035008584702, 0.00258887169303585, 0.0031987713182207, 0.0022848230868713, 0.00276608767398758, 0.00258955945500295, 0.00265796704752253, 0.00221740837079273, 0.0028402551727346, 0.00267300511630623, 0.0024679946129658, 0.00290643687721411, 0.00313487011518352, 0.00281552638965471, 0.0026312282531726, 0.00262440778890081, 0.00281312408847997, 0.00278390413260146, 0.00444779159291924, 0.00261024580530119, 0.00278359706488535, 0.00289592354434101, 0.00273089157325314, 0.00356369021413613, 0.00276413465374871, 0.00356788645380552, 0.00276628331535198, 0.0027456514367006, 0.00270808275047115, 0.00258988704352891, 0.00272113567829307, 0.00374931246745828]
E_d0 = 33.0430496614036
E_s0 = 0.00278506246832508
F_s2 = [0.0279602716233636, 0.0149682910402743, 0.0653507386672517, 4.87957427818585e-06, 0.00546261247557114, 0.0122746770442336, 0.000996925617676051, 0.0133002058528607, 0.0406241008291731, 0.14315767543919, 0.00547533746669241, 0.008206588538915, 0.00584266031303583, 0.112840674047827, 0.0136459208489226, 0.0267522092781767, 0.0337601721994785, 0.0700904300131571, 0.00624814283105294, 0.0319181248298002, 0.0574172517547689, 7.96515717342573e-05, 0.235013350975572, 0.00175284704584512, 0.046938737737849, 0.00439462466674713, 0.0333088886782127, 0.019173703205661, 0.00525546414905848, 0.141160336331443, 0.00300273358232519, 0.00228964010274611, 0.0241672472546826, 0.199216648885246, 0.00122242866812558, 0.013047265240879, 0.00213730426680558, 0.042073472768324, 0.000822926101384844, 0.00119815453854595, 0.000790843412147014, 0.024196452819415, 0.0254228489349261, 0.00222929022751817, 0.106118248105585, 0.000476227449783241, 0.0118894714616725, 0.0193045771055974, 0.000589739257872839, 0.0337669654114838, 0.0300574440470217, 0.00115406654525838, 0.00363363575945398, 0.0816397227959654, 0.0162322413726283, 0.0810372011346549, 0.000455791898770955, 0.0179175435220778, 0.00804877362863448, 0.0221211606351992]
F_df = [1, 2, 4, 1, 2, 4, 1, 2, 4, 1, 2, 4, 1, 2, 4, 1, 2, 4, 1, 2, 4, 1, 2, 4, 1, 2, 4, 1, 2, 4, 1, 2, 4, 1, 2, 4, 1, 2, 4, 1, 2, 4, 1, 2, 4, 1, 2, 4, 1, 2, 4, 1, 2, 4, 1, 2, 4, 1, 2, 4]
F_post = [0.0168534472086913, 0.0134462762886349, 0.0455795385557943, 0.00854925517812281, 0.00909228369959984, 0.0122320259924159, 0.00884394397494157, 0.0126822245174287, 0.0300438744401691, 0.0510730124728763, 0.00909811227003386, 0.00967605954743736, 0.0102833768889497, 0.0582758618237938, 0.0130935739032068, 0.0164945904385298, 0.0220537324259609, 0.0485574708264051, 0.0104038260920494, 0.0212099988048797, 0.0405949551787435, 0.00857146631450374, 0.114235983587346, 0.00562119528396667, 0.0224910296394295, 0.00860310126268617, 0.025447751034469, 0.0142433836008472, 0.00899740122778807, 0.0932104560207572, 0.00943977230336005, 0.00763893156882278, 0.0197040882060865, 0.0677254164068007, 0.007150104743295, 0.012717440580577, 0.00918269519951048, 0.0258615667452886, 0.00503692905489724, 0.00890371933413072, 0.00695242090691481, 0.0197224379650372, 0.016099701912238, 0.0076112888384587, 0.0711936288179642, 0.00868926978655763, 0.0120360500184152, 0.0166488887634463, 0.00872298864302932, 0.0220568439970629, 0.0234048792129331, 0.00889062292819016, 0.00825453697659769, 0.0558138529767681, 0.0133696178575801, 0.0437085603495245, 0.00480625985941189, 0.0138702394426391, 0.0102768521044583, 0.0184185388046706]
F_d0 = 2.36641926706165
F_s0 = 0.0121599321713228
"""

LIMMA_SCRIPT = r"""
suppressMessages(library(limma))
cat_vec <- function(name, x) cat(name, "=", paste0("[", paste(sprintf("%.15g", x), collapse=", "), "]"), "\n")
set.seed(1)
# case 1: heterogeneous variances, equal df = 1 (J = 2 blocks)
s2a <- c(0.0031, 0.0009, 0.0052, 0.00012, 0.0024, 0.0047, 0.0019, 0.0008, 0.0066, 0.0013, 0.0029, 0.00041)
r <- squeezeVar(s2a, df=1)
cat_vec("A_s2", s2a); cat_vec("A_post", r$var.post); cat("A_d0 =", sprintf("%.15g", r$df.prior), "\n"); cat("A_s0 =", sprintf("%.15g", r$var.prior), "\n")
# case 2: mixed df
s2b <- c(0.8, 1.3, 0.5, 2.1, 0.9, 1.1, 0.7, 1.6, 0.95, 1.2)
dfb <- c(4, 4, 9, 9, 19, 19, 1, 1, 4, 9)
r <- squeezeVar(s2b, df=dfb)
cat_vec("B_s2", s2b); cat_vec("B_df", dfb); cat_vec("B_post", r$var.post); cat("B_d0 =", sprintf("%.15g", r$df.prior), "\n"); cat("B_s0 =", sprintf("%.15g", r$var.prior), "\n")
# case 3: very homogeneous -> df.prior Inf
s2c <- c(1.0, 1.01, 0.99, 1.005, 0.995, 1.002)
r <- squeezeVar(s2c, df=50)
cat_vec("C_post", r$var.post); cat("C_d0 =", sprintf("%.15g", r$df.prior), "\n"); cat("C_s0 =", sprintf("%.15g", r$var.prior), "\n")
# trigammaInverse
cat_vec("T_x", c(0.01, 0.5, 1, 3, 100)); cat_vec("T_y", trigammaInverse(c(0.01, 0.5, 1, 3, 100)))
# case 4: drawn from the model, finite d0 (df = 1 and mixed)
set.seed(7)
n <- 40; d0 <- 6; s0 <- 0.0025
sig2 <- s0 * d0 / rchisq(n, d0)
s2d <- sig2 * rchisq(n, 1) / 1
r <- squeezeVar(s2d, df=1)
cat_vec("D_s2", s2d); cat_vec("D_post", r$var.post); cat("D_d0 =", sprintf("%.15g", r$df.prior), "\n"); cat("D_s0 =", sprintf("%.15g", r$var.prior), "\n")
dfe <- rep(c(1, 3, 8, 19), 10)
s2e <- sig2 * rchisq(n, dfe) / dfe
r <- squeezeVar(s2e, df=dfe)
cat_vec("E_s2", s2e); cat_vec("E_df", dfe); cat_vec("E_post", r$var.post); cat("E_d0 =", sprintf("%.15g", r$df.prior), "\n"); cat("E_s0 =", sprintf("%.15g", r$var.prior), "\n")
set.seed(11)
n <- 60; sig2 <- 0.01 * 1.5 / rchisq(n, 1.5)
dff <- rep(c(1, 2, 4), 20)
s2f <- sig2 * rchisq(n, dff) / dff
r <- squeezeVar(s2f, df=dff)
cat_vec("F_s2", s2f); cat_vec("F_df", dff); cat_vec("F_post", r$var.post); cat("F_d0 =", sprintf("%.15g", r$df.prior), "\n"); cat("F_s0 =", sprintf("%.15g", r$var.prior), "\n")
"""


# ---------------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------------

def limma_ref(text: str = LIMMA_REF):
    def get(name):
        line = next(x for x in text.splitlines() if x.startswith(f"{name} = "))
        body = line.split(" = ", 1)[1].strip().strip("[]").replace("Inf", "inf")
        return np.array([float(v) for v in body.split(",")], dtype=float)
    return get


def make_block_data(rng, J, O, sd_shared, sd_op, mu=None):
    mu = rng.normal(5, 1, O) if mu is None else mu
    return mu[None, :] + rng.normal(0, sd_shared, (J, 1)) + rng.normal(0, 1, (J, O)) * np.broadcast_to(sd_op, (O,))


def make_tests(**cols) -> pl.JobTests:
    n = len(next(iter(cols.values())))
    base = dict(log_speedup=np.zeros(n), se=np.zeros(n), df=np.zeros(n), t=np.zeros(n), p=np.zeros(n),
                ci_low=np.ones(n), ci_high=np.ones(n), method=np.full(n, "pooled", dtype=object),
                reason=np.full(n, "", dtype=object))
    base.update({k: np.asarray(v, dtype=object if k in ("method", "reason") else float) for k, v in cols.items()})
    return pl.JobTests(**base)


# ---------------------------------------------------------------------------------------------------
# 1. per-job summaries
# ---------------------------------------------------------------------------------------------------

def test_median_se_matches_asymptotic_normal():
    rng = np.random.default_rng(1)
    x = rng.normal(0, 0.03, (2000, 1000))
    se = pl.median_se(x)
    expect = math.sqrt(math.pi / 2) * 0.03 / math.sqrt(1000)
    assert abs(se.mean() / expect - 1) < 0.05
    assert abs(np.median(x, axis=1).std() / se.mean() - 1) < 0.08  # it predicts the spread of sample medians


def test_median_se_quantized_and_small():
    x = np.array([72.0] * 70 + [73.0] * 30)
    assert pl.median_se(x) == 0.0  # the median cannot move
    small = np.array([1.0, 2.0, 3.0])
    assert pl.median_se(small) == pytest.approx(math.sqrt(math.pi / 2) * small.std(ddof=1) / math.sqrt(3))
    assert np.isnan(pl.median_se(np.array([5.0])))


def test_job_summary_and_errors():
    rng = np.random.default_rng(2)
    v = np.exp(rng.normal(3, 0.02, (4, 51)))
    s = pl.job_summary(v)
    assert np.allclose(s.log_median, np.log(np.median(v, axis=1)))
    assert s.within_var.shape == (4,) and np.all(s.within_var > 0) and not s.constant
    flat = pl.job_summary(v.ravel(), np.repeat([10, 11, 12, 13], 51))
    assert np.allclose(flat.log_median, s.log_median)
    u = pl.job_summary(np.r_[v[0], v[1, :20]], np.r_[np.zeros(51), np.ones(20)])
    assert list(u.n_spins) == [51, 20]
    assert pl.job_summary(np.full((2, 10), 72.0)).constant
    with pytest.raises(ValueError):
        pl.job_summary(np.array([[1.0, 0.0]]))
    with pytest.raises(ValueError):
        pl.job_summary(np.array([1.0, 2.0]))


# ---------------------------------------------------------------------------------------------------
# 2. moderation: limma reference values, ML fit, robust screen
# ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case,dfname", [("A", None), ("B", "B_df"), ("E", "E_df"), ("F", "F_df")])
def test_fit_prior_moments_matches_limma(case, dfname):
    get = limma_ref()
    s2 = get(f"{case}_s2")
    df = get(dfname) if dfname else np.ones_like(s2)
    p = md.fit_prior(s2, df, method="moments", robust=False)
    assert p.s2 == pytest.approx(float(get(f"{case}_s0")[0]), rel=1e-10)
    d0 = float(get(f"{case}_d0")[0])
    assert (math.isinf(p.df) and math.isinf(d0)) or p.df == pytest.approx(d0, rel=1e-9)
    post, dfp = md.posterior_var(s2, df, p)
    assert np.allclose(post, get(f"{case}_post"), rtol=1e-10)
    if np.isfinite(d0):
        assert np.allclose(dfp, np.minimum(df + d0, df.sum()))


def test_trigamma_inverse_matches_limma():
    get = limma_ref()
    assert np.allclose(md.trigamma_inverse(get("T_x")), get("T_y"), rtol=1e-12)
    from scipy.special import polygamma
    y = np.array([1e-3, 0.3, 2.0, 50.0, 1e4])
    assert np.allclose(md.trigamma_inverse(polygamma(1, y)), y, rtol=1e-8)


def _limma_available() -> bool:
    if shutil.which("Rscript") is None:
        return False
    return subprocess.run(["Rscript", "-e", "suppressMessages(library(limma))"], capture_output=True).returncode == 0


@pytest.mark.skipif(not _limma_available(), reason="R with limma not installed (reference values are stored)")
def test_limma_reference_values_are_current(tmp_path):
    script = tmp_path / "limma_ref.R"
    script.write_text(LIMMA_SCRIPT)
    out = subprocess.run(["Rscript", str(script)], capture_output=True, text=True, check=True).stdout
    a, b = limma_ref(out), limma_ref()
    for k in ("E_post", "F_post", "E_d0", "F_d0", "T_y"):
        assert np.allclose(a(k), b(k), rtol=1e-12)


def _nm_optimum(s2, df):
    x = md._offset(s2)
    f = lambda p: -md._loglik(x, df, p[0], math.exp(p[1]))  # noqa: E731
    best = min((optimize.minimize(f, [math.log(np.mean(x)), math.log(d)], method="Nelder-Mead",
                                  options=dict(xatol=1e-9, fatol=1e-11, maxiter=8000)) for d in (1.0, 10.0, 1000.0)),
               key=lambda r: r.fun)
    return -best.fun


@pytest.mark.parametrize("seed,n,d,d0", [(1, 15, 1.0, 2.0), (2, 300, 0.95, 4.0), (3, 40, 4.0, 8.0), (4, 60, 2.0, 1.0)])
def test_fit_prior_ml_reaches_the_likelihood_maximum(seed, n, d, d0):
    rng = np.random.default_rng(seed)
    sig = 0.01 * d0 / rng.chisquare(d0, n)
    s2 = sig * rng.chisquare(d, n) / d
    df = np.full(n, d)
    p = md.fit_prior(s2, df, robust=False)
    ll = md._loglik(md._offset(s2), df, math.log(p.s2), p.df)
    assert ll >= _nm_optimum(s2, df) - 1e-3


def test_fit_prior_ml_recovers_d0_and_is_stable_for_equal_variances():
    rng = np.random.default_rng(5)
    sig = 0.02 * 5 / rng.chisquare(5, 4000)
    s2 = sig * rng.chisquare(2, 4000) / 2
    p = md.fit_prior(s2, 2.0, robust=False)
    assert 4.0 < p.df < 6.5 and p.s2 == pytest.approx(0.02, rel=0.1)
    # 15 blocks, 1 df each, equal variances: ML rarely claims strong heterogeneity, moments often do
    small_ml = small_mom = 0
    for _ in range(300):
        s2 = 0.003 * rng.chisquare(1, 15)
        small_ml += md.fit_prior(s2, 1.0, robust=False).df < 3
        small_mom += md.fit_prior(s2, 1.0, robust=False, method="moments").df < 3
    assert small_ml / 300 < 0.10 < 0.20 < small_mom / 300


def test_robust_screen_flags_outliers_without_masking():
    rng = np.random.default_rng(6)
    s2 = 0.0025 * rng.chisquare(1, 15)
    s2[[3, 9]] = [0.24, 0.30]  # two blocks with a job in a 2x machine state
    p = md.fit_prior(s2, 1.0)
    assert p.n_outliers == 2 and p.n == 13
    post, dfp = md.posterior_var(s2, np.ones(15), p)
    assert post[3] == s2[3] and dfp[3] == 1.0  # not shrunk, own df
    assert np.all(post[[0, 1, 2]] < 0.01)
    assert md.fit_prior(s2, 1.0, robust=False).df < min(p.df, 3.0)  # unscreened: the family looks heterogeneous


def test_fit_prior_degenerate_inputs():
    assert md.fit_prior(np.array([0.1]), 1.0).df == 0
    assert md.fit_prior(np.array([np.nan, 0.2, 0.0]), np.array([1.0, 0.0, 1.0])).df == 0
    s, d = md.posterior_var(np.array([0.1, 0.2]), np.array([1.0, 2.0]), md.Prior.none())
    assert np.allclose(s, [0.1, 0.2]) and np.allclose(d, [1, 2])
    with pytest.raises(ValueError):
        md.fit_prior(np.array([0.1, 0.2]), 1.0, method="bogus")


# ---------------------------------------------------------------------------------------------------
# 3. blocks and the pooled test
# ---------------------------------------------------------------------------------------------------

def test_block_components_match_statsmodels_mixedlm():
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(7)
    J, O = 8, 6
    L = make_block_data(rng, J, O, 0.08, 0.02)
    b = pl.block_stats(L)
    df = pd.DataFrame({"y": L.ravel(), "job": np.repeat(np.arange(J), O), "op": np.tile(np.arange(O), J)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = smf.mixedlm("y ~ C(op)", df, groups=df["job"]).fit(reml=True)
    sigma2_b, sigma2 = float(fit.cov_re.iloc[0, 0]), float(fit.scale)
    ms_res = float(np.nanmean(b.s2_res))
    assert ms_res == pytest.approx(sigma2, rel=1e-4)
    assert b.s2_shared - ms_res / O == pytest.approx(sigma2_b, rel=1e-3)
    # Var of one job's log median = sigma_b^2 + sigma^2; its root over J is statsmodels' SE of the intercept
    a, _, c, _, _ = pl._group_var(b, None)
    tau2 = float(np.mean(a + c))
    assert tau2 == pytest.approx(sigma2_b + sigma2, rel=1e-3)
    assert math.sqrt(tau2 / J) == pytest.approx(float(fit.bse["Intercept"]), rel=1e-3)


def test_pooled_without_priors_and_one_op_is_welch():
    rng = np.random.default_rng(8)
    for jb, jv in ((2, 2), (3, 7), (10, 10)):
        xb, xv = rng.normal(0.3, 0.05, jb), rng.normal(0.0, 0.09, jv)
        t = pl.pooled_test(pl.block_stats(xb[:, None]), pl.block_stats(xv[:, None]), None, min_df=0)
        ref = stats.ttest_ind(xb, xv, equal_var=False)
        assert t.p[0] == pytest.approx(ref.pvalue, rel=1e-10)
        ci = ref.confidence_interval(0.95)
        assert np.log(t.ci_low[0]) == pytest.approx(ci.low, rel=1e-9)
        assert np.log(t.ci_high[0]) == pytest.approx(ci.high, rel=1e-9)
        j = pl.job_test(np.exp(xb), np.exp(xv))
        assert j.p[0] == pytest.approx(ref.pvalue, rel=1e-10) or jb == 2  # job_test keeps df >= 1
        assert t.method[0] == "welch"


def test_pooled_hand_computed_example():
    """Two blocks, known priors: se and df by hand."""
    rng = np.random.default_rng(9)
    Lb, Lv = make_block_data(rng, 2, 5, 0.05, 0.01), make_block_data(rng, 2, 5, 0.05, 0.01)
    bb, bv = pl.block_stats(Lb), pl.block_stats(Lv)
    ps = md.Prior(s2=0.003, df=10.0, df_total=14.0, n=14)
    pr = md.Prior(s2=1e-4, df=math.inf, df_total=200.0, n=140)
    t = pl.pooled_test(bb, bv, pl.Priors(ps, pr), max_op_share=1.0)
    a_b, a_v = (10 * 0.003 + bb.s2_shared) / 11, (10 * 0.003 + bv.s2_shared) / 11
    c = (1 - 1 / 5) * 1e-4
    se2 = (a_b + c) / 2 + (a_v + c) / 2
    df = se2**2 / ((a_b / 2 + a_v / 2) ** 2 / 11 + c**2 / 200)
    assert np.allclose(t.se, math.sqrt(se2)) and np.allclose(t.df, df)
    assert np.allclose(t.log_speedup, Lb.mean(0) - Lv.mean(0))
    assert np.allclose(t.p, 2 * stats.t.sf(np.abs(t.log_speedup) / math.sqrt(se2), df))
    assert np.allclose(t.var_base, a_b + c) and np.allclose(t.var_var, a_v + c)


def test_block_take_keeps_the_whole_blocks_components():
    rng = np.random.default_rng(30)
    blocks = [pl.block_stats(make_block_data(rng, 3, 8, 0.05, 0.01)) for _ in range(6)]
    pri = pl.fit_priors(blocks)
    full = pl.pooled_test(blocks[0], blocks[1], pri)
    cols = [1, 4, 6]
    part = pl.pooled_test(blocks[0].take(cols), blocks[1].take(cols), pri)
    for f in ("log_speedup", "se", "df", "p", "ci_low", "ci_high"):
        assert np.allclose(getattr(part, f), getattr(full, f)[cols], equal_nan=True), f


@settings(max_examples=40, deadline=None, database=None)
@given(seed=st.integers(0, 10_000), shift=st.floats(-3, 3), J=st.integers(2, 6))
def test_pooled_is_equivariant(seed, shift, J):
    rng = np.random.default_rng(seed)
    blocks = [pl.block_stats(make_block_data(rng, J, 6, 0.05, 0.01)) for _ in range(6)]
    pri = pl.fit_priors(blocks)
    t = pl.pooled_test(blocks[0], blocks[1], pri, max_op_share=1.0, min_df=0)
    moved = pl.block_stats(blocks[0].log_med + shift)
    t2 = pl.pooled_test(moved, blocks[1], pri, max_op_share=1.0, min_df=0)
    assert np.allclose(t2.log_speedup, t.log_speedup + shift)
    assert np.allclose(t2.se, t.se) and np.allclose(t2.df, t.df)
    sw = pl.pooled_test(blocks[1], blocks[0], pri, max_op_share=1.0, min_df=0)
    assert np.allclose(sw.log_speedup, -t.log_speedup) and np.allclose(sw.p, t.p)
    assert np.allclose(sw.ci_low, 1 / t.ci_high)


def test_refusal_rules():
    rng = np.random.default_rng(10)
    # R3: J = 2, job effects not shared, op sensitivities differ -> withheld, with the reason
    sd_op = rng.uniform(0.01, 0.1, 20)
    blocks = [pl.block_stats(make_block_data(rng, 2, 20, 0.0, sd_op)) for _ in range(15)]
    t = pl.pooled_test(blocks[0], blocks[1], pl.fit_priors(blocks))
    assert np.all(t.method == "refuse") and all("op-specific" in r for r in t.reason) and np.all(np.isnan(t.p))
    # J = 2, shared job effects dominate -> pooled verdicts possible
    blocks = [pl.block_stats(make_block_data(rng, 2, 20, 0.05, 0.003)) for _ in range(15)]
    t = pl.pooled_test(blocks[0], blocks[1], pl.fit_priors(blocks))
    assert (t.method == "pooled").mean() > 0.9
    # same data, no priors: 1 df per block -> df < 4 -> withheld (R2)
    t = pl.pooled_test(blocks[0], blocks[1], None)
    assert np.all(t.method == "refuse") and "effective df" in t.reason[0]
    # R1: one job
    one = pl.block_stats(make_block_data(rng, 1, 20, 0.05, 0.003))
    t = pl.pooled_test(one, blocks[1], pl.fit_priors(blocks))
    assert np.all(t.method == "refuse") and "fewer than 2 jobs" in t.reason[0]
    assert set(verdicts(t)) == {"withheld"}
    five = [pl.block_stats(make_block_data(rng, 5, 20, 0.05, 0.01)) for _ in range(6)]
    ok = pl.pooled_test(five[0], five[1], pl.fit_priors(five))
    assert np.all(ok.method == "pooled") and "withheld" not in set(verdicts(ok))
    with pytest.raises(ValueError):
        pl.pooled_test(blocks[0], pl.block_stats(make_block_data(rng, 2, 5, 0.05, 0.01)))
    with pytest.raises(ValueError):
        pl.block_stats(np.array([[1.0, np.nan]]))


def test_outlying_block_is_withheld_at_J2():
    rng = np.random.default_rng(11)
    Ls = [make_block_data(rng, 2, 20, 0.03, 0.003) for _ in range(15)]
    Ls[0][1] += math.log(2)  # job 1 of block 0 ran in a 2x machine state
    blocks = [pl.block_stats(L) for L in Ls]
    pri = pl.fit_priors(blocks)
    assert pri.shared.n_outliers >= 1
    t = pl.pooled_test(blocks[0], blocks[1], pri)
    assert np.all(t.method == "refuse") and "effective df" in t.reason[0]
    assert np.all(pl.pooled_test(blocks[2], blocks[3], pri).method == "pooled")


# ---------------------------------------------------------------------------------------------------
# zero variance
# ---------------------------------------------------------------------------------------------------

def test_constant_groups_get_exact_verdicts():
    b, v = pl.job_summary(np.full((2, 1000), 72.0)), pl.job_summary(np.full((2, 1000), 36.0))
    t = pl.job_test(b, v)
    assert t.method[0] == "exact" and t.speedup[0] == 2.0 and t.ci_low[0] == t.ci_high[0] == 2.0
    assert np.isnan(t.p[0])
    assert verdicts(t)[0] == "faster"
    assert verdicts(pl.job_test(v, b))[0] == "slower"
    assert verdicts(pl.job_test(b, pl.job_summary(np.full((3, 10), 72.0))))[0] == "same"
    close = pl.job_test(b, pl.job_summary(np.full((2, 10), 71.0)))  # 1.4% apart, threshold 2%
    assert verdicts(close, threshold=0.02)[0] == "same"
    # with a timer resolution of 1 tick the ratio could be up to 72.5/70.5 = 2.8%
    res = pl.job_test(b, pl.job_summary(np.full((2, 10), 71.0)), resolution=1.0)
    assert res.ci_high[0] == pytest.approx(72.5 / 70.5)
    assert pl.job_test(pl.job_summary(np.full((1, 5), 72.0)), pl.job_summary(np.full((1, 5), 36.0))).method[0] == "exact"
    # exact rows are not part of the Holm family
    mixed = pl.JobTests(*[np.concatenate([getattr(t, f), getattr(t, f)]) for f in
                          ("log_speedup", "se", "df", "t", "p", "ci_low", "ci_high", "method", "reason")])
    assert list(verdicts(mixed)) == ["faster", "faster"]


def test_one_constant_group_uses_the_other():
    rng = np.random.default_rng(12)
    b = pl.job_summary(np.full((4, 100), 72.0))
    v = pl.job_summary(np.exp(np.log(36) + rng.normal(0, 0.02, (5, 1)) + rng.normal(0, 0.01, (5, 100))))
    t = pl.job_test(b, v)
    assert t.method[0] == "welch"
    assert t.se[0] == pytest.approx(v.log_median.std(ddof=1) / math.sqrt(5)) and t.df[0] == pytest.approx(4.0)
    assert verdicts(t)[0] == "faster"


def test_constant_job_medians_with_spread_within_jobs_use_the_floor():
    rng = np.random.default_rng(13)

    def grp(v0):  # every job's median is exactly v0 but the spins spread around it
        return np.stack([rng.permutation(v0 + np.linspace(-2, 2, 101)) for _ in range(3)])
    b, v = pl.job_summary(grp(72.0)), pl.job_summary(grp(36.0))
    assert np.all(np.exp(b.log_median) == 72.0) and not b.constant
    t = pl.job_test(b, v)
    assert t.method[0] == "welch" and t.se[0] > 0 and np.isfinite(t.p[0])
    assert t.se[0] == pytest.approx(math.sqrt(b.within_var.mean() / 3 + v.within_var.mean() / 3))
    assert verdicts(t)[0] == "faster"

    def pinned(v0):  # job medians identical and pinned by quantized spins (median se 0)
        x = np.full((3, 101), v0)
        x[:, :30] += rng.integers(1, 3, (3, 30))
        x[:, 30:60] -= rng.integers(1, 3, (3, 30))
        return x
    pb, pv = pl.job_summary(pinned(72.0)), pl.job_summary(pinned(36.0))
    assert np.all(pb.within_var == 0) and not pb.constant
    e = pl.job_test(pb, pv)
    assert e.method[0] == "exact" and "pinned" in e.reason[0] and e.speedup[0] == pytest.approx(2.0)
    assert verdicts(e)[0] == "faster"
    w = pl.job_test(np.array([72.0, 72.0]), np.array([36.0, 36.0]))  # no within-job information at all
    assert w.method[0] == "refuse" and "no spread" in w.reason[0]


# ---------------------------------------------------------------------------------------------------
# 5. variance components and MDE
# ---------------------------------------------------------------------------------------------------

def test_variance_components_against_mixedlm_and_anova():
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(15)
    J, S = 8, 40
    v = np.exp(4 + rng.normal(0, 0.05, (J, 1)) + rng.normal(0, 0.03, (J, S)))
    vc = variance_components(v)
    df = pd.DataFrame({"y": np.log(v).ravel(), "g": np.repeat(np.arange(J), S)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = smf.mixedlm("y ~ 1", df, groups=df["g"]).fit(reml=True)
    s2b, s2w = float(fit.cov_re.iloc[0, 0]), float(fit.scale)
    assert vc.sigma2_between == pytest.approx(s2b, rel=1e-3)
    assert vc.within_sd == pytest.approx(math.sqrt(s2w), rel=1e-4)
    assert vc.icc == pytest.approx(s2b / (s2b + s2w), rel=1e-3)
    F = stats.f_oneway(*np.log(v)).statistic
    assert vc.icc == pytest.approx((F - 1) / (F + S - 1), rel=1e-9)
    assert vc.deff == pytest.approx(1 + (S - 1) * vc.icc) and vc.n_eff == pytest.approx(J * S / vc.deff)
    jm = np.median(v, axis=1)
    assert vc.job_cv == pytest.approx(jm.std(ddof=1) / jm.mean())
    assert vc.between_var == pytest.approx(np.log(jm).var(ddof=1))


def test_variance_components_unbalanced_and_failures():
    rng = np.random.default_rng(16)
    job = np.repeat(np.arange(4), [10, 30, 25, 7])
    y = rng.normal(0, 0.04, 4)[job] + rng.normal(0, 0.02, job.size)
    vc = variance_components(np.exp(y), job)
    groups = [y[job == j] for j in range(4)]  # brute-force n0-corrected ANOVA ICC(1)
    n, k = y.size, 4
    msb = sum(len(g) * (g.mean() - y.mean()) ** 2 for g in groups) / (k - 1)
    msw = sum(((g - g.mean()) ** 2).sum() for g in groups) / (n - k)
    n0 = (n - sum(len(g) ** 2 for g in groups) / n) / (k - 1)
    assert vc.icc == pytest.approx((msb - msw) / (msb + (n0 - 1) * msw))
    one = variance_components(np.exp(rng.normal(0, 0.01, (1, 20))))
    assert np.isnan(one.icc) and np.isnan(one.job_cv) and np.isnan(one.deff)
    with pytest.raises(ValueError):
        variance_components(np.array([[1.0, -1.0]]))


def test_mde_power_is_nominal_analytically_and_by_simulation():
    rng = np.random.default_rng(17)
    for jb, jv, sd, m, thr in ((5, 5, 0.05, 1, 0.0), (10, 10, 0.02, 180, 0.02), (4, 8, 0.03, 20, 0.0)):
        r = mde(sd**2, jb, sd**2, jv, m=m, threshold=thr)
        assert r > 1
        n = 6000
        res = stats.ttest_ind(rng.normal(math.log(r), sd, (n, jb)), rng.normal(0, sd, (n, jv)), axis=1, equal_var=False)
        hit = res.pvalue < 0.05 / m
        if thr > 0:
            hit &= res.confidence_interval(0.95).low > math.log1p(thr)
        assert abs(hit.mean() - 0.8) < 0.035, (jb, jv, sd, m, thr, hit.mean())


def test_mde_se_power_is_the_noncentral_t():
    """At mde_se's answer the two-sided t test of that se and df has power 0.8 (threshold 0):
    scipy's noncentral t as the oracle."""
    for se, df, m in ((0.02, 9.0, 1), (0.05, 4.0, 20), (0.01, 30.0, 180)):
        d = math.log(mde_se(se, df, m=m))
        c = stats.t.ppf(1 - 0.05 / (2 * m), df)
        lower = np.nan_to_num(stats.nct.cdf(-c, df, d / se))  # ~0: scipy gives nan far in the tail
        assert stats.nct.sf(c, df, d / se) + lower == pytest.approx(0.8, abs=2e-3)


def test_mde_monotone_fixed_se_and_failures():
    base = mde(0.05**2, 5)
    assert mde(0.05**2, 5, m=60) > base > mde(0.05**2, 10) > 1
    assert mde(0.05**2, 5, threshold=0.02) > base
    assert mde(0.05**2, 2, df=28) < mde(0.05**2, 2)  # pooled df help J = 2
    # mde_se is mde of a fixed-df test given its se
    se = math.sqrt(0.05**2 / 5 + 0.03**2 / 7)
    assert mde_se(se, 12.0, m=30, threshold=0.02) == pytest.approx(mde(0.05**2, 5, 0.03**2, 7, df=12.0, m=30,
                                                                       threshold=0.02), rel=1e-9)
    assert math.isinf(mde(0.05**2, 2, m=180))  # J = 2 Welch with Holm over 180: nothing detectable
    with pytest.raises(ValueError):
        mde(0.05**2, 1)
    with pytest.raises(ValueError):
        mde(0.0, 5)
    with pytest.raises(ValueError):
        mde_se(0.0, 5.0)


# ---------------------------------------------------------------------------------------------------
# 8. simulations at the level of job medians (one study = one machine)
# ---------------------------------------------------------------------------------------------------
# 3 schemes x 5 variants (a chain of 4 and an exact copy of the third, for A/A) x 20 ops; every
# (scheme, variant) is a block of J jobs that each ran all 20 ops. Log job median = true op time + a job
# effect shared by the job's ops, N(0, sb^2) with sb ~ U(0.01, 0.1) per machine (x logU(0.8, 1.25) per
# block), plus a 2x machine state with probability p_state per job + an op-specific job effect
# N(0, U(0.002, 0.01)^2) + the median's sampling noise, N(0, (pi/2) sw^2 / S), sw ~ U(0.02, 0.05) *
# sqrt(20/R) per (block, op); that sampling variance is the within-job variance the test is given.

NS, NV, NO = 3, 5, 20
STAGES = ((0, 1), (1, 2), (2, 3))
AA = (2, 4)


def simulate_study(rng, J, S, R, p_state):
    nb = NS * NV
    ref = rng.uniform(math.log(50), math.log(2e5), (NS, NO))
    fc = rng.uniform(0, math.log(4), (NS, NO))
    fa = np.where(rng.random((NS, NO)) < 0.4, 0.0, rng.uniform(math.log(0.9), math.log(1.3), (NS, NO)))
    fh = np.where(rng.random((NS, NO)) < 0.2, 0.0, rng.uniform(0, math.log(40), (NS, NO)))
    mu = np.stack([ref + fa + fc, ref + fa, ref, ref - fh, ref], axis=1).reshape(nb, NO)
    w = (math.pi / 2) * (rng.uniform(0.02, 0.05, (nb, NO)) * math.sqrt(20 / R)) ** 2 / S
    sb = rng.uniform(0.01, 0.1) * np.exp(rng.uniform(math.log(0.8), math.log(1.25), nb))
    u = rng.normal(0, 1, (nb, J)) * sb[:, None] + math.log(2) * (rng.random((nb, J)) < p_state)
    si = rng.uniform(0.002, 0.01, (nb, NO))
    L = mu[:, None, :] + u[:, :, None] + rng.normal(0, 1, (nb, J, NO)) * np.sqrt(si[:, None, :] ** 2 + w[:, None, :])
    blocks = [pl.block_stats(L[k], np.broadcast_to(w[k], (J, NO))) for k in range(nb)]
    return blocks, pl.fit_priors(blocks), mu


def run_pairs(blocks, priors, pairs):
    """The pooled test of each (base block, variant block) pair, concatenated into one JobTests."""
    ts = [pl.pooled_test(blocks[b], blocks[v], priors) for b, v in pairs]
    return pl.JobTests(*[np.concatenate([getattr(t, f) for t in ts]) for f in
                         ("log_speedup", "se", "df", "t", "p", "ci_low", "ci_high", "method", "reason")])


def coverage(seed, J, S, R, p_state, n_studies=400):
    rng = np.random.default_rng(seed)
    pairs = [(s * NV + b, s * NV + v) for s in range(NS) for b, v in (*STAGES, AA)]
    hits = n = refused = 0
    for _ in range(n_studies):
        blocks, pri, mu = simulate_study(rng, J, S, R, p_state)
        t = run_pairs(blocks, pri, pairs)
        truth = np.exp(np.concatenate([mu[b] - mu[v] for b, v in pairs]))
        live = t.method == "pooled"
        hits += int(((t.ci_low <= truth) & (truth <= t.ci_high))[live].sum())
        n += int(live.sum())
        refused += int((~live).sum())
    return hits / n, refused / (n + refused)


def verdicts(t: pl.JobTests, alpha: float = ALPHA, threshold: float = THR) -> np.ndarray:
    """The study's rule: Evidence per test, the FCR family level, the verdict read off each interval."""
    evs = [Evidence.exact(float(t.log_speedup[i])) if t.method[i] == "exact" else
           Evidence.refuse(str(t.reason[i])) if t.method[i] == "refuse" else
           Evidence.t(float(t.log_speedup[i]), float(t.se[i]), float(t.df[i])) for i in range(len(t))]
    band = math.log1p(threshold)
    fam = family_level(np.array([e.decision_p(band)[0] if e.in_family else np.nan for e in evs]), alpha)
    out = []
    for e in evs:
        iv = e.interval(fam.gamma)
        out.append("withheld" if e.kind == "refuse" else verdict_of(iv.lo, iv.hi, band))
    return np.array(out, dtype=object)


def aa_false_rate(seed, J, S, R, n_studies=300, p_state=0.05):
    """Share of studies with any faster/slower verdict among their A/A comparisons (FCR over them)."""
    rng = np.random.default_rng(seed)
    pairs = [(s * NV + AA[0], s * NV + AA[1]) for s in range(NS)]
    bad = withheld = 0
    for _ in range(n_studies):
        blocks, pri, _ = simulate_study(rng, J, S, R, p_state)
        v = verdicts(run_pairs(blocks, pri, pairs))
        bad += bool(np.isin(v, ["faster", "slower"]).any())
        withheld += int((v == "withheld").sum())
    return bad / n_studies, withheld / (n_studies * NS * NO)


@pytest.mark.parametrize("J,p_state", [(5, 0.05), (10, 0.0)])
def test_pooled_ci_coverage_is_nominal_at_J5_and_J10(J, p_state):
    cov, refused = coverage(100 + J, J, 200, 20, p_state)
    # 400 studies x 240 comparisons; CIs of one study share its priors, so the Monte Carlo SE is ~0.3%
    assert 0.92 <= cov <= 0.98, cov
    assert refused < 0.05, refused


@pytest.mark.parametrize("design,J,S,R", [("quick", 2, 50, 10), ("standard", 10, 200, 20), ("paper", 2, 1000, 20)])
def test_aa_false_verdicts_per_study_at_most_5_percent(design, J, S, R):
    rate, withheld = aa_false_rate(200 + J + S, J, S, R)
    assert rate <= 0.05, (design, rate, withheld)



# ---------------------------------------------------------------------------------------------------
# 9. analyze_study end to end
# ---------------------------------------------------------------------------------------------------

CHAIN = ("refo0", "refnv", "ref", "avx2")
MEDIANS = {"refo0": 20000.0, "refnv": 6000.0, "ref": 5000.0, "avx2": 200.0,
           ("ref", "gen_a"): 5000.0, ("avx2", "gen_a"): 1200.0}
FAST = {"n_boot": 300, "seed": 3}


def rewrite(path: Path, fn) -> None:
    """Apply fn(DataFrame) -> DataFrame to one raw file, keeping its schema and metadata."""
    t = pq.read_table(path)
    out = pa.Table.from_pandas(fn(t.to_pandas()), schema=t.schema.remove_metadata(), preserve_index=False)
    pq.write_table(out.replace_schema_metadata(t.schema.metadata), path)


def results(d: Path) -> tuple[pd.DataFrame, dict]:
    analyze_study(d)
    return pd.read_parquet(d / "results" / "comparisons.parquet"), json.loads((d / "results" / "summary.json").read_text())


def test_zero_variance_groups_get_exact_verdicts_end_to_end(tmp_path):
    """Every spin median identical (no noise at all): 72 vs 36 ticks is faster; the exact ratio's
    interval is as wide as the clock's lattice allows (a 1-tick step on 36 and 72 ticks, issue 27),
    so 72 vs 72 is what that interval says (not a zero-width 'same')."""
    d = make_synthetic_study(tmp_path / "z", variants=("ref", "avx2"), ops=("ntt", "invntt"), jobs=2, spins=20, reps=3,
                             medians={("ref", "ntt"): 72.0, ("avx2", "ntt"): 36.0, "ref": 72.0, "avx2": 72.0},
                             spin_sigma=0.0, rep_sigma=0.0, outlier_rate=0.0, analysis=FAST)
    c, s = results(d)
    c = c.set_index("op")
    assert c.loc["ntt", "method"] == c.loc["invntt", "method"] == "exact"
    from pqsimd.stats.interval import resolution_halfwidth, verdict_of

    h_ntt, h_inv = resolution_halfwidth(1 / 72, 1 / 36), resolution_halfwidth(1 / 72, 1 / 72)
    assert c.loc["ntt", "verdict"] == "faster" and c.loc["ntt", "speedup"] == 2.0
    assert (c.loc["ntt", "ci_low"], c.loc["ntt", "ci_high"]) == pytest.approx((2 * np.exp(-h_ntt), 2 * np.exp(h_ntt)))
    assert c.loc["invntt", "speedup"] == 1.0 and "clock's resolution" in c.loc["invntt", "reason"]
    assert c.loc["invntt", "verdict"] == verdict_of(-h_inv, h_inv, np.log(1.02))
    assert not c["deterministic"].any()  # ticks are not an exact metric: the test is exact, the group is not
    assert s["family"]["m"] == 0


def test_j2_study_gives_verdicts_and_withholds_an_outlying_block(tmp_path):
    d = make_synthetic_study(tmp_path / "j2", schemes=("ml-kem-512", "ml-kem-768"), variants=CHAIN,
                             ops=("ntt", "gen_a", "kem_decaps"), jobs=2, spins=40, reps=5, medians=MEDIANS,
                             job_sigma=0.02, seed=1, analysis=FAST)
    c, s = results(d)
    big = c[c["speedup"] > 3]
    assert len(big) and (big["verdict"] == "faster").all() and (big["method"] == "t").all()
    assert (c["ci_low"] <= c["speedup"]).all() and (c["speedup"] <= c["ci_high"]).all()
    assert c["mde"].notna().all() and (c["mde"] > 1).all()
    assert not any("withheld" in w for w in s["warnings"])
    assert s["aa_check"]["ran"] is False and "a half holds < 2 jobs" in s["aa_check"]["note"]
    # one job of one block in a 2x machine state: that block keeps its own 1 df, its comparisons are withheld
    rewrite(d / "raw" / "ref.ml-kem-768.1.parquet", lambda df: df.assign(per_call=df["per_call"] * 2.0))
    c, s = results(d)
    hit = (c["scheme"] == "ml-kem-768") & ((c["baseline"] == "ref") | (c["variant"] == "ref"))
    assert (c.loc[hit, "verdict"] == "withheld").all() and (c.loc[hit, "method"] == "refuse").all()
    assert c.loc[hit, "reason"].str.contains("effective df").all() and c.loc[hit, "p_decision"].isna().all()
    assert (c.loc[~hit & (c["speedup"] > 3), "verdict"] == "faster").all()
    warn = [w for w in s["warnings"] if "withheld" in w]
    assert len(warn) == 1 and warn[0].startswith(f"{int(hit.sum())} of {len(c)} comparisons withheld")
    assert s["family"]["m"] == int((~hit).sum())


def test_j2_with_job_effects_not_shared_by_the_ops_is_withheld(tmp_path):
    """J = 2 and each op of a job has its own job effect (R3): no pooled verdict can be trusted."""
    def own_effect(rng, j, n, variant, op):
        return np.full(n, rng.normal(0.0, 0.05))
    d = make_synthetic_study(tmp_path / "r3", variants=CHAIN, ops=tuple(f"op{i}" for i in range(8)), jobs=2, spins=30,
                             reps=3, medians=MEDIANS, job_sigma=0.0, state=own_effect, seed=4, analysis=FAST)
    c, s = results(d)
    assert (c["verdict"] == "withheld").mean() > 0.9
    assert c.loc[c["verdict"] == "withheld", "reason"].str.contains("op-specific").all()
    assert any("comparisons withheld" in w for w in s["warnings"])


def test_paired_study_with_machine_states_flags_regimes(tmp_path):
    """Paired design, 8 jobs: in the even jobs a state slows the baseline 2x and the variant 2x27/37, so
    the per-spin ratio is 27 in half the jobs and 37 in the other half."""
    def two_states(rng, j, n, variant, op):
        slow = {"ref": math.log(2.0), "avx2": math.log(2.0 * 27 / 37)}
        return np.full(n, slow[variant] if j % 2 == 0 else 0.0)
    kw = dict(variants=("ref", "avx2"), ops=("ntt", "invntt"), jobs=8, spins=40, reps=3, design="paired",
              medians={"ref": 2700.0, "avx2": 100.0}, analysis=FAST, seed=6)
    c, s = results(make_synthetic_study(tmp_path / "states", state=two_states, **kw))
    assert (c["design"] == "paired").all() and (c["method"] == "sign").all()
    assert c["regimes"].all() and c["note"].str.contains("regimes:").all()
    for note in c["note"]:
        lo, hi = sorted(float(x) for x in re.findall(r"at ([0-9.]+)x", note))
        assert lo == pytest.approx(27, rel=0.03) and hi == pytest.approx(37, rel=0.03)
    assert any(w.startswith("regimes:") for w in s["warnings"])
    c, s = results(make_synthetic_study(tmp_path / "calm", **kw))
    assert not c["regimes"].any() and not any(w.startswith("regimes:") for w in s["warnings"])
    assert (c["verdict"] == "faster").all() and (c["ci_low"] > 20).all()
