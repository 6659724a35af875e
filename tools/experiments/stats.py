"""tools/experiments/stats.py — the statistics of docs/RESULTS.md, in the
standard library alone (no scipy on the machines that make the page):
Welch's interval and p-value for a difference of means over seeds, the
Pocock boundary of a two-look (two-stage) design, Holm's step-down across a
family of tests, and Fisher's exact test on a 2 × 2 table.

Student's t distribution is computed from the regularised incomplete beta
function (a continued fraction, as in Numerical Recipes' betacf); its
quantiles by bisection. The 95% intervals keep the printed table T975 (3
decimals, the standard one), so the page's intervals do not move with this
module; t_quantile reproduces that table (tests/tools/test_stats.py).
Not here: reading runs (runs.py), what a reading means on the page (report.py).
"""
import math
import statistics

ALPHA = 0.05  # the level of every test of docs/RESULTS.md, and Holm's family-wise one

# Student's t, 97.5% quantile, for 1..30 degrees of freedom (then the normal's).
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
        2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
        2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def normal_cdf(x):
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


def _beta_fraction(a, b, x):
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    c, d = 1.0, 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1 + num * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return h


def incomplete_beta(a, b, x):
    """The regularised incomplete beta function I_x(a, b), 0 <= x <= 1."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(1 - x))
    if x < (a + 1) / (a + b + 2):
        return front * _beta_fraction(a, b, x) / a
    return 1 - front * _beta_fraction(b, a, 1 - x) / b


def t_two_sided_p(t, df):
    """P(|T| >= |t|) for Student's t with df degrees of freedom (df = inf: the normal)."""
    if math.isinf(df):
        return 2 * (1 - normal_cdf(abs(t)))
    return incomplete_beta(df / 2, 0.5, df / (df + t * t))


def t_quantile(q, df):
    """The q quantile (q > 0.5) of Student's t with df degrees of freedom, by bisection."""
    lo, hi = 0.0, 1e4
    for _ in range(200):
        mid = (lo + hi) / 2
        if 1 - t_two_sided_p(mid, df) / 2 < q:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def welch(a, b, alpha=None):
    """Welch's comparison of the means of a and b, or None under two values a side.

    {"diff": mean(a) − mean(b), "df": the Welch–Satterthwaite degrees of freedom
    rounded down (a wider interval; inf from 31 on, where the normal is used),
    "half": the half-width of the 95% interval (T975), or of the 1 − alpha one,
    "p": the two-sided p-value at the same df}.
    """
    if len(a) < 2 or len(b) < 2:
        return None
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    diff = statistics.mean(a) - statistics.mean(b)
    if va + vb == 0:
        return {"diff": diff, "df": math.inf, "half": 0.0, "p": 1.0 if diff == 0 else 0.0}
    df = int((va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1)))
    df = math.inf if df >= 31 else max(df, 1)
    if alpha is None:
        t = 1.960 if math.isinf(df) else T975[df - 1]
    else:
        t = t_quantile(1 - alpha / 2, df)
    se = math.sqrt(va + vb)
    return {"diff": diff, "df": df, "half": t * se, "p": t_two_sided_p(diff / se, df)}


def holm(pvalues, alpha=0.05):
    """Holm's step-down over a family: ([rejected], [adjusted p]) in the order given."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    rejected, adjusted = [False] * m, [1.0] * m
    running, stopped = 0.0, False
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
        stopped = stopped or pvalues[i] > alpha / (m - rank)
        rejected[i] = not stopped
    return rejected, adjusted


def _both_inside(c, rho, steps=2000):
    """P(|Z1| < c, |Z2| < c) for standard normals of correlation rho (Simpson's rule over Z1)."""
    s = math.sqrt(1 - rho * rho)
    h = 2 * c / steps
    total = 0.0
    for k in range(steps + 1):
        z = -c + k * h
        inside = normal_cdf((c - rho * z) / s) - normal_cdf((-c - rho * z) / s)  # P(|Z2| < c | Z1 = z)
        f = math.exp(-z * z / 2) / math.sqrt(2 * math.pi) * inside
        total += f * (1 if k in (0, steps) else 4 if k % 2 else 2)
    return total * h / 3


def pocock(first_fraction, alpha=0.05):
    """Pocock's constant boundary for two looks, the first at `first_fraction` of the final information.

    Returns (c, nominal alpha'): each look rejects where |z| > c, i.e. at the
    two-sided nominal level alpha' = 2(1 − Φ(c)), so that the chance of a
    rejection at either look under the null is alpha. The z statistics of the
    two looks have correlation √first_fraction (normal theory, known variance).
    """
    rho = math.sqrt(first_fraction)
    lo, hi = 1.0, 5.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if 1 - _both_inside(mid, rho) > alpha:
            lo = mid
        else:
            hi = mid
    c = (lo + hi) / 2
    return c, 2 * (1 - normal_cdf(c))


def fisher_exact(table):
    """Two-sided p of Fisher's exact test on [[a, b], [c, d]]: the summed hypergeometric
    probabilities of the tables with the same margins no more likely than the one observed."""
    (a, b), (c, d) = table
    row, col, n = a + b, a + c, a + b + c + d

    def prob(x):
        return math.comb(col, x) * math.comb(n - col, row - x) / math.comb(n, row)

    observed = prob(a)
    return min(1.0, sum(p for p in (prob(x) for x in range(max(0, row + col - n), min(row, col) + 1))
                        if p <= observed * (1 + 1e-9)))
