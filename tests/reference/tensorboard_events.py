#!/usr/bin/env python3
"""TensorBoard's side of devtensor's event files (tests/unit/nn/fit_test.cpp, suite `tensorboard`).

Run with TensorFlow 2.21 (Keras 3.15) and TensorBoard 2.21 from PyPI:

    python3 -m venv /tmp/tf && /tmp/tf/bin/pip install tensorflow-cpu==2.21.0 tensorboard
    /tmp/tf/bin/python tests/reference/tensorboard_events.py [DEVTENSOR_EVENT_FILE]

Writes into tests/reference/tensorboard/:
- tensorflow.tfevents: what TensorFlow's own summary writer writes (a scalar, a histogram of 3
  buckets, a traced function's graph through tf.summary.graph); devtensor's reader must read it.
- keras_tags.txt: the runs, tags and steps Keras's TensorBoard callback writes for the fit below
  (histogram_freq=1, update_freq=2), one line per tag: `<run> <tag> <steps...>`.
- devtensor_read_by_tensorboard.txt (with an argument): TensorBoard's EventAccumulator reading a
  file devtensor wrote (the test's `DEVTENSOR_TENSORBOARD_FIXTURE` output, committed as
  devtensor.tfevents): `<tag> <plugin> <step> <values...>` per summary, then `node <name> <op>
  <device> <inputs...>` per graph node.
"""
import glob
import os
import shutil
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402
from tensorboard.backend.event_processing import plugin_event_accumulator as pea  # noqa: E402
from tensorboard.util import tensor_util  # noqa: E402

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tensorboard")


def number(v):
    return repr(float(v))


def tensorflow_file():
    folder = tempfile.mkdtemp()
    writer = tf.summary.create_file_writer(folder)

    @tf.function
    def f(x):
        return tf.matmul(x, x) + 1.0

    with writer.as_default():
        tf.summary.scalar("epoch_loss", 0.5, step=3)
        tf.summary.histogram("w/histogram", tf.constant([1.0, 2.0, 2.0, 5.0]), step=0, buckets=3)
        tf.summary.graph(f.get_concrete_function(tf.ones([2, 2])).graph)
    writer.close()
    (path,) = glob.glob(os.path.join(folder, "events.out.tfevents.*"))
    shutil.copy(path, os.path.join(HERE, "tensorflow.tfevents"))
    shutil.rmtree(folder)


def keras_tags():
    keras.utils.set_random_seed(1)
    x = np.linspace(-1, 1, 48, dtype="float32").reshape(16, 3)
    y = np.sum(x, axis=1, keepdims=True)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="relu"), keras.layers.Dense(1)])
    model.compile(loss="mse", optimizer=keras.optimizers.SGD(0.05))
    folder = tempfile.mkdtemp()
    model.fit(x, y, batch_size=4, epochs=2, verbose=0, shuffle=False, validation_data=(x[:8], y[:8]),
              callbacks=[keras.callbacks.TensorBoard(log_dir=folder, histogram_freq=1, update_freq=2)])
    lines = []
    for run in ("train", "validation"):
        acc = pea.EventAccumulator(os.path.join(folder, run))
        acc.Reload()
        for tag in sorted(acc.Tags()["tensors"]):
            lines.append(f"{run} {tag} " + " ".join(str(e.step) for e in acc.Tensors(tag)))
        lines.append(f"{run} graph {acc.Tags()['graph']}")
    shutil.rmtree(folder)
    with open(os.path.join(HERE, "keras_tags.txt"), "w") as out:
        out.write("\n".join(lines) + "\n")


def read_devtensor(path):
    acc = pea.EventAccumulator(path)
    acc.Reload()
    lines = []
    for tag in sorted(acc.Tags()["tensors"]):
        if tag == "__run_graph__":
            continue
        for e in acc.Tensors(tag):
            plugin = acc.SummaryMetadata(tag).plugin_data.plugin_name
            values = tensor_util.make_ndarray(e.tensor_proto).flatten()
            lines.append(f"{tag} {plugin} {e.step} " + " ".join(number(v) for v in values))
    for node in acc.Graph().node:
        lines.append(f"node {node.name} {node.op} {node.device} " + " ".join(node.input))
    with open(os.path.join(HERE, "devtensor_read_by_tensorboard.txt"), "w") as out:
        out.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    os.makedirs(HERE, exist_ok=True)
    tensorflow_file()
    keras_tags()
    if len(sys.argv) > 1:
        shutil.copy(sys.argv[1], os.path.join(HERE, "devtensor.tfevents"))
        read_devtensor(os.path.join(HERE, "devtensor.tfevents"))
