"""TensorFlow 2.21's figures for tests/unit/nn/layers_losses_test.cpp's BatchNormalization tests.

Run: python3 tests/reference/batch_norm.py (tensorflow-cpu==2.21.0, Keras 3). conv_training.py's
classifier with a BatchNormalization between the convolution and its relu (Conv2D(4, 3) ->
BatchNormalization -> Activation("relu") -> AveragePooling2D -> Flatten -> Dense(10)), the same
starting weights (gamma, beta and the moving statistics keep Keras's initial values), trained
3 epochs on the first 256 digits (batch 32, no shuffling, SGD 0.1), on one CPU and under
MirroredStrategy on two logical CPUs, where each replica normalises its 16 examples by their own
statistics and keeps its own moving statistics (a mirrored variable with aggregation NONE written
in a replica context). Prints each run's losses, its evaluation loss, and the moving mean and
variance the model holds after training (the first replica's under the strategy, as Keras saves).
Also one batch-normalised batch and its gradient (the layer alone, training=True).

Average pooling, not max: after the normalisation, the digits' blank windows hold values equal in
exact arithmetic that the two libraries round a last bit apart, and a max-pool's gradient then
goes to another position of the window (a figure 2e-3 off in the first step).

The one-CPU model, trained, is saved to tests/reference/keras_weights/batch_norm.weights.h5 (its
moving statistics are no longer the initial ones) with its predictions on the first 4 digits.
Given a weights file devtensor wrote (argv[1]), loads it into the same model and prints
TensorFlow's predictions with it instead.

Run: python3 tests/reference/batch_norm.py [devtensor.weights.h5]
"""
import os
import sys

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
import numpy as np
import tensorflow as tf

cpus = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2)
import keras

here = os.path.dirname(os.path.abspath(__file__))
digits = np.loadtxt(os.path.join(here, "..", "..", "examples", "data", "digits.csv"), delimiter=",")[:256]
x = (digits[:, :64] / 16.0).reshape(-1, 8, 8, 1).astype("float32")
y = digits[:, 64].astype("float32")


def classifier():
    model = keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Conv2D(4, 3), keras.layers.BatchNormalization(),
                              keras.layers.Activation("relu"), keras.layers.AveragePooling2D(2), keras.layers.Flatten(),
                              keras.layers.Dense(10)])
    for v in model.trainable_weights:
        if "batch_normalization" in v.path:
            continue
        n = int(np.prod(v.shape))
        i = np.arange(n)
        values = ((i * 7) % 19 - 9) / 45.0 if len(v.shape) > 1 else 0.01 * (i % 3)
        v.assign(values.reshape(v.shape).astype("float32"))
    model.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  optimizer=keras.optimizers.SGD(0.1))
    return model


def report(how, model):
    history = model.fit(x, y, batch_size=32, epochs=3, shuffle=False, verbose=0)
    print(how, "losses", ", ".join(f"{l:.9g}" for l in history.history["loss"]))
    print(how, "evaluate", f"{model.evaluate(x, y, batch_size=32, verbose=0):.9g}")
    bn = model.layers[1]
    print(how, "moving_mean", ", ".join(f"{v:.9g}" for v in np.asarray(bn.moving_mean)))
    print(how, "moving_variance", ", ".join(f"{v:.9g}" for v in np.asarray(bn.moving_variance)))


if len(sys.argv) > 1:
    model = classifier()
    model.load_weights(sys.argv[1])
    print("TensorFlow's predictions with devtensor's weights:", model.predict(x[:4], verbose=0).ravel().tolist())
    sys.exit(0)
one = classifier()
report("one", one)
one.summary()
one.save_weights(os.path.join(here, "keras_weights", "batch_norm.weights.h5"))
print("one predict", ", ".join(f"{v:.9g}" for v in one.predict(x[:4], verbose=0).ravel()))
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
with strategy.scope():
    mirrored = classifier()
report("mirrored", mirrored)
# evaluate splits each batch across the replicas, each with its own moving statistics (as
# devtensor's evaluate does): the "mirrored evaluate" line above.

# The layer alone: a [4, 3] batch (value i: ((i * 5) % 11 - 5) / 4), gamma 1.5, 0.5, 2, beta
# 0.1, -0.2, 0.3, momentum 0.9; the output, the loss sum(out * w) with w_i = (i % 4 - 1.5)'s
# gradient for the input, gamma and beta, and the moving statistics after the call.
layer = keras.layers.BatchNormalization(momentum=0.9)
xs = tf.constant(((np.arange(12) * 5) % 11 - 5).reshape(4, 3) / 4.0, dtype=tf.float32)
layer.build(xs.shape)
layer.gamma.assign([1.5, 0.5, 2.0])
layer.beta.assign([0.1, -0.2, 0.3])
w = tf.constant((np.arange(12) % 4 - 1.5).reshape(4, 3), dtype=tf.float32)
with tf.GradientTape() as tape:
    tape.watch(xs)
    out = layer(xs, training=True)
    loss = tf.reduce_sum(out * w)
dx, dgamma, dbeta = tape.gradient(loss, [xs, layer.gamma, layer.beta])
for name, t in (("out", out), ("dx", dx), ("dgamma", dgamma), ("dbeta", dbeta),
                ("moving_mean", layer.moving_mean), ("moving_variance", layer.moving_variance),
                ("inference", layer(xs, training=False))):
    print("layer", name, ", ".join(f"{v:.9g}" for v in np.asarray(t).ravel()))
