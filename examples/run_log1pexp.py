"""Print log1pexp and its first three derivatives at x = 1, 100, -100 (float32 and float64).

Run by `make run` after `hogen build specs/log1pexp.yaml`. The derivatives come
from nested GradientTapes, so they are what training code would see.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

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


def main():
    print(f"{'dtype':8} {'x':>6} {'y':>14} {'f1':>14} {'f2':>14} {'f3':>14}")
    for dtype in (tf.float32, tf.float64):
        xs = tf.constant([1.0, 100.0, -100.0], dtype)
        values = [v.numpy() for v in derivatives(xs)]
        for i, x in enumerate(xs.numpy()):
            row = " ".join(f"{v[i]:14.7g}" for v in values)
            print(f"{dtype.name:8} {x:6g} {row}")


if __name__ == "__main__":
    main()
