"""Print log1pexp and its first three derivatives at x = 1, 100, -100 (float32 and float64).

Run by `make run` after `hogen build specs/log1pexp.yaml`. The derivatives come
from nested GradientTapes, so they are what training code would see.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from generated import log1pexp  # noqa: E402


def derivatives(x):
    with tf.GradientTape() as t3:
        t3.watch(x)
        with tf.GradientTape() as t2:
            t2.watch(x)
            with tf.GradientTape() as t1:
                t1.watch(x)
                y = log1pexp(x)
            d1 = t1.gradient(y, x)
        d2 = t2.gradient(d1, x)
    d3 = t3.gradient(d2, x)
    return y, d1, d2, d3


def underflow_note(columns, xs, table):
    """One line on the float32 zeros whose float64 values lie below float32's normal range."""
    tiny = np.finfo(np.float32).tiny
    zeros, values = [], []
    for name, f32, f64 in zip(columns, table[tf.float32], table[tf.float64]):
        for x, a, b in zip(xs, f32, f64):
            if a == 0 and b != 0 and abs(b) < tiny:
                zeros.append(f"{name}({x:g})")
                values.append(abs(b))
    if not zeros:
        return ""
    return (
        f"float32 prints 0 for {', '.join(zeros)}: the true values (the float64 rows, "
        f"|v| <= {max(values):.3g}) lie below float32's smallest normal number "
        f"{tiny:.3g}, so they round to 0."
    )


def main():
    columns = ("y", "f1", "f2", "f3")
    print(f"{'dtype':8} {'x':>6} " + " ".join(f"{c:>14}" for c in columns))
    xs, table = [1.0, 100.0, -100.0], {}
    for dtype in (tf.float32, tf.float64):
        table[dtype] = [v.numpy() for v in derivatives(tf.constant(xs, dtype))]
        for i, x in enumerate(xs):
            row = " ".join(f"{v[i]:14.7g}" for v in table[dtype])
            print(f"{dtype.name:8} {x:6g} {row}")
    note = underflow_note(columns, xs, table)
    if note:
        print(f"\n{note}")


if __name__ == "__main__":
    main()
