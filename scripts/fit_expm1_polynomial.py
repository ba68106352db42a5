#!/usr/bin/python3
"""The coefficients of the vector activations' exp polynomial (cell_pass_simd.h).

expm1(r) = r + r^2 P(r) on [-ln 2 / 2, ln 2 / 2] (a hair wider: n is rounded
in a fused multiply-add), P of degree 4 fitted to minimise the largest error
of exp(r) = 1 + expm1(r) relative to exp(r): least squares on a dense grid,
reweighted towards the largest errors until they level (a minimax fit's
equal ripple). Prints the float32 coefficients, lowest degree first, and the
fit's error in double arithmetic.

Run: /usr/bin/python3 scripts/fit_expm1_polynomial.py [degree]
"""
import sys

import numpy as np


def fit(degree):
    half = np.log(2.0) / 2 * 1.0001
    r = np.linspace(-half, half, 20001)
    small = np.abs(r) < 1e-4
    safe = np.where(small, 1.0, r * r)
    f = np.where(small, 0.5 + r / 6 + r * r / 24, (np.expm1(r) - r) / safe)
    weight = r * r / np.exp(r)  # P's error, as an error of exp(r) relative to it
    basis = np.vander(r, degree + 1, increasing=True)
    emphasis = np.ones_like(r)
    for _ in range(200):
        c, *_ = np.linalg.lstsq(basis * (weight * emphasis)[:, None], f * weight * emphasis,
                                rcond=None)
        err = np.abs((basis @ c - f) * weight)
        emphasis = emphasis * (err / err.max()) ** 0.3 + 1e-12
        emphasis /= emphasis.max()
    c32 = c.astype(np.float32)
    err32 = np.abs((basis @ c32.astype(np.float64) - f) * weight).max()
    return c32, err32


if __name__ == "__main__":
    degree = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    coefficients, error = fit(degree)
    for k, value in enumerate(coefficients):
        print(f"P[{k}] = {value:.10e}f")
    print(f"largest error of exp(r), relative: {error:.3g}")
