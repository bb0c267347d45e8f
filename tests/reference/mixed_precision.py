"""Keras 3's mixed precision policies, for tests/unit/nn/layers_losses_test.cpp's
`mixed_precision` suite (TensorFlow 2.21, Keras 3, CPU).

Run: python3 tests/reference/mixed_precision.py (the test holds the numbers it prints).
A Dense(6, relu) -> Dense(4, tanh) -> Dense(3, sigmoid, dtype "float32") model built for inputs
[8, 5] with the weights below, under the global policy P. Lines:
- `loop P step loss w0 b0 w2`: a custom loop of 5 steps, SGD(learning_rate=0.5), the mean squared
  error in float32; under mixed_float16 through LossScaleOptimizer (initial scale 2^15). The loss,
  then the sums of the first kernel, first bias and last kernel after the step (%.9g).
- `fit P epoch loss`: model.compile(SGD(0.5), "mse") and fit(epochs=4, batch_size=4,
  shuffle=False) from the same weights under mixed_bfloat16: the epoch's mean loss.
- `auto batch loss scale iterations`: under mixed_float16, compile(SGD(0.5), "mse") wraps the
  optimizer in a LossScaleOptimizer; fit(epochs=3, batch_size=4): after each batch the epoch's
  running loss, the loss scale and the iterations.
- `overflow batch ...`: targets 100x, a linear float32 output, LossScaleOptimizer(SGD(0.001),
  dynamic_growth_steps=3), fit(epochs=6, batch_size=2): steps that overflow float16 are skipped.
The fits run eagerly (run_eagerly=True): TensorFlow's graph mode on CPUs fuses MatMul, BiasAdd and
the activation of 16-bit layers into one oneDNN kernel that rounds once (Keras's traced fit then
differs from its eager one by ~1e-4); devtensor's traced and eager steps both compute op by op.
One difference stays: TensorFlow's CPU BiasAddGrad (Keras's Dense adds its bias with
tf.nn.bias_add) sums bfloat16 gradients in bfloat16; devtensor sums 16-bit floats in float32.
- `dtypes P layer compute variable output`: each layer's compute and variable dtypes, and the
  first layer's output dtype.
"""
import os

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np
import tensorflow as tf
import keras

x = ((np.arange(40, dtype=np.float32).reshape(8, 5) * 37 % 23) - 11.0) / 7.0
y = ((np.arange(24, dtype=np.float32).reshape(8, 3) * 11 % 7)) / 7.0
w0 = ((np.arange(30, dtype=np.float32).reshape(5, 6) * 13 % 17) - 8.0) / 9.0
b0 = (np.arange(6, dtype=np.float32) - 2.5) / 10.0
w1 = ((np.arange(24, dtype=np.float32).reshape(6, 4) * 7 % 11) - 5.0) / 6.0
b1 = (np.arange(4, dtype=np.float32) - 1.5) / 8.0
w2 = ((np.arange(12, dtype=np.float32).reshape(4, 3) * 5 % 13) - 6.0) / 7.0
b2 = np.array([0.1, -0.2, 0.3], dtype=np.float32)


def model_for(policy):
    keras.backend.clear_session()
    keras.mixed_precision.set_global_policy(policy)
    model = keras.Sequential([
        keras.Input((5,)),
        keras.layers.Dense(6, activation="relu"),
        keras.layers.Dense(4, activation="tanh"),
        keras.layers.Dense(3, activation="sigmoid", dtype="float32"),
    ])
    model.set_weights([w0, b0, w1, b1, w2, b2])
    return model


def f(v):
    return f"{float(v):.9g}"


for policy in ("mixed_float16", "mixed_bfloat16", "float32"):
    model = model_for(policy)
    for layer in model.layers:
        print("dtypes", policy, layer.name, layer.compute_dtype, layer.variable_dtype, layer(tf.constant(x)).dtype.name
              if layer is model.layers[0] else "-")
    optimizer = keras.optimizers.SGD(learning_rate=0.5)
    if policy == "mixed_float16":
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    for step in range(5):
        with tf.GradientTape() as tape:
            pred = tf.cast(model(tf.constant(x), training=True), tf.float32)
            loss = tf.reduce_mean(tf.square(pred - y))
            scaled = optimizer.scale_loss(loss) if policy == "mixed_float16" else loss
        grads = tape.gradient(scaled, model.trainable_variables)
        optimizer.apply(grads, model.trainable_variables)
        ws = model.get_weights()
        print("loop", policy, step, f(loss), f(ws[0].sum()), f(ws[1].sum()), f(ws[4].sum()))

model = model_for("mixed_bfloat16")
model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.5), loss="mse", run_eagerly=True)
history = model.fit(x, y, epochs=4, batch_size=4, shuffle=False, verbose=0)
for epoch, loss in enumerate(history.history["loss"]):
    print("fit", "mixed_bfloat16", epoch, f(loss))
ws = model.get_weights()
print("fitweights", "mixed_bfloat16", f(ws[0].sum()), f(ws[1].sum()), f(ws[4].sum()))


class Record(keras.callbacks.Callback):
    def __init__(self, tag):
        super().__init__()
        self.tag = tag

    def on_train_batch_end(self, batch, logs=None):
        o = self.model.optimizer
        print(self.tag, "batch", f(logs["loss"]), f(o.dynamic_scale.numpy()), int(o.iterations.numpy()))


def model_with_output(last):
    keras.backend.clear_session()
    keras.mixed_precision.set_global_policy("mixed_float16")
    model = keras.Sequential([
        keras.Input((5,)),
        keras.layers.Dense(6, activation="relu"),
        keras.layers.Dense(4, activation="tanh"),
        keras.layers.Dense(3, activation=last, dtype="float32"),
    ])
    model.set_weights([w0, b0, w1, b1, w2, b2])
    return model


model = model_with_output("sigmoid")
model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.5), loss="mse", run_eagerly=True)
print("wrapped", type(model.optimizer).__name__)
model.fit(x, y, epochs=3, batch_size=4, shuffle=False, verbose=0, callbacks=[Record("auto")])
ws = model.get_weights()
print("auto", "weights", f(ws[0].sum()), f(ws[1].sum()), f(ws[4].sum()))

model = model_with_output(None)
model.compile(optimizer=keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD(learning_rate=0.001),
                                                            dynamic_growth_steps=3), loss="mse", run_eagerly=True)
model.fit(x, y * 100.0, epochs=6, batch_size=2, shuffle=False, verbose=0, callbacks=[Record("overflow")])
ws = model.get_weights()
print("overflow", "weights", f(ws[0].sum()), f(ws[1].sum()), f(ws[4].sum()))
