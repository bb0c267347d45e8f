"""Keras 3's mixed precision beyond Dense layers, for tests/unit/nn/layers_losses_test.cpp's
`mixed_precision` suite (TensorFlow 2.21, Keras 3, CPU).

Run: python3 tests/reference/mixed_precision_conv.py (the test holds the numbers it prints).
- `conv P ...`: under the global policy P, Conv2D(3, 3, "same", relu) -> BatchNormalization ->
  AveragePooling2D(2) -> MaxPooling2D(1) -> Flatten -> Dense(2, softmax, dtype "float32") built
  for inputs [8, 6, 6, 2] with the weights below; `dtypes` each layer's compute dtype;
  `predict` the sum of the outputs and of their squares; `fit` compile(SGD(0.1), "mse") and
  fit(epochs=3, batch_size=4, shuffle=False, run_eagerly=True): the epoch losses; `weights` the
  sums of the conv kernel, the BatchNormalization moving mean and the Dense kernel after it.
  Under mixed_float16 compile wraps the optimizer in a LossScaleOptimizer; `scale` its loss scale
  and iterations after the fit.
- `branches P ...`: under P (float32 too), a functional model: Rescaling(0.5, offset=0.25) ->
  ZeroPadding2D(1) -> DepthwiseConv2D(3, depth_multiplier=2, relu), added to Conv2D(4, 1) of the
  rescaled input, concatenated with the depthwise output -> MaxPooling2D(2) -> Reshape((9, 8)) ->
  Flatten -> Dense(2, softmax, float32); `reshape` the sum and the sum of squares of the Reshape's
  output (the 16-bit values), then as `conv`, its predictions called eagerly (predict's graph
  fuses 16-bit ops, rounding once). No biases in the convolutions and no average pool: Keras adds a
  bias with tf.nn.bias_add, whose CPU gradient (BiasAddGrad), like CPU AvgPool, adds in the 16-bit
  type, where devtensor adds in float32 (tests/reference/half_conv.py shows both).
- `mirrored ...`: the same under mixed_float16 in a MirroredStrategy over two logical CPUs
  (Keras splits each batch of 4 into two of 2), no BatchNormalization (each replica would
  normalise its own half), targets ×100 and LossScaleOptimizer(SGD(0.01), dynamic_growth_steps=2)
  so that steps overflow: after each batch the running loss, the loss scale and the iterations.
"""
import os

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np
import tensorflow as tf

cpus = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2)
import keras


def values(count, mul, mod, sub, div):
    i = np.arange(count, dtype=np.int64)
    return (((i * mul) % mod) - sub).astype(np.float32) / np.float32(div)


x = values(8 * 6 * 6 * 2, 37, 23, 11, 7).reshape(8, 6, 6, 2)
y = np.stack([values(8, 3, 5, 2, 4), 1 - values(8, 3, 5, 2, 4)], axis=1).astype(np.float32)
kernel = values(3 * 3 * 2 * 3, 13, 17, 8, 18).reshape(3, 3, 2, 3)
conv_bias = np.array([0.05, -0.1, 0.02], dtype=np.float32)
dense = values(27 * 2, 7, 11, 5, 20).reshape(27, 2)
dense_bias = np.array([0.1, -0.1], dtype=np.float32)


def f(v):
    return f"{float(v):.9g}"


def conv_model(policy, batch_norm=True):
    if tf.distribute.has_strategy():  # clear_session would drop the strategy's scope
        keras.mixed_precision.set_global_policy(policy)
    else:
        keras.backend.clear_session()
        keras.mixed_precision.set_global_policy(policy)
    layers = [keras.Input((6, 6, 2)), keras.layers.Conv2D(3, 3, padding="same", activation="relu")]
    if batch_norm:
        layers.append(keras.layers.BatchNormalization())
    layers += [keras.layers.AveragePooling2D(2), keras.layers.MaxPooling2D(1), keras.layers.Flatten(),
               keras.layers.Dense(2, activation="softmax", dtype="float32")]
    model = keras.Sequential(layers)
    weights = [kernel, conv_bias]
    if batch_norm:
        weights += [np.ones(3, np.float32), np.zeros(3, np.float32), np.zeros(3, np.float32), np.ones(3, np.float32)]
    model.set_weights(weights + [dense, dense_bias])
    return model


def fit_and_report(tag, policy, model, out, weights):
    """Prints the predictions' sums, then the eager fit's epoch losses and the sums of the weights
    at indices `weights` after it."""
    print(tag, policy, "predict", f(out.sum()), f((out * out).sum()))
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1), loss="mse", run_eagerly=True)
    history = model.fit(x, y, epochs=3, batch_size=4, shuffle=False, verbose=0)
    print(tag, policy, "fit", " ".join(f(v) for v in history.history["loss"]))
    ws = model.get_weights()
    print(tag, policy, "weights", " ".join(f(ws[i].sum()) for i in weights))


for policy in ("mixed_bfloat16", "mixed_float16"):
    model = conv_model(policy)
    print("conv", policy, "dtypes", " ".join(layer.compute_dtype for layer in model.layers))
    fit_and_report("conv", policy, model, model.predict(x, verbose=0), (0, 4, 6))
    if policy == "mixed_float16":
        print("conv", policy, "scale", type(model.optimizer).__name__, f(model.optimizer.dynamic_scale.numpy()),
              int(model.optimizer.iterations.numpy()))


def branches_model(policy):
    keras.backend.clear_session()
    keras.mixed_precision.set_global_policy(policy)
    inp = keras.Input((6, 6, 2))
    r = keras.layers.Rescaling(0.5, offset=0.25)(inp)
    dw = keras.layers.DepthwiseConv2D(3, depth_multiplier=2, activation="relu", use_bias=False)(
        keras.layers.ZeroPadding2D(1)(r))
    added = keras.layers.Add()([dw, keras.layers.Conv2D(4, 1, use_bias=False)(r)])
    pooled = keras.layers.MaxPooling2D(2)(keras.layers.Concatenate()([added, dw]))
    reshaped = keras.layers.Reshape((9, 8))(pooled)
    out = keras.layers.Dense(2, activation="softmax", dtype="float32")(keras.layers.Flatten()(reshaped))
    model = keras.Model(inp, out)
    model.set_weights([values(36, 13, 17, 8, 18).reshape(3, 3, 2, 2), values(8, 5, 7, 3, 6).reshape(1, 1, 2, 4),
                       values(144, 7, 11, 5, 20).reshape(72, 2), np.array([0.1, -0.1], np.float32)])
    return model, keras.Model(inp, reshaped)


for policy in ("float32", "mixed_bfloat16", "mixed_float16"):
    model, inner = branches_model(policy)
    print("branches", policy, "dtypes", " ".join(layer.compute_dtype for layer in model.layers))
    hidden = np.asarray(inner(x)).astype(np.float64)  # (eager: predict's graph fuses 16-bit ops)
    print("branches", policy, "reshape", f(hidden.sum()), f((hidden * hidden).sum()))
    fit_and_report("branches", policy, model, np.asarray(model(x)), (0, 1, 2))


class Record(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        o = self.model.optimizer
        print("mirrored", "batch", f(logs["loss"]), f(o.dynamic_scale.numpy()), int(o.iterations.numpy()))


keras.backend.clear_session()
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
with strategy.scope():
    model = conv_model("mixed_float16", batch_norm=False)
    model.compile(optimizer=keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD(learning_rate=0.01),
                                                                dynamic_growth_steps=2), loss="mse", run_eagerly=True)
model.fit(x, y * 100.0, epochs=5, batch_size=4, shuffle=False, verbose=0, callbacks=[Record()])
ws = model.get_weights()
print("mirrored", "weights", f(ws[0].sum()), f(ws[2].sum()))
