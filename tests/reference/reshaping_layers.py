"""Keras 3's figures for tests/unit/nn/layers_losses_test.cpp's reshaping-layers case.

Run: python3 tests/reference/reshaping_layers.py (tensorflow-cpu==2.21.0, Keras 3). It prints the
model's summary, then the prediction's shape, Σy and Σ y[i]·(i mod 7 + 1) over its row-major
elements. Weights and inputs follow the formulas the test repeats.
"""
import os

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import keras
import numpy as np

L = keras.layers
model = keras.Sequential([
    keras.Input((8, 8, 1)),
    L.Rescaling(1 / 16, offset=-0.5, name="scale"),
    L.ZeroPadding2D(((1, 0), (0, 2)), name="pad"),
    L.Conv2D(2, 3, name="conv"),
    L.Reshape((-1,), name="flat"),
    L.Reshape((7, 16), name="rows"),
], name="reshaping")
for v in model.trainable_variables:
    n = int(np.prod(v.shape))
    if len(v.shape) > 1:
        values = [((i * 7) % 19 - 9) / 45.0 for i in range(n)]
    else:
        values = [0.01 * (i % 3) for i in range(n)]
    v.assign(np.array(values, dtype=np.float32).reshape(v.shape))
model.summary()
x = (np.arange(128) % 17).astype(np.float32).reshape(2, 8, 8, 1)
y = np.asarray(model.predict(x, verbose=0), dtype=np.float64)
v = y.reshape(-1)
weights = (np.arange(v.size) % 7 + 1).astype(np.float64)
print(y.shape, f"{v.sum():.9g}", f"{(v * weights).sum():.9g}")
# Training through the layers: SGD(0.1) on mean squared error towards y / 2, one batch of 2.
model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1), loss="mse")
history = model.fit(x, y / 2, epochs=3, batch_size=2, shuffle=False, verbose=0)
print(", ".join(f"{loss:.9g}" for loss in history.history["loss"]))
