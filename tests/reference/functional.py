"""Keras 3 (TensorFlow 2.21) reference for tests/unit/nn/functional_test.cpp and
tests/unit/distribute/training_test.cpp: the seeds' functional model under
MirroredStrategy, summaries of functional models, layer orders and error messages.

Run: COLUMNS=200 python3 tests/reference/functional.py   (needs tensorflow-cpu==2.21.0)
"""
import os

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np
import tensorflow as tf

keras = tf.keras
cpus = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2)

print("== seeds: functional Dense(1) under MirroredStrategy over two CPUs")
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
with strategy.scope():
    inputs = keras.layers.Input(shape=(1,))
    predictions = keras.layers.Dense(1, kernel_initializer=keras.initializers.Constant(0.5))(inputs)
    model = keras.models.Model(inputs=inputs, outputs=predictions)
    model.compile(loss="mse", optimizer=keras.optimizers.SGD(0.2))
model.summary(line_length=76)
history = model.fit(np.ones((100, 1)), np.ones((100, 1)), epochs=2, batch_size=10, verbose=0)
print("epoch losses", ["%.6f" % l for l in history.history["loss"]])
print("evaluate", model.evaluate(np.ones((100, 1)), np.ones((100, 1)), verbose=0))
print("kernel", model.layers[1].kernel.numpy().ravel(), "bias", model.layers[1].bias.numpy())
print("names", model.name, [l.name for l in model.layers])

print("== branches, at 108 and 76 columns")
keras.backend.clear_session()
x = keras.Input(shape=(4,), name="x")
hidden = keras.layers.Dense(8, activation="relu", name="hidden")(x)
skip = keras.layers.Dense(8, name="skip")(x)
merged = keras.layers.Concatenate()([keras.layers.Add()([hidden, skip]), x])
branches = keras.Model(x, keras.layers.Dense(1)(merged))
branches.summary(line_length=108)
branches.summary(line_length=76)
print([l.name for l in branches.layers])

print("== two inputs, a shared layer, two outputs")
a = keras.Input(shape=(3,))
b = keras.Input(shape=(3,))
shared = keras.layers.Dense(2)
ya, yb = shared(a), shared(b)
two = keras.Model([a, b], [ya, keras.layers.Add()([ya, yb])])
two.summary(line_length=108)
print([l.name for l in two.layers], two.name)
print("one node of the shared layer: sequential-like")
keras.Model(a, ya).summary(line_length=88)

print("== a model inside a model")
inner_in = keras.Input(shape=(2,))
inner = keras.Model(inner_in, keras.layers.Dense(3)(inner_in), name="inner")
outer_in = keras.Input(shape=(2,))
outer = keras.Model(outer_in, keras.layers.Dense(1)(inner(outer_in)))
outer.summary(line_length=88)

print("== Sequential")
keras.backend.clear_session()
seq = keras.Sequential([keras.Input(shape=(3,)), keras.layers.Dense(4, activation="tanh"), keras.layers.Dense(1)])
seq.summary(line_length=88)
print("== a long name, Flatten and Activation, a fixed batch")
keras.backend.clear_session()
i = keras.Input(shape=(2, 3), batch_size=5)
f = keras.layers.Flatten()(i)
d = keras.layers.Dense(1000, name="a_rather_long_layer_name_for_the_column")(f)
keras.Model(i, keras.layers.Activation("softmax")(d)).summary(line_length=76)

print("== errors")
for make in [
    lambda: keras.layers.Add()(ya),
    lambda: keras.layers.Add()([ya, keras.Input(shape=(4,))]),
    lambda: keras.layers.Concatenate()([keras.Input(shape=(3, 2)), keras.Input(shape=(4, 3))]),
    lambda: keras.Model(a, yb),
    lambda: two([np.ones((2, 3)), np.ones((2, 4))]),
]:
    try:
        make()
    except Exception as e:
        print(type(e).__name__, str(e).splitlines()[0])

print("== two inputs, two outputs: per-output losses, loss_weights, per-output metrics")


def two_heads():
    a = keras.Input((3,), name="a")
    b = keras.Input((2,), name="b")
    h = keras.layers.Concatenate()([a, b])
    reg = keras.layers.Dense(1, name="reg", kernel_initializer="ones")(h)
    cls = keras.layers.Dense(3, activation="softmax", name="cls", kernel_initializer="ones")(h)
    model = keras.Model([a, b], [reg, cls])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss=["mse", "categorical_crossentropy"],
                  loss_weights=[1.0, 0.5], metrics=[[], ["accuracy"]])
    return model


rows = np.arange(12)
xa = np.array([[((i * 3 + j) % 7 - 3) / 4 for j in range(3)] for i in rows], "float32")
xb = np.array([[((i * 2 + j) % 5 - 2) / 3 for j in range(2)] for i in rows], "float32")
y1 = np.array([[(i % 4 - 1.5) / 2] for i in rows], "float32")
y2 = np.eye(3, dtype="float32")[rows % 3]
for where in ["one device", "MirroredStrategy over two CPUs"]:
    if where == "one device":
        model = two_heads()
    else:
        with strategy.scope():
            model = two_heads()
    history = model.fit([xa, xb], [y1, y2], epochs=2, batch_size=4, shuffle=False, verbose=0)
    print(where)
    for key in sorted(history.history):
        print("  history", key, ["%.7f" % v for v in history.history[key]])
    print("  evaluate", {k: "%.7f" % v for k, v in model.evaluate([xa, xb], [y1, y2], verbose=0, return_dict=True).items()})
    reg, cls = model.predict([xa[:2], xb[:2]], verbose=0)
    print("  predict reg", reg.ravel().tolist(), "cls", cls.ravel().tolist())

print("== summary after training: Keras's Optimizer params line")
for optimizer in [keras.optimizers.SGD(0.2), keras.optimizers.SGD(0.2, momentum=0.9), keras.optimizers.Adam(0.01)]:
    i = keras.Input((3,))
    model = keras.Model(i, keras.layers.Dense(2)(i))
    model.compile(loss="mse", optimizer=optimizer)
    model.fit(np.ones((4, 3)), np.ones((4, 2)), verbose=0)
    model.summary(line_length=76)
