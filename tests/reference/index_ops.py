"""TensorFlow 2.21's figures for the index ops (ops/index_ops.hpp) in tests/unit/ops/ops_values_test.cpp.

Run: python3 tests/reference/index_ops.py (tensorflow-cpu==2.21.0). It prints one C++ initializer per
case: name, output shape, every value in row-major order. Inputs: ramps, as the test makes them.
"""
import os

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np
import tensorflow as tf


def ramp(shape, scale, shift=0.0):
    n = int(np.prod(shape))
    return tf.reshape(tf.range(n, dtype=tf.float64), shape) / scale - shift


def report(name, y):
    v = np.asarray(y).reshape(-1)
    shape = ", ".join(str(d) for d in np.shape(y))
    text = ", ".join(str(int(e)) if v.dtype.kind in "iu" else f"{float(e):.17g}" for e in v)
    print(f'{{"{name}", {{{shape}}}, {{{text}}}}},')


p = ramp([3, 4], 4.0, 1.0)
q = ramp([2, 3, 2], 3.0)
cases = [
    ("axis 0", p, tf.constant([[2, 0], [1, 1]], tf.int64), 0),
    ("axis 1", p, tf.constant([3, 0, 3], tf.int32), 1),
    ("axis -1 scalar index", p, tf.constant(2, tf.int64), -1),
    ("3d axis 1", q, tf.constant([[2, 2], [0, 1]], tf.int64), 1),
]
for name, params, indices, axis in cases:
    with tf.GradientTape() as tape:
        tape.watch(params)
        y = tf.gather(params, indices, axis=axis)
        weights = ramp(y.shape, 5.0, 0.5)
        loss = tf.reduce_sum(y * weights)
    report(name, y)
    report(name + " grad", tf.convert_to_tensor(tape.gradient(loss, params)))
report("int32", tf.gather(tf.constant([[1, 2], [3, 4], [5, 6]], tf.int32), [2, 2, 0]))

data = ramp([4, 2], 2.0)
ids = tf.constant([0, 2, -1, 0], tf.int64)
with tf.GradientTape() as tape:
    tape.watch(data)
    s = tf.math.unsorted_segment_sum(data, ids, 3)
    loss = tf.reduce_sum(s * ramp(s.shape, 5.0, 0.5))
report("segment sum", s)
report("segment sum grad", tape.gradient(loss, data))

logits = ramp([4, 3], 5.0, 1.0)
labels = tf.constant([0, 2, 1, 2], tf.int32)
with tf.GradientTape() as tape:
    tape.watch(logits)
    ce = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    loss = tf.reduce_sum(ce * ramp(ce.shape, 5.0, 0.5))
report("sparse ce", ce)
report("sparse ce grad", tape.gradient(loss, logits))
report("sparse ce 3d", tf.nn.sparse_softmax_cross_entropy_with_logits(
    labels=tf.constant([[0, 5]], tf.int64), logits=tf.reshape(ramp([12], 5.0, 1.0), [1, 2, 6])))
