"""TensorFlow 2.21's float16 and bfloat16 convolutions, pools, bias and softmax on the CPU, for
tests/unit/ops/edge_values_test.cpp's `half_precision/windowed_ops_in_sixteen_bits_as_tensorflows`.

Run: python3 tests/reference/half_conv.py > tests/reference/half_conv.txt
Each line: `op dtype bits...`, the output's elements as 16-bit patterns (hex), row-major. The
inputs are float32 values cast to the 16-bit type (round to nearest even):
  x[i] = ((i·37 mod 23) − 11) / 7      NHWC [2, 5, 5, 3]
  w[i] = ((i·13 mod 17) − 8) / 9       HWIO [3, 3, 3, 4]
  d[i] = ((i·7 mod 11) − 5) / 6        an output gradient of the op's output shape
  b[i] = (i − 1.5) / 8                 [4]
  s[i] = ((i·29 mod 31) − 15) / 4      softmax logits [4, 7]
  f[i] = ((i·13 mod 17) − 8) / 9       depthwise filter [3, 3, 3, 2]
Ops: Conv2D (SAME, stride 1; VALID, stride 2), Conv2DBackpropInput and Conv2DBackpropFilter of the
SAME one, BiasAdd and BiasAddGrad over [2, 5, 5, 4], MaxPool and AvgPool (2x2 stride 2 VALID; 3x3
stride 1 SAME) and their gradients, DepthwiseConv2dNative (SAME, stride 1; VALID, stride 2) and
the backprops of the SAME one, Softmax and LogSoftmax.
"""
import os

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np
import tensorflow as tf


def values(count, mul, mod, sub, div):
    i = np.arange(count, dtype=np.int64)
    return (((i * mul) % mod) - sub).astype(np.float32) / np.float32(div)


def bits(t):
    return " ".join(f"{int(v):04x}" for v in tf.bitcast(t, tf.uint16).numpy().reshape(-1))


for name, dtype in (("float16", tf.float16), ("bfloat16", tf.bfloat16)):
    x = tf.cast(values(150, 37, 23, 11, 7).reshape(2, 5, 5, 3), dtype)
    w = tf.cast(values(108, 13, 17, 8, 9).reshape(3, 3, 3, 4), dtype)
    b = tf.cast((np.arange(4, dtype=np.float32) - 1.5) / 8, dtype)
    s = tf.cast(values(28, 29, 31, 15, 4).reshape(4, 7), dtype)

    def d(shape):
        return tf.cast(values(int(np.prod(shape)), 7, 11, 5, 6).reshape(shape), dtype)

    def out(op, t):
        print(op, name, bits(t))

    same = tf.raw_ops.Conv2D(input=x, filter=w, strides=[1, 1, 1, 1], padding="SAME")
    out("Conv2D_same", same)
    out("Conv2D_valid2", tf.raw_ops.Conv2D(input=x, filter=w, strides=[1, 2, 2, 1], padding="VALID"))
    dy = d(same.shape)
    out("Conv2DBackpropInput", tf.raw_ops.Conv2DBackpropInput(input_sizes=x.shape, filter=w, out_backprop=dy,
                                                             strides=[1, 1, 1, 1], padding="SAME"))
    out("Conv2DBackpropFilter", tf.raw_ops.Conv2DBackpropFilter(input=x, filter_sizes=w.shape, out_backprop=dy,
                                                               strides=[1, 1, 1, 1], padding="SAME"))
    out("BiasAdd", tf.raw_ops.BiasAdd(value=dy, bias=b))
    out("BiasAddGrad", tf.raw_ops.BiasAddGrad(out_backprop=dy))
    for pool, ksize, stride, padding in (("2", 2, 2, "VALID"), ("3", 3, 1, "SAME")):
        k, st = [1, ksize, ksize, 1], [1, stride, stride, 1]
        mx = tf.raw_ops.MaxPool(input=x, ksize=k, strides=st, padding=padding)
        av = tf.raw_ops.AvgPool(value=x, ksize=k, strides=st, padding=padding)
        out("MaxPool" + pool, mx)
        out("AvgPool" + pool, av)
        out("MaxPoolGrad" + pool, tf.raw_ops.MaxPoolGrad(orig_input=x, orig_output=mx, grad=d(mx.shape), ksize=k,
                                                         strides=st, padding=padding))
        out("AvgPoolGrad" + pool, tf.raw_ops.AvgPoolGrad(orig_input_shape=x.shape, grad=d(av.shape), ksize=k,
                                                         strides=st, padding=padding))
    dwf = tf.cast(values(54, 13, 17, 8, 9).reshape(3, 3, 3, 2), dtype)
    dws = tf.raw_ops.DepthwiseConv2dNative(input=x, filter=dwf, strides=[1, 1, 1, 1], padding="SAME")
    out("DepthwiseConv2dNative", dws)
    out("DepthwiseConv2dNative_valid2", tf.raw_ops.DepthwiseConv2dNative(input=x, filter=dwf, strides=[1, 2, 2, 1],
                                                                         padding="VALID"))
    ddw = d(dws.shape)
    out("DepthwiseConv2dNativeBackpropInput", tf.raw_ops.DepthwiseConv2dNativeBackpropInput(
        input_sizes=x.shape, filter=dwf, out_backprop=ddw, strides=[1, 1, 1, 1], padding="SAME"))
    out("DepthwiseConv2dNativeBackpropFilter", tf.raw_ops.DepthwiseConv2dNativeBackpropFilter(
        input=x, filter_sizes=dwf.shape, out_backprop=ddw, strides=[1, 1, 1, 1], padding="SAME"))
    out("Softmax", tf.raw_ops.Softmax(logits=s))
    out("LogSoftmax", tf.raw_ops.LogSoftmax(logits=s))
