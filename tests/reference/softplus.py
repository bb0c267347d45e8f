# Prints TensorFlow's softplus and its gradient for the inputs of ops_values/softplus_matches_tensorflow
# (tests/unit/ops/ops_values_test.cpp), which holds the printed values. Run with TensorFlow 2.21
# (CPU): python3 -m venv /tmp/tf && /tmp/tf/bin/pip install tensorflow-cpu==2.21.0
import tensorflow as tf

x_values = [-100.0, -40.0, -20.0, -14.0, -13.0, -1.0, -1e-3, 0.0, 1e-3, 0.5, 1.0, 13.0, 14.0, 20.0, 40.0, 100.0]
for dtype in (tf.float32, tf.float64):
    x = tf.constant(x_values, dtype=dtype)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.math.softplus(x)
    print(dtype.name, "softplus", [repr(float(v)) for v in y.numpy()])
    print(dtype.name, "gradient", [repr(float(v)) for v in tape.gradient(y, x).numpy()])
print("nan, inf, -inf:", tf.math.softplus(tf.constant([float("nan"), float("inf"), -float("inf")])).numpy())
