"""Keras 3's LossScaleOptimizer in a custom training loop, for tests/unit/nn/optimizers_test.cpp's
`a_loss_scale_optimizer_skips_overflowing_steps_as_keras` (TensorFlow 2.21, Keras 3, CPU).

Run: python3 tests/reference/loss_scale.py. A linear model y = x·w + b (w [3, 1], b [1]) as two
variables, mean squared error, SGD(learning_rate=1e-4) inside
LossScaleOptimizer(initial_scale=2**125, dynamic_growth_steps=3): the scaled gradients overflow
float32 until the scale has halved enough, then three finite steps double it and the next
overflows again. One line per step: step, loss, scale after the step, the inner optimizer's
iterations, w and b after the step (%.9g). The same 16 steps run twice: eagerly, then as one
tf.function (the test's traced run, `dt::function`); the script checks that both print the same.
"""
import os

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np
import tensorflow as tf
import keras

x = tf.constant(np.arange(12, dtype=np.float32).reshape(4, 3) * 10.0 - 40.0)
y = tf.constant(np.array([[1.0], [-2.0], [3.0], [0.5]], dtype=np.float32))


def run(traced):
    w = tf.Variable(np.array([[0.5], [-0.25], [0.125]], dtype=np.float32))
    b = tf.Variable(np.array([0.1], dtype=np.float32))
    optimizer = keras.optimizers.LossScaleOptimizer(
        keras.optimizers.SGD(learning_rate=1e-4), initial_scale=2.0**125, dynamic_growth_steps=3)

    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
            scaled = optimizer.scale_loss(loss)
        grads = tape.gradient(scaled, [w, b])
        optimizer.apply(grads, [w, b])
        return loss

    if traced:
        step = tf.function(step)
    lines = []
    for k in range(16):
        loss = step()
        values = list(w.numpy().reshape(-1)) + list(b.numpy())
        lines.append(f"{k} {float(loss):.9g} {float(optimizer.dynamic_scale.numpy()):.9g} "
                     f"{int(optimizer.iterations.numpy())} " + " ".join(f"{v:.9g}" for v in values))
    return lines


eager = run(traced=False)
assert run(traced=True) == eager, "tf.function and eager steps differ"
print("\n".join(eager))
