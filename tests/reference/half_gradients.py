"""Gradients through float16 and bfloat16 ops, for tests/unit/ops/edge_values_test.cpp's
`gradients_flow_through_sixteen_bit_ops_as_tensorflows` (TensorFlow 2.21, CPU).

Run: python3 tests/reference/half_gradients.py > tests/reference/half_gradients.txt. For each 16-bit type D: float32 variables w [3, 4],
b [4], v [4, 2] read and cast to D (as Keras's mixed precision reads them), x [5, 3] cast to D;
h = relu(x·w + b), u = tanh(h·v) · sigmoid(h·v) + softplus(h·v) − exp(−square(h·v)) / 4,
m = maximum(u, −u · 2), out = cast(reduce_mean(m, axis 1) · log(1 + abs(u[:, 0])), float32) and
the float32 loss = reduce_sum(square(out − t)). One line per type: the loss, then the float32
gradients of w, b and v (%.9g), then the D gradient with respect to the cast x (printed as float).
"""
import os

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np
import tensorflow as tf

x0 = (np.arange(15, dtype=np.float32).reshape(5, 3) - 7.0) / 4.0
w0 = (np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5) / 6.0
b0 = np.array([0.25, -0.5, 0.125, 0.75], dtype=np.float32)
v0 = (np.arange(8, dtype=np.float32).reshape(4, 2) - 3.0) / 5.0
t0 = np.array([0.5, -0.25, 1.0, 0.0, 2.0], dtype=np.float32)

for name, d in (("float16", tf.float16), ("bfloat16", tf.bfloat16)):
    w, b, v = tf.Variable(w0), tf.Variable(b0), tf.Variable(v0)
    with tf.GradientTape(persistent=True) as tape:
        x = tf.cast(tf.constant(x0), d)
        tape.watch(x)
        h = tf.nn.relu(tf.matmul(x, tf.cast(w, d)) + tf.cast(b, d))
        z = tf.matmul(h, tf.cast(v, d))
        u = tf.tanh(z) * tf.sigmoid(z) + tf.nn.softplus(z) - tf.exp(-tf.square(z)) / tf.constant(4.0, d)
        m = tf.maximum(u, -u * tf.constant(2.0, d))
        r = tf.reduce_mean(m, axis=1) * tf.math.log(tf.constant(1.0, d) + tf.abs(u[:, 0]))
        out = tf.cast(r, tf.float32)
        loss = tf.reduce_sum(tf.square(out - t0))
    gw, gb, gv = tape.gradient(loss, [w, b, v])
    gx = tape.gradient(loss, x)
    values = [float(loss)] + list(gw.numpy().reshape(-1)) + list(gb.numpy()) + list(gv.numpy().reshape(-1))
    values += [float(e) for e in tf.cast(gx, tf.float32).numpy().reshape(-1)]
    print(name, " ".join(f"{e:.9g}" for e in values))
