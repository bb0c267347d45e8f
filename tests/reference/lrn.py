"""TensorFlow 2.21's LRN and LRNGrad for tests/unit/ops/ops_values_test.cpp.

Run: python3 tests/reference/lrn.py (tensorflow-cpu==2.21.0). The input is value i of
[2, 2, 1, 7], row-major: ((i * 5) % 11 - 5) / 4. Prints tf.nn.lrn's output for the defaults
(depth_radius 5, bias 1, alpha 1, beta 0.5), the CIFAR-10 tutorial's (4, 1.0, 0.001 / 9, 0.75),
and (2, 2, 0.5, 1); the gradient of sum(lrn(x) * w), w_i = (i % 3) - 1, for each; and the error
texts for a rank-3 input and mismatched LRNGrad shapes.
"""
import os

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np
import tensorflow as tf

i = np.arange(2 * 2 * 1 * 7)
x = tf.constant((((i * 5) % 11 - 5) / 4.0).reshape(2, 2, 1, 7), dtype=tf.float32)
w = tf.constant(((i % 3) - 1).reshape(2, 2, 1, 7), dtype=tf.float32)
for name, kwargs in (("defaults", {}), ("cifar10", dict(depth_radius=4, bias=1.0, alpha=0.001 / 9.0, beta=0.75)),
                     ("beta1", dict(depth_radius=2, bias=2.0, alpha=0.5, beta=1.0))):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.nn.lrn(x, **kwargs)
        loss = tf.reduce_sum(y * w)
    dx = tape.gradient(loss, x)
    print(name, "lrn", ", ".join(f"{v:.9g}" for v in y.numpy().ravel()))
    print(name, "grad", ", ".join(f"{v:.9g}" for v in dx.numpy().ravel()))
for what, call in (("rank 3", lambda: tf.nn.lrn(tf.zeros([2, 3, 4]))),
                   ("radius", lambda: tf.nn.lrn(x, depth_radius=-1)),
                   ("grad shapes", lambda: tf.raw_ops.LRNGrad(input_grads=x, input_image=tf.zeros([2, 2, 1, 6]),
                                                              output_image=x))):
    try:
        call()
        print(what, "no error")
    except Exception as e:  # noqa: BLE001
        print(what, type(e).__name__, str(e).strip())
