"""TensorFlow 2.21's losses for tests/unit/nn/layers_losses_test.cpp's convolutional training test.

Run: python3 tests/reference/conv_training.py (tensorflow-cpu==2.21.0, Keras 3). A small
convolutional classifier (Conv2D(4, 3, relu) -> MaxPooling2D -> Flatten -> Dense(10)) starts
from weights the test builds alike (value i of a variable, row-major: ((i * 7) % 19 - 9) / 45 for
kernels, 0.01 * (i % 3) for biases), trains 3 epochs on the first 256 digits (batch 32, no
shuffling, SGD 0.1, SparseCategoricalCrossentropy from logits), and prints the loss of each epoch
and the evaluation loss after.

TensorFlow's own CPU kernels (TF_ENABLE_ONEDNN_OPTS=0, set below) make the figures: blank pixels
give convolution outputs equal to the bias, so max-pool windows hold equal maxima, and oneDNN's
MaxPoolGrad gives their gradient to another of them than TensorFlow's kernel (and devtensor's:
the first in row-major order) does; with oneDNN the losses differ from these by 1.5e-5.
"""
import os

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
import numpy as np
import keras

here = os.path.dirname(os.path.abspath(__file__))
digits = np.loadtxt(os.path.join(here, "..", "..", "examples", "data", "digits.csv"), delimiter=",")[:256]
x = (digits[:, :64] / 16.0).reshape(-1, 8, 8, 1).astype("float32")
y = digits[:, 64].astype("float32")

model = keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Conv2D(4, 3, activation="relu"),
                          keras.layers.MaxPooling2D(), keras.layers.Flatten(), keras.layers.Dense(10)])
for v in model.weights:
    n = int(np.prod(v.shape))
    i = np.arange(n)
    values = ((i * 7) % 19 - 9) / 45.0 if len(v.shape) > 1 else 0.01 * (i % 3)
    v.assign(values.reshape(v.shape).astype("float32"))
model.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              optimizer=keras.optimizers.SGD(0.1))
history = model.fit(x, y, batch_size=32, epochs=3, shuffle=False, verbose=0)
print("losses", ", ".join(f"{l:.9g}" for l in history.history["loss"]))
print("evaluate", f"{model.evaluate(x, y, batch_size=32, verbose=0):.9g}")
