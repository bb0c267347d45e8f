"""TensorFlow 2.21's FusedBatchNormV3 and its gradient for tests/unit/ops/ops_values_test.cpp.

Run: python3 tests/reference/fused_batch_norm.py > tests/reference/fused_batch_norm.txt
(tensorflow-cpu==2.21.0); the test reads that file. The input x is value i
of [2, 3, 2, 4] (NHWC, 4 channels), row-major: ((i * 7) % 13 - 6) / 4; scale c: 1 + c / 4, offset
c: c / 2 - 1, mean c: c / 8 - 0.25, variance c: 0.5 + c / 4. The weights of the loss sum(y * w):
w_i = (i % 5) - 2. Prints, for each case, the six outputs and the gradients of the loss with
respect to x, scale and offset ("<case> <what>: v, v, ..."); then the error texts ("<what>: <type>
<text>").
"""
import os

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np
import tensorflow as tf

i = np.arange(2 * 3 * 2 * 4)
x_nhwc = (((i * 7) % 13 - 6) / 4.0).reshape(2, 3, 2, 4).astype(np.float32)
w_nhwc = ((i % 5) - 2).reshape(2, 3, 2, 4).astype(np.float32)
c = np.arange(4)
scale = tf.constant(1 + c / 4.0, tf.float32)
offset = tf.constant(c / 2.0 - 1, tf.float32)
mean = tf.constant(c / 8.0 - 0.25, tf.float32)
variance = tf.constant(0.5 + c / 4.0, tf.float32)
empty = tf.constant([], tf.float32)


def fmt(t):
    return ", ".join(f"{v:.9g}" for v in np.asarray(t).ravel())


cases = (
    ("train", dict(is_training=True), False, "NHWC"),
    ("train_avg", dict(is_training=True, exponential_avg_factor=0.3), True, "NHWC"),
    ("inference", dict(is_training=False), True, "NHWC"),
    ("train_nchw", dict(is_training=True), False, "NCHW"),
)
for name, kwargs, with_stats, data_format in cases:
    x = tf.constant(x_nhwc if data_format == "NHWC" else x_nhwc.transpose(0, 3, 1, 2))
    w = tf.constant(w_nhwc if data_format == "NHWC" else w_nhwc.transpose(0, 3, 1, 2))
    with tf.GradientTape() as tape:
        tape.watch([x, scale, offset])
        out = tf.raw_ops.FusedBatchNormV3(x=x, scale=scale, offset=offset, mean=mean if with_stats else empty,
                                          variance=variance if with_stats else empty, epsilon=0.001,
                                          data_format=data_format, **kwargs)
        loss = tf.reduce_sum(out[0] * w)
    dx, dscale, doffset = tape.gradient(loss, [x, scale, offset])
    for k, label in enumerate(("y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2")):
        print(f"{name} {label}: {fmt(out[k])}")
    print(f"{name} reserve_space_3 shape: {out[5].shape}")
    print(f"{name} dx: {fmt(dx)}")
    print(f"{name} dscale: {fmt(dscale)}")
    print(f"{name} doffset: {fmt(doffset)}")

# tf.compat.v1.nn.fused_batch_norm passes epsilon through (2.21 no longer raises it to 1.001e-5).
y_small = tf.compat.v1.nn.fused_batch_norm(tf.constant(x_nhwc), scale, offset, epsilon=1e-9)[0]
y_raw = tf.raw_ops.FusedBatchNormV3(x=tf.constant(x_nhwc), scale=scale, offset=offset, mean=empty, variance=empty,
                                    epsilon=1e-9)[0]
print(f"epsilon 1e-9 passed through: {bool(np.array_equal(y_small.numpy(), y_raw.numpy()))}")

x4 = tf.constant(x_nhwc)
for what, call in (
    ("rank 3", lambda: tf.raw_ops.FusedBatchNormV3(x=tf.zeros([3, 2, 4]), scale=scale, offset=offset, mean=empty,
                                                   variance=empty)),
    ("scale", lambda: tf.raw_ops.FusedBatchNormV3(x=x4, scale=scale[:3], offset=offset, mean=empty, variance=empty)),
    ("offset", lambda: tf.raw_ops.FusedBatchNormV3(x=x4, scale=scale, offset=offset[:2], mean=empty,
                                                   variance=empty)),
    ("inference mean", lambda: tf.raw_ops.FusedBatchNormV3(x=x4, scale=scale, offset=offset, mean=empty,
                                                           variance=variance, is_training=False)),
    ("inference variance", lambda: tf.raw_ops.FusedBatchNormV3(x=x4, scale=scale, offset=offset, mean=mean,
                                                               variance=empty, is_training=False)),
    ("avg without mean", lambda: tf.raw_ops.FusedBatchNormV3(x=x4, scale=scale, offset=offset, mean=empty,
                                                             variance=empty, exponential_avg_factor=0.5)),
    ("scale rank", lambda: tf.raw_ops.FusedBatchNormV3(x=x4, scale=tf.zeros([2, 2]), offset=offset, mean=empty,
                                                       variance=empty)),
    ("grad shapes", lambda: tf.raw_ops.FusedBatchNormGradV3(y_backprop=x4, x=tf.zeros([2, 3, 2, 5]), scale=scale,
                                                            reserve_space_1=mean, reserve_space_2=variance,
                                                            reserve_space_3=empty)),
):
    try:
        call()
        print(f"{what}: no error")
    except Exception as e:  # noqa: BLE001
        print(f"{what}: {type(e).__name__} {str(e).strip().splitlines()[0]}")
