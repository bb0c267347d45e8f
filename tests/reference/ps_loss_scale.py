"""Keras 3's LossScaleOptimizer under TensorFlow's ParameterServerStrategy, for
tests/mpi/parameter_server_test.cpp's `loss_scaling` scenario (TensorFlow 2.21, Keras 3, CPU).

Run: python3 tests/reference/ps_loss_scale.py. An in-process cluster of one worker and one ps
task (gRPC on localhost; with one worker the scheduled steps run in order). In the strategy's
scope: a Dense(2) under mixed_float16 (kernel ((i·3 mod 5) − 2)/5, bias [0.1, −0.1]) and
LossScaleOptimizer(SGD(0.01), dynamic_growth_steps=2), built there, so its dynamic_scale and
step_counter live on the ps task as the layer's variables do. Twelve scheduled steps, batch
s mod 4 of 16 examples (x = ((i·5 mod 7) − 3)/4, targets 100·e and 100·(1 − e) for
e = ((i·3 mod 5) − 2)/4): the float16 gradients overflow until the scale is small enough.
One line per step: the loss, the scale after the step, the inner optimizer's iterations (%.9g);
then the trained kernel and bias.
"""
import os
import socket

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np
import tensorflow as tf
import keras


def free_port():
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


cluster = tf.train.ClusterSpec({"worker": [f"localhost:{free_port()}"], "ps": [f"localhost:{free_port()}"]})
servers = [tf.distribute.Server(cluster, job_name=job, task_index=0, protocol="grpc") for job in ("worker", "ps")]
strategy = tf.distribute.experimental.ParameterServerStrategy(
    tf.distribute.cluster_resolver.SimpleClusterResolver(cluster, rpc_layer="grpc"))
coordinator = tf.distribute.experimental.coordinator.ClusterCoordinator(strategy)


def pattern(n, multiplier, modulus, shift, scale):
    return np.array([((i * multiplier % modulus) - shift) / scale for i in range(n)], np.float32)


x = pattern(32, 5, 7, 3, 4).reshape(16, 2)
e = pattern(16, 3, 5, 2, 4)
y = np.stack([e * 100, (1 - e) * 100], 1).astype(np.float32)

with strategy.scope():
    keras.mixed_precision.set_global_policy("mixed_float16")
    layer = keras.layers.Dense(2)
    layer.build((None, 2))
    keras.mixed_precision.set_global_policy("float32")
    layer.set_weights([pattern(4, 3, 5, 2, 5).reshape(2, 2), np.array([0.1, -0.1], np.float32)])
    optimizer = keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD(0.01), dynamic_growth_steps=2)
    optimizer.build(layer.trainable_variables)
assert "/job:ps/" in optimizer.dynamic_scale.value.device and "/job:ps/" in optimizer.step_counter.value.device


def replica_step(xb, yb):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(yb - tf.cast(layer(xb), tf.float32)))
        scaled = optimizer.scale_loss(loss)
    grads = tape.gradient(scaled, layer.trainable_variables)
    optimizer.apply_gradients(zip(grads, layer.trainable_variables))
    return loss, tf.identity(optimizer.dynamic_scale), tf.identity(optimizer.iterations)


@tf.function
def step(xb, yb):
    return strategy.run(replica_step, args=(xb, yb))


results = [coordinator.schedule(step, args=(tf.constant(x[s % 4 * 4:s % 4 * 4 + 4]),
                                            tf.constant(y[s % 4 * 4:s % 4 * 4 + 4]))) for s in range(12)]
coordinator.join()
for r in results:
    loss, scale, iterations = r.fetch()
    print(f"{loss:.9g} {scale:.9g} {iterations}")
print("kernel", " ".join(f"{v:.9g}" for v in layer.kernel.numpy().ravel()))
print("bias", " ".join(f"{v:.9g}" for v in layer.bias.numpy()))
