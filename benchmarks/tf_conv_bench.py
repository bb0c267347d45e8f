"""TensorFlow 2.21's side of benchmarks/RESULTS.md's convolution figures (CPU, one thread).

Run: python3 benchmarks/tf_conv_bench.py (tensorflow-cpu==2.21.0). Times Conv2D and its two
backprops at batch 32, 32x32x64 -> 64 filters 3x3 SAME (float32, NHWC, oneDNN as shipped), and
DepthwiseConv2dNative and its backprops (batch 32, 32x32x64, 3x3, multiplier 1, SAME), LRN and
LRNGrad at the CIFAR-10 tutorial's norm1 ([32, 12, 12, 64], radius 4), FusedBatchNormV3 (training)
and FusedBatchNormGradV3 at [32, 32, 32, 64], and
the "Distributed training with Keras" model's training step at batch 64 of 28x28x1 as
model.fit runs it (tf.function of train_on_batch), each the median of 15 calls after 3 warm-ups;
prints milliseconds.
"""
import os
import statistics
import time

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import tensorflow as tf

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)


def median_ms(f, reps=15):
    for _ in range(3):
        f()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


x = tf.random.normal([32, 32, 32, 64], seed=1)
w = tf.random.normal([3, 3, 64, 64], seed=2)
dy = tf.random.normal([32, 32, 32, 64], seed=3)
fwd = median_ms(lambda: tf.nn.conv2d(x, w, 1, "SAME").numpy())
bwd_input = median_ms(lambda: tf.raw_ops.Conv2DBackpropInput(
    input_sizes=[32, 32, 32, 64], filter=w, out_backprop=dy, strides=[1, 1, 1, 1], padding="SAME").numpy())
bwd_filter = median_ms(lambda: tf.raw_ops.Conv2DBackpropFilter(
    input=x, filter_sizes=[3, 3, 64, 64], out_backprop=dy, strides=[1, 1, 1, 1], padding="SAME").numpy())
print(f"tensorflow {tf.__version__}: fwd {fwd:.2f} ms, bwd_input {bwd_input:.2f} ms, "
      f"bwd_filter {bwd_filter:.2f} ms, total {fwd + bwd_input + bwd_filter:.2f} ms")

xd = tf.random.normal([32, 32, 32, 64], seed=1)
wd = tf.random.normal([3, 3, 64, 1], seed=2)
dfwd = median_ms(lambda: tf.nn.depthwise_conv2d(xd, wd, [1, 1, 1, 1], "SAME").numpy())
dbwd_input = median_ms(lambda: tf.raw_ops.DepthwiseConv2dNativeBackpropInput(
    input_sizes=[32, 32, 32, 64], filter=wd, out_backprop=dy, strides=[1, 1, 1, 1], padding="SAME").numpy())
dbwd_filter = median_ms(lambda: tf.raw_ops.DepthwiseConv2dNativeBackpropFilter(
    input=xd, filter_sizes=[3, 3, 64, 1], out_backprop=dy, strides=[1, 1, 1, 1], padding="SAME").numpy())
print(f"depthwise 3x3 x1: fwd {dfwd:.2f} ms, bwd_input {dbwd_input:.2f} ms, bwd_filter {dbwd_filter:.2f} ms")
xl = tf.random.normal([32, 12, 12, 64], seed=1)
dyl = tf.random.normal([32, 12, 12, 64], seed=3)
lrn_args = dict(depth_radius=4, bias=1.0, alpha=0.001 / 9.0, beta=0.75)
yl = tf.nn.lrn(xl, **lrn_args)
lrn = median_ms(lambda: tf.nn.lrn(xl, **lrn_args).numpy())
lrn_grad = median_ms(lambda: tf.raw_ops.LRNGrad(input_grads=dyl, input_image=xl, output_image=yl, **lrn_args).numpy())
print(f"lrn [32, 12, 12, 64] radius 4: LRN {lrn:.3f} ms, LRNGrad {lrn_grad:.3f} ms")
empty = tf.constant([], tf.float32)
bn_scale = tf.random.normal([64], seed=4)
bn_offset = tf.random.normal([64], seed=5)
bn = tf.raw_ops.FusedBatchNormV3(x=x, scale=bn_scale, offset=bn_offset, mean=empty, variance=empty, epsilon=0.001)
bn_fwd = median_ms(lambda: tf.raw_ops.FusedBatchNormV3(x=x, scale=bn_scale, offset=bn_offset, mean=empty,
                                                       variance=empty, epsilon=0.001)[0].numpy())
bn_bwd = median_ms(lambda: tf.raw_ops.FusedBatchNormGradV3(y_backprop=dy, x=x, scale=bn_scale, reserve_space_1=bn[3],
                                                           reserve_space_2=bn[4], reserve_space_3=bn[5],
                                                           epsilon=0.001)[0].numpy())
print(f"fused batch norm [32, 32, 32, 64]: FusedBatchNormV3 {bn_fwd:.3f} ms, FusedBatchNormGradV3 {bn_bwd:.3f} ms")

import keras
import numpy as np

model = keras.Sequential([keras.Input((28, 28, 1)), keras.layers.Conv2D(32, 3, activation="relu"),
                          keras.layers.MaxPooling2D(), keras.layers.Flatten(),
                          keras.layers.Dense(64, activation="relu"), keras.layers.Dense(10)])
model.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), optimizer=keras.optimizers.Adam(),
              metrics=["accuracy"])
images = np.random.default_rng(1).uniform(size=(64, 28, 28, 1)).astype("float32")
labels = (np.arange(64) * 7 % 10).astype("float32")
step = median_ms(lambda: model.train_on_batch(images, labels))
print(f"tutorial model train_on_batch (batch 64): {step:.3f} ms")
