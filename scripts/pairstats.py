"""Shared by the paired-run scripts (explain-pingpong-overhead.sh, explain-hook-floor.sh,
peer-pairs.sh): a result's user-timestamp quantiles as `latlab show` computes them, the
sign-test interval of a median of paired differences, and a bootstrap interval."""
import random
import statistics
import subprocess
from math import comb


def quantiles(latlab, path):
    """The `user.actual` series' median and p99.9 of result file PATH, in µs."""
    out = subprocess.run([latlab, "show", "-p", "50,99.9", "--csv", "-", path],
                         capture_output=True, text=True, check=True).stdout
    q = {}
    for line in out.splitlines()[1:]:
        f = line.split(",")
        if f[0].startswith("user.actual") and f[1] in ("p50", "p99.9"):
            q[f[1]] = float(f[2]) / 1000
    return q["p50"], q["p99.9"]


def sign_interval(xs):
    """(low, high, coverage): the narrowest pair of order statistics of XS covering the
    median with at least 90 % (the whole range when there are too few)."""
    n = len(xs)
    xs = sorted(xs)
    best = None
    for k in range(1, n // 2 + 1):
        cover = 1 - 2 * sum(comb(n, i) for i in range(k)) / 2 ** n
        if cover >= 0.9:
            best = (xs[k - 1], xs[n - k], cover)
    if best is None:
        return (xs[0], xs[-1], 1 - 2 / 2 ** n)
    return best


def boot(xs, reps=5000):
    """A bootstrap 95 % interval of the median of XS (fixed seed)."""
    rnd = random.Random(13)
    ms = sorted(statistics.median(rnd.choices(xs, k=len(xs))) for _ in range(reps))
    return ms[int(0.025 * reps)], ms[int(0.975 * reps) - 1]
