"""TensorFlow 2.21's figures for tests/unit/ops/ops_values_test.cpp's `conv` suite.

Run: python3 tests/reference/conv.py (tensorflow-cpu==2.21.0). It prints one line per case:
name, output shape, Σy and the weighted checksum Σ y[i]·(i mod 7 + 1) over the row-major
elements, which the test recomputes from devtensor's output (the weights catch a value in the
wrong place that a plain sum would not).
"""
import os

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np
import tensorflow as tf


def ramp(shape, scale, shift=0.0):
    """The test's inputs: 0, 1, 2, ... in row-major order, scaled, then shifted."""
    n = int(np.prod(shape))
    return tf.reshape(tf.range(n, dtype=tf.float64), shape) / scale - shift


def report(name, y):
    v = np.asarray(y, dtype=np.float64).reshape(-1)
    weights = (np.arange(v.size) % 7 + 1).astype(np.float64)
    shape = "{" + ", ".join(str(d) for d in np.shape(y)) + "}"
    print(f'{{"{name}", {shape}, {v.sum():.12g}, {(v * weights).sum():.12g}}},')


x = ramp([2, 5, 5, 3], 50.0)
w = ramp([3, 3, 3, 4], 100.0, 0.5)
x_nchw = tf.transpose(x, [0, 3, 1, 2])
report("conv SAME s1", tf.nn.conv2d(x, w, 1, "SAME"))
report("conv VALID s2", tf.nn.conv2d(x, w, 2, "VALID"))
report("conv SAME s2", tf.nn.conv2d(x, w, 2, "SAME"))
report("conv SAME d2", tf.nn.conv2d(x, w, 1, "SAME", dilations=2))
report("conv explicit", tf.nn.conv2d(x, w, 1, [[0, 0], [1, 2], [0, 1], [0, 0]]))
report("conv strides 1,2", tf.nn.conv2d(x, w, [1, 2], "SAME"))
report("conv 1x1", tf.nn.conv2d(x, w[1:2, 1:2], 1, "VALID"))
# TensorFlow's float64 CPU kernels take NHWC only: NCHW's figure is the NHWC result transposed.
report("conv NCHW", tf.transpose(tf.nn.conv2d(x, w, 2, "SAME"), [0, 3, 1, 2]))
report("max_pool 3 s2 SAME", tf.nn.max_pool2d(x, 3, 2, "SAME"))
report("max_pool 2 VALID", tf.nn.max_pool2d(x, 2, 2, "VALID"))
report("avg_pool 3 s2 SAME", tf.nn.avg_pool2d(x, 3, 2, "SAME"))
report("avg_pool 2x3 s1 VALID", tf.nn.avg_pool2d(x, [2, 3], 1, "VALID"))
report("max_pool NCHW", tf.transpose(tf.nn.max_pool2d(x, 3, 2, "SAME"), [0, 3, 1, 2]))
b = ramp([3], 10.0, 0.1)
report("bias_add NHWC", tf.nn.bias_add(x, b))
report("bias_add NCHW", tf.nn.bias_add(x_nchw, b, data_format="NCHW"))

# Gradients of Σ f(x)² (each output's gradient is 2·f(x): not uniform).
def grads(f, *inputs):
    with tf.GradientTape() as tape:
        for t in inputs:
            tape.watch(t)
        y = f(*inputs)
        loss = tf.reduce_sum(y * y)
    return tape.gradient(loss, list(inputs))

gx, gw = grads(lambda a, k: tf.nn.conv2d(a, k, 2, "SAME"), x, w)
report("grad conv SAME s2 input", gx)
report("grad conv SAME s2 filter", gw)
# TensorFlow's float64 CPU backprops take no dilation: this one runs in float32 (oneDNN).
gx, gw = grads(lambda a, k: tf.nn.conv2d(a, k, 1, "VALID", dilations=2), tf.cast(x, tf.float32),
               tf.cast(w[:2], tf.float32))
report("grad conv VALID d2 input", gx)
report("grad conv VALID d2 filter", gw)
(gx,) = grads(lambda a: tf.nn.max_pool2d(a, 3, 2, "SAME"), x)
report("grad max_pool 3 s2 SAME", gx)
(gx,) = grads(lambda a: tf.nn.avg_pool2d(a, 3, 2, "SAME"), x)
report("grad avg_pool 3 s2 SAME", gx)
gx, gb = grads(lambda a, c: tf.nn.bias_add(a, c), x, b)
report("grad bias_add value", gx)
report("grad bias_add bias", gb)
