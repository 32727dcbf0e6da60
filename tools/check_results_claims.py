#!/usr/bin/env python3
"""Recompute the numbers behind the claims of docs/results.md that issue 38 questioned.

Reads only the committed study files under docs/results/*/ (records/*.json and summary.json)
and prints every number the page's corrected sentences use, with the folder it came from.
Pure Python (no numpy or scipy): Student's t and F tails come from the regularized incomplete
beta function, and the power of a paired t-test from integrating over the chi-square variable.

    python3 tools/check_results_claims.py
"""

import glob
import json
import math
import os
import statistics

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "results")


def load(folder, name):
    with open(os.path.join(ROOT, folder, "records", name)) as f:
        return json.load(f)


def val(folder, variant, seed, suffix=""):
    return load(folder, f"{variant}-seed{seed}-steps2000{suffix}.json")["final_val_loss"]


# --- distributions -------------------------------------------------------------------------------


def betacf(a, b, x):
    # Lentz's continued fraction for the incomplete beta function (Numerical Recipes, betacf).
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def betainc(a, b, x):
    """Regularized incomplete beta I_x(a, b)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    lbt = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(1 - x)
    if x < (a + 1) / (a + b + 2):
        return math.exp(lbt) * betacf(a, b, x) / a
    return 1.0 - math.exp(lbt) * betacf(b, a, 1 - x) / b


def t_two_sided_p(t, df):
    return betainc(df / 2.0, 0.5, df / (df + t * t))


def t_quantile(q, df):
    lo, hi = 0.0, 1000.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if 1 - t_two_sided_p(mid, df) / 2 < q:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def f_upper_tail(f, d1, d2):
    return betainc(d2 / 2.0, d1 / 2.0, d2 / (d2 + d1 * f))


def norm_cdf(x):
    return 0.5 * math.erfc(-x / math.sqrt(2))


def paired_power(effect_over_sd, n, alpha=0.05):
    """Power of the two-sided paired t-test (n pairs) for a true mean difference of
    effect_over_sd standard deviations of the differences: integrate over the chi-square."""
    df = n - 1
    c = t_quantile(1 - alpha / 2, df)
    delta = effect_over_sd * math.sqrt(n)
    total, steps, vmax = 0.0, 20000, 200.0
    h = vmax / steps
    for i in range(steps):
        v = (i + 0.5) * h
        dens = math.exp((df / 2 - 1) * math.log(v) - v / 2 - (df / 2) * math.log(2) - math.lgamma(df / 2))
        s = c * math.sqrt(v / df)
        total += (norm_cdf(delta - s) + norm_cdf(-delta - s)) * dens * h
    return total


def detectable(sd, n, power=0.8):
    lo, hi = 0.0, 100.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if paired_power(mid, n) < power:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2 * sd


def paired(a, b):
    d = [x - y for x, y in zip(a, b)]
    n = len(d)
    m, s = statistics.mean(d), statistics.stdev(d)
    t = m / (s / math.sqrt(n))
    half = t_quantile(0.975, n - 1) * s / math.sqrt(n)
    return dict(mean=m, sd=s, t=t, p=t_two_sided_p(t, n - 1), ci=(m - half, m + half),
                detect80=detectable(s, n), diffs=d)


def welch(m1, s1, n1, m2, s2, n2):
    v1, v2 = s1 * s1 / n1, s2 * s2 / n2
    t = (m1 - m2) / math.sqrt(v1 + v2)
    df = (v1 + v2) ** 2 / (v1 * v1 / (n1 - 1) + v2 * v2 / (n2 - 1))
    return t, df, t_two_sided_p(t, df)


def holm(ps):
    out, running = {}, 0.0
    for i, (k, p) in enumerate(sorted(ps.items(), key=lambda kv: kv[1])):
        running = max(running, min(1.0, (len(ps) - i) * p))
        out[k] = running
    return out


def show_paired(label, r):
    print(f"  {label}: mean {r['mean']:+.4f}, per seed {[round(x, 4) for x in r['diffs']]}, "
          f"t {r['t']:.2f}, p {r['p']:.3f}, 95% CI [{r['ci'][0]:+.4f}, {r['ci'][1]:+.4f}], "
          f"80% power needs {r['detect80']:.4f}")


PUBLISHED = {"rope": (1.5894, 0.0051), "alibi-single": (1.6008, 0.0047),
             "sinusoidal": (1.6386, 0.0009), "learned": (1.6636, 0.0211)}
FOUR = ["rope", "learned", "alibi-single", "sinusoidal"]
SEEDS3 = [1337, 2024, 42]
SEEDS10 = [1337, 2024, 42, 1, 2, 3, 4, 5, 6, 7]


def main():
    print("== tokens seen (published design: 2,000 steps x batch 32 x context 128)")
    n_chars = 1115394
    train = int(0.9 * n_chars)
    tokens = 2000 * 32 * 128
    print(f"  {tokens:,} targets; training split {train:,} characters; {tokens / train:.2f} epochs")

    print("== estimate (200 batches) at step 2,000 against the full pass (published-design records)")
    gaps = []
    for f in sorted(glob.glob(os.path.join(ROOT, "published-design", "records", "*steps2000.json"))):
        r = json.load(open(f))
        last = [c for c in r["curve"] if c["step"] == 2000][0]
        gaps.append(last["val_loss"] - r["final_val_loss"])
    print(f"  val estimate − full pass over {len(gaps)} runs: {min(gaps):+.4f} to {max(gaps):+.4f}, "
          f"mean |d| {statistics.mean(abs(g) for g in gaps):.4f}")

    print("== alibi-single gap, seed 1337 (published-design records)")
    for steps in (2000, 4000):
        r = load("published-design", f"alibi-single-seed1337-steps{steps}.json")
        print(f"  {steps} steps: gap {r['generalization_gap']:.4f}")

    print("== longer-contexts: sinusoidal and the rotary layouts at 1,024 (summary.json)")
    s = json.load(open(os.path.join(ROOT, "longer-contexts", "summary.json")))
    for prot in ("non_overlapping", "sliding"):
        means = {e["variant"]: e["mean"] for e in s["extrapolation"]
                 if e["fine_tune"] == "none" and e["scaling"] == "none" and e["length"] == 1024
                 and e["protocol"] == prot and e["variant"] in ("sinusoidal", "rope", "rope-interleaved", "rope-partial")}
        print(f"  {prot}: {min(means.values()):.3f}–{max(means.values()):.3f} {means}")
    sc = s["scaling_comparisons"]
    tested = [c for c in sc if c["paired"]]
    models = {(c["variant"], c["fine_tune"], c["scaling"]) for c in sc}
    print(f"  comparisons {len(sc)}, with a test {len(tested)}, models {len(models)}, "
          f"Holm < 0.05: {sum(c['paired']['p_holm'] < 0.05 for c in tested)}")

    print("== fine-tune pilot, alibi-single fine-tuned − trained, per seed (fine-tune-pilot records)")
    pilot = {}
    for seed in (2, 3):
        a = {e["length"]: e for e in load("fine-tune-pilot", f"alibi-single-seed{seed}-steps2000.json")["extrapolation"]}
        b = {e["length"]: e for e in load("fine-tune-pilot", f"alibi-single-seed{seed}-steps2000-ft512x200.json")["extrapolation"]}
        for prot in ("non_overlapping", "sliding"):
            pilot.setdefault(prot, {}).update({(seed, L): b[L][prot] - a[L][prot] for L in a})
        print(f"  seed {seed}: non-overlapping " + ", ".join(f"{L}: {b[L]['non_overlapping'] - a[L]['non_overlapping']:+.4f}" for L in sorted(a))
              + "; sliding " + ", ".join(f"{L}: {b[L]['sliding'] - a[L]['sliding']:+.4f}" for L in sorted(a)))

    for prot, d in pilot.items():
        means = [(d[(2, L)] + d[(3, L)]) / 2 for L in (128, 256, 512, 1024)]
        print(f"  mean over the two seeds, {prot}: " + ", ".join(f"{m:+.4f}" for m in means))

    print("== embedding-std-1 (its records; N(0, 0.02) from published-design)")
    L1 = [val("embedding-std-1", "learned", x) for x in SEEDS3]
    S1 = [val("embedding-std-1", "sinusoidal", x) for x in SEEDS3]
    S0 = [val("published-design", "sinusoidal", x) for x in SEEDS3]
    show_paired("learned − sinusoidal at N(0, 1)", paired(L1, S1))
    show_paired("sinusoidal N(0, 1) − N(0, 0.02)", paired(S1, S0))
    L0 = [val("published-design", "learned", x) for x in SEEDS3]
    show_paired("learned N(0, 1) − N(0, 0.02)", paired(L1, L0))
    SP = [val("published-settings", "sinusoidal", x, "-init-pytorch") for x in SEEDS3]
    show_paired("sinusoidal init=pytorch − study's settings", paired(SP, S0))
    for name, folder, sfx in (("N(0, 0.02)", "published-design", ""), ("N(0, 1)", "embedding-std-1", "")):
        at250 = []
        for x in SEEDS3:
            curve = load(folder, f"sinusoidal-seed{x}-steps2000{sfx}.json")["curve"]
            at250 += [c["val_loss"] for c in curve if c["step"] == 250]
        print(f"  sinusoidal val estimate at step 250, {name}: {min(at250):.3f}–{max(at250):.3f}")
    f = statistics.variance(S0) / statistics.variance(S1)
    print(f"  sinusoidal sd {statistics.stdev(S0):.4f} -> {statistics.stdev(S1):.4f}; F {f:.1f} (2, 2), "
          f"two-sided p {min(1, 2 * f_upper_tail(f, 2, 2)):.3f}")
    print(f"  sinusoidal − published: {statistics.mean(S0) - 1.6386:+.4f} -> {statistics.mean(S1) - 1.6386:+.4f}")

    print("== published-settings (its records; the study's settings from published-design)")
    suffixes = {"init=pytorch": "-init-pytorch", "dropout 0.1": "-dropout-0.1",
                "all three": "-init-pytorch-dropout-0.1-lr_schedule-cosine-warmup_steps-100",
                "dropout 0.2": "-dropout-0.2"}
    for name, suf in suffixes.items():
        g = {v: [val("published-settings", v, x, suf) for x in SEEDS3] for v in FOUR}
        show_paired(f"{name}: learned − sinusoidal", paired(g["learned"], g["sinusoidal"]))
        if name == "dropout 0.1":
            show_paired(f"{name}: learned − alibi-single", paired(g["learned"], g["alibi-single"]))

    print("== published means against this study, Welch (published sd, n = 3)")
    for folder, seeds in (("published-design", SEEDS3), ("power-10-seeds", SEEDS10)):
        ps = {}
        for v in FOUR:
            x = [val(folder, v, k) for k in seeds]
            m, sd = statistics.mean(x), statistics.stdev(x)
            t, df, p = welch(m, sd, len(x), *PUBLISHED[v], 3)
            ps[v] = p
            print(f"  {folder} {v}: {m:.4f} ± {sd:.4f} (n {len(x)}) vs {PUBLISHED[v]}: t {t:.2f}, df {df:.1f}, p {p:.4f}")
        print("  Holm over the four: " + ", ".join(f"{v} {p:.4f}" for v, p in holm(ps).items()))

    print("== the same seed on two CPUs (power-10-seeds against longer-contexts records)")
    worst = {}
    for seed in (4, 5, 6):
        for v in FOUR:
            a, b = val("power-10-seeds", v, seed), val("longer-contexts", v, seed)
            worst[v] = max(worst.get(v, 0), abs(b - a))
            print(f"  seed {seed} {v}: {a:.4f} vs {b:.4f} ({b - a:+.6f})")
        for folder in ("power-10-seeds", "longer-contexts"):
            x = {v: val(folder, v, seed) for v in FOUR}
            print(f"    {folder} seed {seed}: " + " < ".join(sorted(FOUR, key=x.get)))
    print("  largest |difference| by variant: " + ", ".join(f"{v} {d:.4f}" for v, d in worst.items()))
    x = {v: val("power-10-seeds", v, 5) for v in FOUR}
    print(f"  seed 5 sinusoidal − alibi-single in power-10-seeds: {x['sinusoidal'] - x['alibi-single']:+.4f}")

    print("== compute fields in the records")
    for d in sorted(glob.glob(os.path.join(ROOT, "*", "records"))):
        kinds = {}
        for f in glob.glob(os.path.join(d, "*.json")):
            c = json.dumps(json.load(open(f)).get("compute"), sort_keys=True)
            kinds[c] = kinds.get(c, 0) + 1
        print(f"  {os.path.relpath(d, ROOT)}: {kinds}")


if __name__ == "__main__":
    main()
