"""tests/tools/test_stats.py — tools/experiments/stats.py against values worked
by hand or from published tables: Fisher's exact test on two 2 × 2 tables,
Holm's step-down on four p-values, Pocock's two-look constant (2.178 for
equally spaced looks, Pocock 1977), Student's t quantiles (the printed table)
and p-values, and Welch's intervals of tests/tools/test_cli.sh unchanged.
Run: python3 -m unittest discover -s tests/tools -p 'test_*.py'
Not here: report.py's tables (test_report.py, test_cli.sh).
"""
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "tools", "experiments"))
import stats  # noqa: E402


class Fisher(unittest.TestCase):
    def test_five_of_five_against_one_of_five(self):
        # Margins: rows 5 and 5, first column 6, n 10. Tables with x = 1..5 in the
        # first cell have probabilities C(6,x)C(4,5−x)/C(10,5) = 6, 60, 120, 60, 6 over 252;
        # the observed x = 5 (6/252) and the as-likely x = 1: p = 12/252 = 0.0476.
        self.assertAlmostEqual(stats.fisher_exact([[5, 0], [1, 4]]), 12 / 252, places=12)
        self.assertEqual(round(stats.fisher_exact([[5, 0], [1, 4]]), 4), 0.0476)

    def test_five_of_five_against_none_of_three(self):
        # Rows 5 and 3, first column 5, n 8: x = 2..5 with 10, 30, 15, 1 over C(8,5) = 56;
        # only the observed x = 5 is as unlikely: p = 1/56 = 0.0179.
        self.assertAlmostEqual(stats.fisher_exact([[5, 0], [0, 3]]), 1 / 56, places=12)
        self.assertEqual(round(stats.fisher_exact([[5, 0], [0, 3]]), 4), 0.0179)

    def test_no_difference_is_p_one(self):
        self.assertAlmostEqual(stats.fisher_exact([[2, 2], [2, 2]]), 1.0)


class Holm(unittest.TestCase):
    def test_four_p_values(self):
        # Sorted 0.005, 0.01, 0.03, 0.04 against 0.05/4, 0.05/3, 0.05/2, 0.05/1:
        # 0.005 <= 0.0125 and 0.01 <= 0.0167 are rejected, 0.03 > 0.025 stops it.
        rejected, adjusted = stats.holm([0.01, 0.04, 0.03, 0.005], 0.05)
        self.assertEqual(rejected, [True, False, False, True])
        # Adjusted: 4 × 0.005, 3 × 0.01, 2 × 0.03, max(0.06, 1 × 0.04).
        for got, want in zip(adjusted, [0.03, 0.06, 0.06, 0.02]):
            self.assertAlmostEqual(got, want, places=12)

    def test_a_stop_keeps_later_small_ones_unrejected(self):
        rejected, _ = stats.holm([0.02, 0.02], 0.05)  # 0.02 <= 0.025, then 0.02 <= 0.05
        self.assertEqual(rejected, [True, True])
        rejected, _ = stats.holm([0.03, 0.04], 0.05)  # 0.03 > 0.025 stops before 0.04 <= 0.05
        self.assertEqual(rejected, [False, False])


class Pocock(unittest.TestCase):
    def test_two_equally_spaced_looks(self):
        c, nominal = stats.pocock(0.5, 0.05)
        self.assertEqual(round(c, 3), 2.178)  # Pocock (1977), K = 2, alpha 0.05 two-sided
        self.assertEqual(round(nominal, 4), 0.0294)

    def test_looks_at_three_and_five_seeds(self):
        # A first look at 3/5 of the information: its z is more correlated with the
        # final one (√0.6 against √0.5), so the boundary is a little lower.
        c, nominal = stats.pocock(0.6, 0.05)
        c_half, _ = stats.pocock(0.5, 0.05)
        self.assertLess(c, c_half)
        self.assertGreater(c, 1.96)
        self.assertAlmostEqual(nominal, 2 * (1 - stats.normal_cdf(c)), places=12)

    def test_one_look_is_the_plain_level(self):
        c, nominal = stats.pocock(0.999999, 0.05)  # two looks at the same data
        self.assertAlmostEqual(c, 1.95996, places=2)


class StudentT(unittest.TestCase):
    def test_quantiles_reproduce_the_printed_table(self):
        for df, printed in enumerate(stats.T975, 1):
            self.assertEqual(round(stats.t_quantile(0.975, df), 3), printed, df)

    def test_p_values(self):
        self.assertAlmostEqual(stats.t_two_sided_p(2.776445, 4), 0.05, places=5)
        self.assertAlmostEqual(stats.t_two_sided_p(1.0, 1), 0.5, places=12)  # Cauchy: P(|T| > 1) = 1/2
        self.assertAlmostEqual(stats.t_two_sided_p(1.959964, math.inf), 0.05, places=6)


class Welch(unittest.TestCase):
    # The made-up perplexities of tests/tools/test_cli.sh and their printed intervals.
    def check(self, a, b, diff, lo, hi):
        w = stats.welch(a, b)
        self.assertEqual(f"{w['diff']:+.2f}", diff)
        self.assertEqual((f"{w['diff'] - w['half']:+.2f}", f"{w['diff'] + w['half']:+.2f}"), (lo, hi))

    def test_intervals_unchanged(self):
        self.check([100, 101, 102], [110, 111, 112], "-10.00", "-12.27", "-7.73")
        self.check([100, 101, 102], [100.5, 101, 101.5], "+0.00", "-2.78", "+2.78")
        self.check([100.0, 100.1, 100.2], [100.05, 100.1, 100.15], "+0.00", "-0.28", "+0.28")
        self.assertIsNone(stats.welch([100], [100, 101, 102]))

    def test_p_below_005_exactly_when_the_interval_excludes_zero(self):
        w = stats.welch([100, 101, 102], [110, 111, 112])
        self.assertEqual(w["df"], 4)
        self.assertAlmostEqual(w["p"], stats.t_two_sided_p(10 / math.sqrt(2 / 3), 4), places=12)
        self.assertLess(w["p"], 0.05)
        self.assertGreater(stats.welch([100, 101, 102], [100.5, 101, 101.5])["p"], 0.05)

    def test_a_lower_level_widens_the_interval(self):
        a, b = [151.4, 152.6, 151.7, 151.3, 153.6], [151.3, 151.1, 150.2, 150.1, 150.2]
        w, w2 = stats.welch(a, b), stats.welch(a, b, alpha=0.0294)
        self.assertEqual(w["df"], w2["df"])
        self.assertGreater(w2["half"], w["half"])
        self.assertAlmostEqual(w2["half"] / w["half"], stats.t_quantile(1 - 0.0147, w["df"]) / stats.T975[w["df"] - 1],
                               places=12)


if __name__ == "__main__":
    unittest.main()
