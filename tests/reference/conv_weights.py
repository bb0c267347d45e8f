"""Keras 3 (TensorFlow 2.21) weights file of a convolutional model for tests/unit/nn/weights_test.cpp.

Writes tests/reference/keras_weights/conv.weights.h5 (seeded initial values) and prints what
TensorFlow predicts with it on the test's input (value i of [2, 5, 5, 2], row-major, is
((i * 5) % 11 - 5) / 4). Given a weights file devtensor wrote (argv[1]), loads it into the same
model and prints TensorFlow's predictions with it instead.

Run: python3 tests/reference/conv_weights.py [devtensor.weights.h5]   (needs tensorflow-cpu==2.21.0)
"""
import os
import sys

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np
import keras

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "keras_weights")
normal = keras.initializers.RandomNormal
model = keras.Sequential([
    keras.Input((5, 5, 2)),
    keras.layers.Conv2D(3, 2, activation="relu", kernel_initializer=normal(seed=11), bias_initializer=normal(seed=12)),
    keras.layers.MaxPooling2D(2, strides=1, padding="same"),
    keras.layers.Conv2D(2, (2, 1), strides=2, kernel_initializer=normal(seed=13), bias_initializer=normal(seed=14)),
    keras.layers.GlobalAveragePooling2D(),
    keras.layers.Dense(2, kernel_initializer=normal(seed=15), bias_initializer=normal(seed=16)),
], name="conv")
i = np.arange(2 * 5 * 5 * 2)
x = (((i * 5) % 11 - 5) / 4.0).reshape(2, 5, 5, 2).astype("float32")
if len(sys.argv) > 1:
    model.load_weights(sys.argv[1])
    print("TensorFlow's predictions with devtensor's weights:", model.predict(x, verbose=0).ravel().tolist())
    sys.exit(0)
model.save_weights(os.path.join(here, "conv.weights.h5"))
print("conv", [v.path for v in model.weights])
print("conv predict", model.predict(x, verbose=0).ravel().tolist())
