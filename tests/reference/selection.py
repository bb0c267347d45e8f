"""TensorFlow 2.21's figures for tests/unit/ops/ops_values_test.cpp's `selection` suite.

Run: python3 tests/reference/selection.py (tensorflow-cpu==2.21.0). It prints one C++ initializer
per case: name, output shape, every output value in row-major order. The inputs are spelt out
here and in the test alike.
"""
import os

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np
import tensorflow as tf

inf, nan = float("inf"), float("nan")
lowest = float(np.finfo(np.float32).min)
# ArgMax/ArgMin's input: ties, NaN first/middle/last, a row of NaN, -inf below lowest, +inf.
X = np.array([1, 5, 5, 2,   nan, 2, 9, 9,   -1, -1, -3, nan,
              nan, nan, nan, nan,   -inf, lowest, lowest, -inf,   inf, 0, inf, -2],
             dtype=np.float32).reshape(2, 3, 4)
N = np.array([3, -7, 3, 8, 0, 8], dtype=np.int32).reshape(2, 3)


def values(v):
    v = np.asarray(v).reshape(-1)
    if v.dtype.kind in "iu":
        return ", ".join(str(int(e)) for e in v)
    return ", ".join(f"{float(e):.17g}" for e in v)


def report(name, y):
    shape = ", ".join(str(d) for d in np.shape(y))
    print(f'{{"{name}", {{{shape}}}, {{{values(y)}}}}},')


for axis in (0, 1, 2, -1):
    report(f"argmax x {axis}", tf.math.argmax(X, axis))
    report(f"argmin x {axis}", tf.math.argmin(X, axis))
for axis in (0, 1):
    report(f"argmax n {axis}", tf.math.argmax(N, axis, output_type=tf.int32))
    report(f"argmin n {axis}", tf.math.argmin(N, axis, output_type=tf.int32))

indices = tf.constant([[0, 3, -1], [2, 2, 5]], tf.int64)
for axis in (-1, 0, 1, 2):
    report(f"one_hot {axis}", tf.one_hot(indices, 4, on_value=2.5, off_value=-0.5, axis=axis, dtype=tf.float64))
report("one_hot int32", tf.one_hot(tf.constant([1, 0, 7], tf.int32), 3, dtype=tf.int32))

condition = tf.constant([True, False, True, False, False, True], shape=[2, 1, 3])
x = tf.constant([1.5, -2.0, 3.25, 4.0], tf.float64, shape=[4, 1])
y = tf.constant([10.0, 20.0, 30.0], tf.float64)
report("where", tf.where(condition, x, y))
weights = tf.reshape(tf.range(24, dtype=tf.float64) / 8.0 - 1.0, [2, 4, 3])
with tf.GradientTape(persistent=True) as tape:
    tape.watch([x, y])
    out = tf.reduce_sum(tf.where(condition, x, y) * weights)
report("where dx", tape.gradient(out, x))
report("where dy", tape.gradient(out, y))

r = tf.reshape(tf.range(12, dtype=tf.float64) / 7.0 - 0.5, [3, 4])
with tf.GradientTape() as tape:
    tape.watch(r)
    loss = tf.nn.l2_loss(r)
report("l2_loss", loss)
report("l2_loss dx", tape.gradient(loss, r))
