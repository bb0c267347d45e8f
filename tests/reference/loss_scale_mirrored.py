"""Keras 3's LossScaleOptimizer in a custom loop under MirroredStrategy (TensorFlow 2.21, two
logical CPUs), for tests/unit/nn/optimizers_test.cpp's
`a_traced_custom_loop_under_mirrored_strategy_follows_kerass_sequence`.

Run: python3 tests/reference/loss_scale_mirrored.py. The model, data and optimizer of
tests/reference/loss_scale.py; replica r takes examples 2r and 2r + 1, its loss is
compute_average_loss over the global batch of 4. The test's loop, in one tf.function:
strategy.run computes each replica's scaled gradients, batch_reduce_to sums them, and
optimizer.apply runs in cross-replica context. The sum is one process's gradient, so the script
checks that this run follows loss_scale.py's sequence (scales to its 9 digits, iterations exact,
values within 2e-6 relative) and prints it. Then it runs the loop with apply *inside* strategy.run, eagerly (the
variant devtensor refuses): each replica checks its own gradients, so the run diverges (the script
prints the first step whose variables are not finite); traced, TensorFlow fails to run its graph.
"""
import os

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import subprocess
import sys

import numpy as np
import tensorflow as tf
import keras

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
x = np.arange(12, dtype=np.float32).reshape(4, 3) * 10.0 - 40.0
y = np.array([[1.0], [-2.0], [3.0], [0.5]], dtype=np.float32)
xs = strategy.experimental_distribute_values_from_function(
    lambda c: tf.constant(x[2 * c.replica_id_in_sync_group:2 * c.replica_id_in_sync_group + 2]))
ys = strategy.experimental_distribute_values_from_function(
    lambda c: tf.constant(y[2 * c.replica_id_in_sync_group:2 * c.replica_id_in_sync_group + 2]))


def run(apply_inside):
    with strategy.scope():
        w = tf.Variable(np.array([[0.5], [-0.25], [0.125]], dtype=np.float32))
        b = tf.Variable(np.array([0.1], dtype=np.float32))
        optimizer = keras.optimizers.LossScaleOptimizer(
            keras.optimizers.SGD(learning_rate=1e-4), initial_scale=2.0**125, dynamic_growth_steps=3)
        optimizer.build([w, b])

    def replica_step(xr, yr):
        with tf.GradientTape() as tape:
            loss = tf.nn.compute_average_loss(tf.reduce_sum(tf.square(tf.matmul(xr, w) + b - yr), axis=1),
                                              global_batch_size=4)
            scaled = optimizer.scale_loss(loss)
        grads = tape.gradient(scaled, [w, b])
        if apply_inside:
            optimizer.apply(grads, [w, b])
        return loss, grads

    def step(xs, ys):
        loss, grads = strategy.run(replica_step, args=(xs, ys))
        if not apply_inside:
            summed = strategy.extended.batch_reduce_to(tf.distribute.ReduceOp.SUM, list(zip(grads, [w, b])))
            optimizer.apply(summed, [w, b])
        return strategy.reduce("SUM", loss, axis=None)

    if not apply_inside:
        step = tf.function(step)
    rows = []
    for k in range(16):
        loss = float(step(xs, ys))
        values = [float(v) for v in list(w.numpy().reshape(-1)) + list(b.numpy())]
        rows.append((k, loss, float(optimizer.dynamic_scale.numpy()), int(optimizer.iterations.numpy()), values))
    return rows


after = run(apply_inside=False)
here = os.path.dirname(os.path.abspath(__file__))
one_process = [line.split() for line in subprocess.run(
    [sys.executable, os.path.join(here, "loss_scale.py")], check=True, capture_output=True,
    text=True).stdout.splitlines()]
for (k, loss, scale, iterations, values), want in zip(after, one_process):
    want = [float(v) for v in want]
    # the scales to loss_scale.py's 9 printed digits, the iterations exactly
    assert abs(scale - want[2]) <= 1e-8 * want[2] and iterations == int(want[3]), (k, scale, iterations, want)
    for got, expected in zip([loss] + values, [want[1]] + want[4:]):
        assert abs(got - expected) <= 2e-6 * (1 + abs(expected)), (k, got, expected)
    print(k, f"{loss:.9g}", f"{scale:.9g}", iterations, " ".join(f"{v:.9g}" for v in values))

inside = run(apply_inside=True)
diverged = [k for k, _, _, _, values in inside if not all(np.isfinite(values))]
print("apply inside strategy.run, eagerly: variables not finite from step",
      diverged[0] if diverged else "(never)")
