"""Keras 3 (TensorFlow 2.21) weights files for tests/unit/nn/weights_test.cpp.

Writes tests/reference/keras_weights/{branches,sequential}.weights.h5 from models with seeded
initial values and prints what TensorFlow predicts with them on fixed inputs (the test's
expected values). Given a weights file devtensor wrote (argv[1], the branches model), loads it
into the same TensorFlow model and prints TensorFlow's predictions with it instead.

Run: python3 tests/reference/weights.py [devtensor.weights.h5]   (needs tensorflow-cpu==2.21.0)
"""
import os
import sys

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np
import tensorflow as tf

keras = tf.keras
here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "keras_weights")


def branches():
    x = keras.Input(shape=(4,), name="x")
    hidden = keras.layers.Dense(5, activation="relu", name="hidden",
                                kernel_initializer=keras.initializers.RandomNormal(seed=1),
                                bias_initializer=keras.initializers.RandomNormal(seed=2))(x)
    dropped = keras.layers.Dropout(0.5, seed=3)(hidden)
    merged = keras.layers.Concatenate()([dropped, x])
    out = keras.layers.Dense(3, activation="softmax",
                             kernel_initializer=keras.initializers.RandomNormal(seed=4),
                             bias_initializer=keras.initializers.RandomNormal(seed=5))(merged)
    return keras.Model(x, out, name="branches")


def sequential():
    return keras.Sequential([
        keras.Input(shape=(2,)),
        keras.layers.Dense(3, activation="tanh", kernel_initializer=keras.initializers.RandomNormal(seed=6),
                           bias_initializer=keras.initializers.RandomNormal(seed=7)),
        keras.layers.Dense(1, kernel_initializer=keras.initializers.RandomNormal(seed=8)),
    ], name="seq")


x = np.array([[0.5, -1.0, 2.0, 0.25], [-0.5, 1.0, 0.0, 3.0]], dtype=np.float32)
xs = np.array([[1.0, -2.0], [0.5, 0.25], [0.0, 0.0]], dtype=np.float32)
np.set_printoptions(precision=9)
model = branches()
if len(sys.argv) > 1:
    model.load_weights(sys.argv[1])
    print("TensorFlow's predictions with devtensor's weights:", model.predict(x, verbose=0).tolist())
    sys.exit(0)
os.makedirs(here, exist_ok=True)
model.save_weights(os.path.join(here, "branches.weights.h5"))
print("branches", [v.path for v in model.weights])
print("branches predict", model.predict(x, verbose=0).ravel().tolist())
seq = sequential()
seq.save_weights(os.path.join(here, "sequential.weights.h5"))
print("sequential predict", seq.predict(xs, verbose=0).ravel().tolist())
