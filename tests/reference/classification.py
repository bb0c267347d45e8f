# Prints TensorFlow 2.21 / Keras 3.15's numbers that tests/unit/nn/classification_test.cpp holds:
# softmax and log-softmax, the categorical cross-entropies and accuracy metrics on fixed inputs,
# fit/evaluate histories with "accuracy", and what Keras does with empty data and identifiers.
# Run with TensorFlow (CPU): python3 -m venv /tmp/tf && /tmp/tf/bin/pip install tensorflow-cpu==2.21.0
import numpy as np
import tensorflow as tf
import keras

np.set_printoptions(precision=9)
x = tf.constant([[1, 2, 3], [1000, 1001, 1002]], tf.float32)
print("softmax", tf.nn.softmax(x).numpy(), "log_softmax", tf.nn.log_softmax(x).numpy(),
      "softmax axis 0", tf.nn.softmax(x, axis=0).numpy())
v = tf.Variable(tf.constant([[0.1, -0.3], [2.0, 0.5]], tf.float64))
with tf.GradientTape() as t:
    y = tf.reduce_sum(tf.nn.softmax(v) * tf.constant([[1., 2.], [3., 4.]], tf.float64))
print("softmax gradient", t.gradient(y, v).numpy())
for op in (tf.raw_ops.Softmax, tf.raw_ops.LogSoftmax):
    try:
        op(logits=tf.constant(1.0))
    except Exception as e:  # Softmax: oneDNN's AbortedError; LogSoftmax: "logits must have >= 1 dimension, got []"
        print(type(e).__name__, e)
print("softmax of NaN / -inf / +inf rows", tf.nn.softmax(tf.constant([[np.nan, 1.0], [-np.inf, -np.inf], [np.inf, 1.0]])).numpy())

yt = np.array([[0, 1, 0], [0, 0, 1]], np.float32)
yp = np.array([[0.05, 0.95, 0], [0.1, 0.8, 0.1]], np.float32)
lg = np.array([[2.0, -1.0, 0.5], [0.3, 0.2, 4.0]], np.float32)
cce = keras.losses.CategoricalCrossentropy
scce = keras.losses.SparseCategoricalCrossentropy
print("cce", cce()(yt, yp).numpy(), "label_smoothing 0.1", cce(label_smoothing=0.1)(yt, yp).numpy())
print("cce from logits", cce(from_logits=True)(yt, lg).numpy(),
      "label_smoothing 0.2", cce(from_logits=True, label_smoothing=0.2)(yt, lg).numpy())
print("cce per example", cce(reduction=None)(yt, yp).numpy())
print("scce", scce()(np.array([1, 2]), yp).numpy(), "[n, 1]", scce()(np.array([[1], [2]]), yp).numpy(),
      "from logits", scce(from_logits=True)(np.array([1, 2]), lg).numpy())
try:
    scce(from_logits=True)(np.array([1, 5]), lg)
except Exception as e:
    print(type(e).__name__, e)
m = keras.metrics.CategoricalAccuracy(); m.update_state(yt, yp); print("categorical accuracy", m.result().numpy())
m = keras.metrics.SparseCategoricalAccuracy(); m.update_state(np.array([1, 0]), yp); print("sparse accuracy", m.result().numpy())
m = keras.metrics.BinaryAccuracy(); m.update_state(np.array([[1], [0], [1]]), np.array([[0.7], [0.6], [0.2]]))
print("binary accuracy", m.result().numpy())

# fit / evaluate with metrics=["accuracy"] (no shuffling, batch 2, SGD's default learning rate).
x = np.array([[0.], [1.], [2.], [3.]], np.float32)
classes = np.array([0, 1, 2, 1], np.float32)
for loss, labels in (("sparse_categorical_crossentropy", classes),
                     ("categorical_crossentropy", np.eye(3, dtype=np.float32)[classes.astype(int)])):
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(3, activation="softmax", kernel_initializer="zeros")])
    model.compile(loss=loss, optimizer="sgd", metrics=["accuracy"])
    history = model.fit(x, labels, epochs=2, batch_size=2, verbose=2, shuffle=False)
    print(loss, {k: [float(v) for v in vs] for k, vs in history.history.items()},
          model.evaluate(x, labels, verbose=0, return_dict=True))
model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1, activation="sigmoid", kernel_initializer="ones")])
model.compile(loss="binary_crossentropy", optimizer="sgd", metrics=["accuracy"])
history = model.fit(x, np.array([[0], [1], [1], [0]], np.float32), epochs=2, batch_size=2, verbose=0, shuffle=False)
print("binary_crossentropy", {k: [float(v) for v in vs] for k, vs in history.history.items()})

# validation_split=0.25 of 10 examples (the first 7 train, the last 3 validate), and the same as validation_data.
xv = np.arange(10, dtype=np.float32).reshape(10, 1) / 10
yv = (xv > 0.45).astype(np.float32)
for kwargs, (xt, yt_) in (({"validation_split": 0.25}, (xv, yv)), ({"validation_data": (xv[7:], yv[7:])}, (xv[:7], yv[:7]))):
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1, activation="sigmoid", kernel_initializer="ones")])
    model.compile(loss="binary_crossentropy", optimizer="sgd", metrics=["accuracy"])
    history = model.fit(xt, yt_, epochs=2, batch_size=4, verbose=2, shuffle=False, **kwargs)
    print(list(kwargs), {k: [float(v) for v in vs] for k, vs in history.history.items()})
try:
    model.fit(xv, yv, epochs=1, verbose=0, validation_split=1.0)
except Exception as e:
    print(type(e).__name__, e)

# Keras 3.15 warns and returns empty logs for empty data (devtensor raises: see training_loop.hpp).
model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
model.compile(loss="mse", optimizer="sgd")
print("fit on no examples:", model.fit(np.zeros((0, 1)), np.zeros((0, 1)), verbose=0).history,
      "evaluate:", model.evaluate(np.zeros((0, 1)), np.zeros((0, 1)), verbose=0))
for name in ["mse", "MSE", "mean_squared_error", "MeanSquaredError", "bce", "BCE", "binary_crossentropy",
             "categorical_crossentropy", "SparseCategoricalCrossentropy", "foo"]:
    try:
        print(name, "->", keras.losses.get(name))
    except Exception as e:
        print(name, "!!", e)
for name in ["sgd", "ADAM", "rmsprop_typo"]:
    try:
        print(name, "->", type(keras.optimizers.get(name)).__name__)
    except Exception as e:
        print(name, "!!", e)
