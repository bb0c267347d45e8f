"""TensorFlow 2.21's depthwise convolutions for tests/unit/ops/ops_values_test.cpp and
tests/unit/nn/weights_test.cpp.

Run: python3 tests/reference/depthwise.py [devtensor.weights.h5] (tensorflow-cpu==2.21.0, Keras 3).
TensorFlow's own kernels (TF_ENABLE_ONEDNN_OPTS=0, set below). The input is value i of [2, 5, 5, 3],
((i * 5) % 11 - 5) / 4; the filter value i of [3, 3, 3, 2], ((i * 7) % 13 - 6) / 8. Prints
tf.nn.depthwise_conv2d for three windows (SAME stride 1; VALID stride 2; explicit padding) and
the gradients of sum(y * v), v_i = (i % 5) - 2, for the input and the filter; and for each of
them the figures the test compares (ops_values_test's check_figure: the sum, and the sum of
value i times (i mod 7 + 1)). The ramps are multiples of 1/32, so every figure is exact.

Then a Keras model with a DepthwiseConv2D (Input (6, 6, 2) -> DepthwiseConv2D(3, depth_multiplier=2,
padding="same", relu) -> GlobalAveragePooling2D -> Dense(3), seeded): its weights go to
tests/reference/keras_weights/depthwise.weights.h5, with its predictions on value i of
[2, 6, 6, 2], ((i * 5) % 11 - 5) / 4; given a weights file devtensor wrote, TensorFlow's
predictions with it instead.
"""
import os
import sys

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
import numpy as np
import tensorflow as tf
import keras


def ramp(shape, a, b, c, d):
    i = np.arange(int(np.prod(shape)))
    return (((i * a) % b - c) / d).reshape(shape).astype("float32")


here = os.path.dirname(os.path.abspath(__file__))
x6 = ramp((2, 6, 6, 2), 5, 11, 5, 4.0)
normal = keras.initializers.RandomNormal
model = keras.Sequential([keras.Input((6, 6, 2)),
                          keras.layers.DepthwiseConv2D(3, depth_multiplier=2, padding="same", activation="relu",
                                                       depthwise_initializer=normal(seed=21), bias_initializer=normal(seed=22)),
                          keras.layers.GlobalAveragePooling2D(),
                          keras.layers.Dense(3, kernel_initializer=normal(seed=23), bias_initializer=normal(seed=24))])
if len(sys.argv) > 1:
    model.load_weights(sys.argv[1])
    print("TensorFlow's predictions with devtensor's weights:", model.predict(x6, verbose=0).ravel().tolist())
    sys.exit(0)

x = tf.constant(ramp((2, 5, 5, 3), 5, 11, 5, 4.0))
w = tf.constant(ramp((3, 3, 3, 2), 7, 13, 6, 8.0))
for name, strides, padding in (("same", [1, 1, 1, 1], "SAME"), ("valid2", [1, 2, 2, 1], "VALID"),
                               ("explicit", [1, 1, 1, 1], [[0, 0], [1, 2], [0, 1], [0, 0]])):
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([x, w])
        y = tf.nn.depthwise_conv2d(x, w, strides, padding)
        v = tf.constant(((np.arange(int(np.prod(y.shape))) % 5) - 2).reshape(y.shape).astype("float32"))
        loss = tf.reduce_sum(y * v)
    dx, dw = tape.gradient(loss, [x, w])
    print(name, "shape", list(y.shape))
    for what, t in (("y", y), ("dx", dx), ("dw", dw)):
        e = t.numpy().astype("float64").ravel()
        weighted = float(np.sum(e * (np.arange(e.size) % 7 + 1)))
        print(f'{{"depthwise {name} {what}", {{{", ".join(str(d) for d in t.shape)}}}, {float(e.sum())!r}, {weighted!r}}},')

model.save_weights(os.path.join(here, "keras_weights", "depthwise.weights.h5"))
model.summary()
print("depthwise predict", ", ".join(f"{e:.9g}" for e in model.predict(x6, verbose=0).ravel()))
