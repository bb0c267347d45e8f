"""TensorFlow 2.21's bit patterns for float16 and bfloat16: tests/unit/ops/edge_values_test.cpp's
`half_precision` suite reads them from tests/reference/half_precision.txt.

Run: python3 tests/reference/half_precision.py > tests/reference/half_precision.txt
(tensorflow-cpu==2.21.0, on the CPU). One line per case:

    <op> <input dtype> <output dtype> <input bits, comma-separated> <output bits, comma-separated>

Bits are hexadecimal, as wide as the dtype (float64 16 digits, float32 8, float16 and bfloat16 4,
int32 8 as two's complement, bool 1 digit). Edge values: zeros, signed zeros, ties (which must
round to even), the largest finite values and the first that overflow, subnormals, infinities,
NaNs with payloads and signs.
"""
import os
import struct

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np
import tensorflow as tf

NP = {"float64": np.float64, "float32": np.float32, "float16": np.float16, "bfloat16": tf.bfloat16.as_numpy_dtype,
      "int32": np.int32, "int64": np.int64, "bool": np.bool_}
UINT = {8: np.uint64, 4: np.uint32, 2: np.uint16, 1: np.uint8}
TF = {"float64": tf.float64, "float32": tf.float32, "float16": tf.float16, "bfloat16": tf.bfloat16,
      "int32": tf.int32, "int64": tf.int64, "bool": tf.bool}


def bits(array, dtype):
    a = np.asarray(array).astype(NP[dtype]) if dtype != "bfloat16" else np.asarray(array)
    width = np.dtype(NP[dtype]).itemsize
    raw = a.reshape(-1).view(UINT[width]) if dtype != "bool" else a.reshape(-1).astype(np.uint8)
    digits = 1 if dtype == "bool" else 2 * width
    return ",".join(f"{int(v):0{digits}x}" for v in raw)


def from_bits(values, dtype):
    width = np.dtype(NP[dtype]).itemsize
    return np.array(values, dtype=UINT[width]).view(NP[dtype])


def emit(op, in_dtype, out_dtype, inputs, output):
    print(op, in_dtype, out_dtype, ";".join(bits(x, in_dtype) for x in inputs), bits(output.numpy(), out_dtype))


f32 = [0x00000000, 0x80000000, 0x3F800000, 0xBF800000, 0x477FE000, 0x477FEFFF, 0x477FF000, 0x47800000,
       0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7FC00001, 0x7F800001, 0x7FA00000, 0x38800000,
       0x33800000, 0x33000000, 0x33000001, 0x33C00000, 0x34200000, 0x3F801000, 0x3F803000, 0x3F801001,
       0x3DCCCCCD, 0x3EAAAAAB, 0x322BCC77, 0x7F7FFFFF, 0x00000001, 0x00800000, 0x3F808000, 0x3F818000,
       0x3F808001, 0x7F7F8000, 0x7F7F7FFF, 0x007FFFFF, 0xC77FF000, 0x387FC000, 0x387FE000]
f64 = [0x0000000000000000, 0x3FF0020000000001, 0x3FF0020000000000, 0x3FF0010000000001, 0x40EFFDFFFFFFFFFF,
       0x40EFFE0000000000, 0x7FF0000000000000, 0x7FF8000000000000, 0x3E70000000000000, 0x3E60000000000001,
       0x3FF0100000000001, 0x3FF0080000000001, 0x47EFFFFFE0000000]
i32 = [0, 1, -1, 2049, 2051, 65504, 65519, 65520, 65536, 257, 259, 16777217, 2147483647, -2147483648]

for target in ("float16", "bfloat16"):
    x = from_bits(f32, "float32")
    emit("Cast", "float32", target, [x], tf.cast(tf.constant(x), TF[target]))
    x = from_bits(f64, "float64")
    emit("Cast", "float64", target, [x], tf.cast(tf.constant(x), TF[target]))
    x = np.array(i32, dtype=np.int32)
    emit("Cast", "int32", target, [x], tf.cast(tf.constant(x), TF[target]))

h16 = [0x0000, 0x8000, 0x3C00, 0xBC00, 0x7BFF, 0xFBFF, 0x0001, 0x8001, 0x03FF, 0x0400, 0x7C00, 0xFC00, 0x7E00,
       0xFE00, 0x7E01, 0x7C01, 0x3555, 0x4248, 0x5BFF, 0x6400]
b16 = [0x0000, 0x8000, 0x3F80, 0xBF80, 0x7F7F, 0xFF7F, 0x0001, 0x8001, 0x007F, 0x0080, 0x7F80, 0xFF80, 0x7FC0,
       0xFFC0, 0x7FC1, 0x7F81, 0x3EAB, 0x4049, 0x4B80, 0x4B81]
for source, table in (("float16", h16), ("bfloat16", b16)):
    x = tf.constant(from_bits(table, source))
    for target in ("float32", "float64", "int32", "bool", "bfloat16" if source == "float16" else "float16"):
        emit("Cast", source, target, [x.numpy()], tf.cast(x, TF[target]))


def pairs(dtype, a_bits, b_bits):
    return tf.constant(from_bits(a_bits, dtype)), tf.constant(from_bits(b_bits, dtype))


binary = {"AddV2": tf.math.add, "Sub": tf.math.subtract, "Mul": tf.math.multiply, "RealDiv": tf.math.divide,
          "Maximum": tf.math.maximum, "Minimum": tf.math.minimum}
unary = {"Neg": tf.math.negative, "Abs": tf.math.abs, "Square": tf.math.square, "Sqrt": tf.math.sqrt,
         "Exp": tf.math.exp, "Log": tf.math.log, "Relu": tf.nn.relu, "Sigmoid": tf.math.sigmoid,
         "Tanh": tf.math.tanh, "Softplus": tf.math.softplus}
a16 = [0x3C00, 0x7BFF, 0x3C00, 0x0001, 0x3C00, 0x3555, 0x7E00, 0x8000, 0x4200, 0xC500, 0x0400, 0x7C00, 0x3C01]
c16 = [0x1000, 0x7BFF, 0x3C00, 0x8001, 0x4200, 0x4248, 0x3C00, 0x0000, 0x0000, 0x4500, 0x3800, 0x7C00, 0x3BFF]
a_b = [0x3F80, 0x7F7F, 0x3F80, 0x0001, 0x3F80, 0x3EAB, 0x7FC0, 0x8000, 0x4040, 0xC0A0, 0x0080, 0x7F80, 0x3F81]
c_b = [0x3B80, 0x7F7F, 0x3F80, 0x8001, 0x4040, 0x4049, 0x3F80, 0x0000, 0x0000, 0x40A0, 0x3F00, 0x7F80, 0x3F7F]
u16 = [0x0000, 0x8000, 0x3C00, 0xBC00, 0x3800, 0x4000, 0x4900, 0xC900, 0x0001, 0x7BFF, 0x7C00, 0xFC00, 0x7E00,
       0x3555, 0x2E66, 0xB4CD, 0x5640, 0xCC00]
u_b = [0x0000, 0x8000, 0x3F80, 0xBF80, 0x3F00, 0x4000, 0x4120, 0xC120, 0x0001, 0x7F7F, 0x7F80, 0xFF80, 0x7FC0,
       0x3EAB, 0x3DCD, 0xBE9A, 0x42C8, 0xC180]
for dtype, (a_bits, b_bits, u_bits) in (("float16", (a16, c16, u16)), ("bfloat16", (a_b, c_b, u_b))):
    a, b = pairs(dtype, a_bits, b_bits)
    for name, fn in binary.items():
        emit(name, dtype, dtype, [a.numpy(), b.numpy()], fn(a, b))
    u = tf.constant(from_bits(u_bits, dtype))
    for name, fn in unary.items():
        emit(name, dtype, dtype, [u.numpy()], fn(u))
    # Reductions accumulate in float32: 65504 + 65504 - 65504 stays finite, 2048 + 1 + 1 is 2050.
    big = 0x7BFF if dtype == "float16" else 0x7F7F
    r = tf.constant(from_bits([big, big, big ^ 0x8000], dtype))
    emit("Sum", dtype, dtype, [r.numpy()], tf.reduce_sum(r))
    r = tf.constant(from_bits([0x6800, 0x3C00, 0x3C00] if dtype == "float16" else [0x4580, 0x3F80, 0x3F80], dtype))
    emit("Sum", dtype, dtype, [r.numpy()], tf.reduce_sum(r))
    emit("Mean", dtype, dtype, [r.numpy()], tf.reduce_mean(r))
    emit("Max", dtype, dtype, [r.numpy()], tf.reduce_max(r))
    # MatMul [1, 3] x [3, 1]: the same sums through a dot product.
    m = tf.reshape(r, [1, 3])
    emit("MatMul", dtype, dtype, [r.numpy(), np.ones(3, dtype=NP[dtype])], tf.matmul(m, tf.ones([3, 1], TF[dtype])))
