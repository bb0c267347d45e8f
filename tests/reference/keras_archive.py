"""Keras 3 `.keras` archives for tests/unit/nn/keras_archive_test.cpp, and the check that Keras
loads the archives devtensor saves.

Run: python3 tests/reference/keras_archive.py          (tensorflow-cpu==2.21.0, Keras 3.15.1)
     python3 tests/reference/keras_archive.py trained  (make_trained and make_frozen alone)
     python3 tests/reference/keras_archive.py mixed    (make_mixed alone)
     python3 tests/reference/keras_archive.py hostile  (Python alone)
     python3 tests/reference/keras_archive.py check A.keras B.json ...

The first form writes tests/reference/keras_archives/: four models Keras saves with
`model.save("x.keras")`, each beside x.json holding inputs and Keras's predictions for them:

- seq.keras: Sequential([Input((4,)), Dense(8, relu), Dropout(0.5), Dense(3, softmax)]), compiled
  with Adam and mse (the archive then holds a compile_config);
- two_heads.keras: a functional model of two inputs (a: 4, b: 3) and two outputs: Dense "da" on a,
  Concatenate with b, Dense "head" (softmax); and a Dense "shared" called twice (on b, and on a
  Dense of a), the two calls added, Dense "reg" (so a layer of two inbound nodes);
- conv.keras: a functional convolution network on 8x8x1 images: Rescaling, Conv2D (same, relu),
  BatchNormalization, MaxPooling2D, DepthwiseConv2D (depth_multiplier 2), ZeroPadding2D,
  AveragePooling2D, then GlobalAveragePooling2D, GlobalMaxPooling2D and Flatten concatenated,
  Reshape, Flatten, Dense(10), Activation(softmax);
- tutorial.keras: the Keras distributed-training tutorial's model, sized for 8x8x1 digits:
  Sequential([Conv2D(32, 3, relu, input_shape=(8, 8, 1)), MaxPooling2D(), Flatten(),
  Dense(64, relu), Dense(10)]).

Then (make_trained, make_mixed, make_frozen) compiled models Keras trained and saved mid-way:
trained_adam, trained_sgd, trained_mixed and trained_scaled (mixed_float16, with Keras's loss
scaling) and frozen; each function's docstring says what it holds.

Every weight is drawn at random (seed 7; BatchNormalization's moving variance positive), so a
loader that swaps two variables cannot pass. Inputs: the first 4 digits of
examples/data/digits.csv (images /16) and fixed random rows for the dense models.

Then (and alone, with `hostile`) keras_archives/hostile/: archives a loader must refuse, made from
seq.keras: a member named ../evil.txt, one named /tmp/evil.txt, the archive cut at 60 %, a file
that is not a zip archive, a config.json that is not JSON, a config naming LSTM and Embedding
layers, a config whose Dense is wider than the kernel the weights hold, a member twice, a
deflated member of 2 MiB from 2 KiB (a zip bomb), a member whose zip64 size says 2^40 bytes; and
deflated.keras, seq.keras re-zipped with DEFLATE, which must load.

The `check` form loads each archive devtensor wrote with keras.models.load_model, predicts on the
inputs of the matching .json and prints the largest difference from devtensor's predictions. The
test writes both where DEVTENSOR_KERAS_ARCHIVE_OUT points:
  DEVTENSOR_KERAS_ARCHIVE_OUT=/tmp/out build/cpu-release/tests/test_weights -t keras_archive
  python3 tests/reference/keras_archive.py check /tmp/out/devtensor_two_heads.keras \
      /tmp/out/devtensor_two_heads.json /tmp/out/devtensor_convolutional.keras /tmp/out/devtensor_convolutional.json
"""
import io
import json
import os
import struct
import sys
import zipfile

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"

here = os.path.dirname(os.path.abspath(__file__))
out_dir = os.path.join(here, "keras_archives")


def randomize(model, seed=7):
    import numpy as np
    rng = np.random.default_rng(seed)
    weights = []
    for v in model.weights:
        value = rng.normal(0.0, 0.5, size=v.shape).astype("float32")
        if "moving_variance" in v.path:
            value = np.abs(value) + 0.5
        weights.append(value)
    model.set_weights(weights)


def as_list(a):
    import numpy as np
    return np.asarray(a, dtype="float32").tolist()


def save(model, name, inputs):
    import numpy as np
    path = os.path.join(out_dir, name + ".keras")
    model.save(path)
    outputs = model.predict(inputs if len(inputs) > 1 else inputs[0], verbose=0)
    if not isinstance(outputs, (list, tuple)):
        outputs = [outputs]
    with open(os.path.join(out_dir, name + ".json"), "w") as f:
        json.dump({"inputs": [as_list(x) for x in inputs], "outputs": [as_list(y) for y in outputs]}, f)
    print(name, [o.shape for o in outputs])


def make():
    import numpy as np
    import keras
    from keras import layers
    os.makedirs(out_dir, exist_ok=True)
    rng = np.random.default_rng(11)
    digits = np.loadtxt(os.path.join(here, "..", "..", "examples", "data", "digits.csv"), delimiter=",")[:4]
    images = (digits[:, :64] / 16.0).reshape(-1, 8, 8, 1).astype("float32")

    keras.utils.clear_session()
    seq = keras.Sequential([keras.Input((4,)), layers.Dense(8, activation="relu"), layers.Dropout(0.5),
                            layers.Dense(3, activation="softmax")], name="seq")
    randomize(seq)
    seq.compile(optimizer="adam", loss="mse", metrics=["mae"])
    save(seq, "seq", [rng.normal(size=(5, 4)).astype("float32")])

    keras.utils.clear_session()
    a = keras.Input((4,), name="a")
    b = keras.Input((3,), name="b")
    merged = layers.Concatenate()([layers.Dense(8, activation="relu", name="da")(a), b])
    head = layers.Dense(2, activation="softmax", name="head")(merged)
    shared = layers.Dense(3, activation="tanh", name="shared")
    summed = layers.Add()([shared(b), shared(layers.Dense(3, name="project")(a))])
    reg = layers.Dense(1, name="reg")(summed)
    two = keras.Model([a, b], [head, reg], name="two_heads")
    randomize(two)
    save(two, "two_heads", [rng.normal(size=(5, 4)).astype("float32"), rng.normal(size=(5, 3)).astype("float32")])

    keras.utils.clear_session()
    x = keras.Input((8, 8, 1), name="image")
    h = layers.Rescaling(0.5, offset=0.25)(x)
    h = layers.Conv2D(4, 3, padding="same", activation="relu")(h)
    h = layers.BatchNormalization()(h)
    h = layers.MaxPooling2D()(h)
    h = layers.DepthwiseConv2D(3, padding="same", depth_multiplier=2)(h)
    h = layers.ZeroPadding2D(1)(h)
    h = layers.AveragePooling2D(2)(h)
    joined = layers.Concatenate()([layers.GlobalAveragePooling2D()(h), layers.GlobalMaxPooling2D()(h),
                                   layers.Flatten()(h)])
    joined = layers.Flatten()(layers.Reshape((8, 11))(joined))
    y = layers.Activation("softmax")(layers.Dense(10)(joined))
    conv = keras.Model(x, y, name="conv")
    randomize(conv)
    save(conv, "conv", [images])

    keras.utils.clear_session()
    tutorial = keras.Sequential([layers.Conv2D(32, 3, activation="relu", input_shape=(8, 8, 1)),
                                 layers.MaxPooling2D(), layers.Flatten(), layers.Dense(64, activation="relu"),
                                 layers.Dense(10)], name="tutorial")
    randomize(tutorial)
    save(tutorial, "tutorial", [images])


def trained(name, model, x, y, fit_epochs=2, resume_epochs=2):
    """Trains `model` (compiled) for fit_epochs on (x, y), saves it, then trains it resume_epochs
    more: name.json holds the data, the iterations at saving, Keras's history of the resumed
    epochs and its predictions after them."""
    import numpy as np
    xs = x if isinstance(x, list) else [x]
    ys = y if isinstance(y, list) else [y]
    model.fit(x, y, batch_size=4, epochs=fit_epochs, shuffle=False, verbose=0)
    model.save(os.path.join(out_dir, name + ".keras"))
    iterations = int(model.optimizer.iterations.numpy())
    history = model.fit(x, y, batch_size=4, epochs=resume_epochs, shuffle=False, verbose=0).history
    outputs = model.predict(x, verbose=0)
    if not isinstance(outputs, (list, tuple)):
        outputs = [outputs]
    with open(os.path.join(out_dir, name + ".json"), "w") as f:
        json.dump({"inputs": [as_list(v) for v in xs], "targets": [as_list(v) for v in ys],
                   "iterations": iterations, "history": {k: [float(e) for e in v] for k, v in history.items()},
                   "outputs": [as_list(o) for o in outputs]}, f)
    print(name, "iterations", iterations, {k: v[-1] for k, v in history.items()})


def make_trained():
    """Compiled models Keras trained and saved mid-way (their optimizer's state in the archive):
    - trained_adam.keras: Sequential Dense(8, relu), Dense(3, softmax), Adam with an
      ExponentialDecay schedule and AMSGrad, CategoricalCrossentropy(label_smoothing=0.1),
      metrics ["mae", "accuracy"];
    - trained_sgd.keras: a functional model of two outputs "a" (Dense 2) and "b" (Dense 1) over a
      Dense(6, tanh), SGD(0.1, momentum 0.9, nesterov), losses ["mse",
      BinaryCrossentropy(from_logits=True)], loss_weights [1.0, 0.5], metrics [["mae"], ["accuracy"]].
    Each trained 2 epochs of batches of 4 without shuffling, saved, then 2 epochs more."""
    import numpy as np
    import keras
    from keras import layers
    rng = np.random.default_rng(13)
    x = rng.normal(size=(12, 4)).astype("float32")
    labels = rng.integers(0, 3, size=12)
    y = np.eye(3, dtype="float32")[labels]

    keras.utils.clear_session()
    adam = keras.Sequential([keras.Input((4,)), layers.Dense(8, activation="relu"),
                             layers.Dense(3, activation="softmax")], name="trained_adam")
    randomize(adam)
    adam.compile(optimizer=keras.optimizers.Adam(keras.optimizers.schedules.ExponentialDecay(0.05, 3, 0.5),
                                                 amsgrad=True),
                 loss=keras.losses.CategoricalCrossentropy(label_smoothing=0.1), metrics=["mae", "accuracy"])
    trained("trained_adam", adam, x, y)

    keras.utils.clear_session()
    inputs = keras.Input((4,), name="x")
    hidden = layers.Dense(6, activation="tanh", name="hidden")(inputs)
    two = keras.Model(inputs, [layers.Dense(2, name="a")(hidden), layers.Dense(1, name="b")(hidden)],
                      name="trained_sgd")
    randomize(two)
    two.compile(optimizer=keras.optimizers.SGD(0.1, momentum=0.9, nesterov=True),
                loss=["mse", keras.losses.BinaryCrossentropy(from_logits=True)], loss_weights=[1.0, 0.5],
                metrics=[["mae"], ["accuracy"]])
    trained("trained_sgd", two, x, [rng.normal(size=(12, 2)).astype("float32"),
                                     (labels == 1).astype("float32").reshape(12, 1)])


def make_mixed():
    """Mixed-precision models Keras trained and saved mid-way, as make_trained's (2 epochs, saved, 2
    more), under the global policy mixed_float16:
    - trained_mixed.keras: Sequential Dense(8, relu), Dense(3, softmax, dtype float32),
      compile(SGD(0.1, momentum=0.9), categorical cross-entropy): Keras wraps the optimizer in a
      LossScaleOptimizer and saves the SGD as the compile config, the loss scale in the weights;
    - trained_scaled.keras: the same layers, compile(LossScaleOptimizer(Adam(0.02),
      dynamic_growth_steps=4), mse) on targets ×300, so that steps overflow and the scale moves.
    Each json also holds the loss scale and its step counter at saving and after the 2 more epochs.
    Compiled with run_eagerly=True (so the archive's compile config says so too)."""
    import numpy as np
    import keras
    from keras import layers
    rng = np.random.default_rng(19)
    x = rng.normal(size=(12, 4)).astype("float32")
    y = np.eye(3, dtype="float32")[rng.integers(0, 3, size=12)]
    for name, optimizer, loss, targets in (
            ("trained_mixed", lambda: keras.optimizers.SGD(0.1, momentum=0.9), "categorical_crossentropy", y),
            ("trained_scaled",
             lambda: keras.optimizers.LossScaleOptimizer(keras.optimizers.Adam(0.02), dynamic_growth_steps=4), "mse",
             y * 300.0)):
        keras.utils.clear_session()
        keras.mixed_precision.set_global_policy("mixed_float16")
        model = keras.Sequential([keras.Input((4,)), layers.Dense(8, activation="relu"),
                                  layers.Dense(3, activation="softmax", dtype="float32")], name=name)
        randomize(model)
        # Eagerly: Keras's traced fit fuses a 16-bit Dense's MatMul, BiasAdd and ReLU into one oneDNN
        # kernel on CPUs (one rounding), which devtensor's op-by-op steps do not.
        model.compile(optimizer=optimizer(), loss=loss, run_eagerly=True)
        trained(name, model, x, targets)
        o = model.optimizer
        with open(os.path.join(out_dir, name + ".json")) as f:
            record = json.load(f)
        record["scale_after"] = float(o.dynamic_scale.numpy())
        record["step_counter_after"] = int(o.step_counter.numpy())
        restored = keras.models.load_model(os.path.join(out_dir, name + ".keras"))
        record["scale_saved"] = float(restored.optimizer.dynamic_scale.numpy())
        record["step_counter_saved"] = int(restored.optimizer.step_counter.numpy())
        record["optimizer"] = type(restored.optimizer).__name__
        with open(os.path.join(out_dir, name + ".json"), "w") as f:
            json.dump(record, f)
        print(name, record["optimizer"], record["scale_saved"], record["step_counter_saved"], record["scale_after"],
              record["step_counter_after"])
    keras.mixed_precision.set_global_policy("float32")


def make_frozen():
    """frozen.keras: transfer learning as Keras users write it. Sequential Input(4), Dense(6, relu)
    "base" and BatchNormalization "bn" frozen (trainable=False: no updates, and the BN layer runs
    in inference mode while training), Dense(3, softmax) "head"; Adam(0.05), categorical
    cross-entropy. Saved untrained, then trained 3 epochs of batches of 4 without shuffling:
    frozen.json holds the data, Keras's history, its summary's trainable count and its weights
    after training."""
    import numpy as np
    import keras
    from keras import layers
    rng = np.random.default_rng(17)
    x = rng.normal(size=(12, 4)).astype("float32")
    y = np.eye(3, dtype="float32")[rng.integers(0, 3, size=12)]
    keras.utils.clear_session()
    model = keras.Sequential([keras.Input((4,)), layers.Dense(6, activation="relu", name="base"),
                              layers.BatchNormalization(name="bn"), layers.Dense(3, activation="softmax", name="head")],
                             name="frozen")
    randomize(model)
    model.get_layer("base").trainable = False
    model.get_layer("bn").trainable = False
    model.compile(optimizer=keras.optimizers.Adam(0.05), loss="categorical_crossentropy")
    model.save(os.path.join(out_dir, "frozen.keras"))
    trainable = int(sum(np.prod(v.shape) for v in model.trainable_weights))
    history = model.fit(x, y, batch_size=4, epochs=3, shuffle=False, verbose=0).history
    with open(os.path.join(out_dir, "frozen.json"), "w") as f:
        json.dump({"inputs": [as_list(x)], "targets": [as_list(y)], "trainable_params": trainable,
                   "history": {k: [float(e) for e in v] for k, v in history.items()},
                   "weights": [as_list(w) for w in model.get_weights()]}, f)
    print("frozen", trainable, history)


def check(pairs):
    import numpy as np
    import keras
    worst = 0.0
    for archive, expected in zip(pairs[::2], pairs[1::2]):
        model = keras.models.load_model(archive)
        with open(expected) as f:
            data = json.load(f)
        array = lambda v: (np.asarray(v["values"], dtype="float32").reshape(v["shape"]) if isinstance(v, dict)
                           else np.asarray(v, dtype="float32"))
        inputs = [array(x) for x in data["inputs"]]
        outputs = model.predict(inputs if len(inputs) > 1 else inputs[0], verbose=0)
        if not isinstance(outputs, (list, tuple)):
            outputs = [outputs]
        diff = max(float(np.max(np.abs(np.asarray(o) - array(e))))
                   for o, e in zip(outputs, data["outputs"]))
        worst = max(worst, diff)
        print(f"{archive}: Keras {keras.__version__} loaded it ({type(model).__name__}, {len(model.layers)} layers); "
              f"largest difference from devtensor's predictions {diff:.3g}")
        if "history" in data:  # compiled: resume training as devtensor did, then compare
            print(f"  compiled: {type(model.optimizer).__name__}, iterations {int(model.optimizer.iterations.numpy())}, "
                  f"loss {model.loss}")
            targets = [array(y) for y in data["targets"]]
            history = model.fit(inputs if len(inputs) > 1 else inputs[0], targets if len(targets) > 1 else targets[0],
                                batch_size=4, epochs=2, shuffle=False, verbose=0).history
            trained = max(abs(float(a) - float(b)) for key in data["history"]
                          for a, b in zip(history[key], data["history"][key]))
            outputs = model.predict(inputs if len(inputs) > 1 else inputs[0], verbose=0)
            outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
            after = max(float(np.max(np.abs(np.asarray(o) - array(e))))
                        for o, e in zip(outputs, data["resumed_outputs"]))
            print(f"  2 more epochs in Keras: largest difference from devtensor's history {trained:.3g}, "
                  f"predictions after them {after:.3g}")
            worst = max(worst, trained, after)
    return worst


def members_of(path):
    with zipfile.ZipFile(path) as z:
        return [(info.filename, z.read(info.filename)) for info in z.infolist()]


def write_archive(path, members, compression=zipfile.ZIP_STORED):
    with zipfile.ZipFile(path, "w", compression) as z:
        for name, data in members:
            z.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data, compress_type=compression)


def huge_member(path, name, data, declared):
    """A one-member archive, written by hand, whose zip64 sizes say the member holds `declared` bytes."""
    crc = zipfile.crc32(data) & 0xFFFFFFFF
    name_bytes = name.encode()
    extra = struct.pack("<HHQQ", 1, 16, declared, len(data))
    local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 45, 0, 0, 0, 0x21, crc, 0xFFFFFFFF, 0xFFFFFFFF,
                        len(name_bytes), len(extra)) + name_bytes + extra
    central = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45, 45, 0, 0, 0, 0x21, crc, 0xFFFFFFFF, 0xFFFFFFFF,
                          len(name_bytes), len(extra), 0, 0, 0, 0, 0) + name_bytes + extra
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 1, 1, len(central), len(local) + len(data), 0)
    with open(path, "wb") as f:
        f.write(local + data + central + end)


def hostile():
    """Archives a loader must refuse (or, for deflated.keras, read), made from seq.keras; no Keras needed."""
    folder = os.path.join(out_dir, "hostile")
    os.makedirs(folder, exist_ok=True)
    seq = members_of(os.path.join(out_dir, "seq.keras"))
    config = json.loads(dict(seq)["config.json"])
    path = lambda name: os.path.join(folder, name)
    write_archive(path("traversal.keras"), seq + [("../evil.txt", b"written outside")])
    write_archive(path("absolute.keras"), seq + [("/tmp/evil.txt", b"written outside")])
    with open(os.path.join(out_dir, "seq.keras"), "rb") as f:
        whole = f.read()
    with open(path("truncated.keras"), "wb") as f:
        f.write(whole[: len(whole) * 6 // 10])
    with open(path("not_a_zip.keras"), "wb") as f:
        f.write(b"{\"this\": \"is JSON, not a zip archive\"}\n")
    replace = lambda name, data: [(n, data if n == name else d) for n, d in seq]
    write_archive(path("not_json.keras"), replace("config.json", b"{\"module\": \"keras\", \"class_name\": "))
    unknown = json.loads(json.dumps(config))
    layers_ = unknown["config"]["layers"]
    layers_[1]["class_name"] = "LSTM"
    layers_[3]["class_name"] = "Embedding"
    write_archive(path("unknown_layers.keras"), replace("config.json", json.dumps(unknown).encode()))
    wider = json.loads(json.dumps(config))
    wider["config"]["layers"][1]["config"]["units"] = 9  # the file's kernel is (4, 8)
    write_archive(path("wrong_kernel.keras"), replace("config.json", json.dumps(wider).encode()))
    with zipfile.ZipFile(path("duplicate.keras"), "w") as z:
        for name, data in seq + [("config.json", dict(seq)["config.json"])]:
            z.writestr(name, data)
    write_archive(path("bomb.keras"), [(n, d) for n, d in seq if n != "model.weights.h5"] +
                  [("model.weights.h5", bytes(2 << 20))], zipfile.ZIP_DEFLATED)
    unknown_compile = json.loads(json.dumps(config))
    unknown_compile["compile_config"]["optimizer"]["class_name"] = "RMSprop"
    unknown_compile["compile_config"]["loss"] = "huber"
    unknown_compile["compile_config"]["metrics"] = ["mae", "auc"]
    write_archive(path("unknown_compile.keras"), replace("config.json", json.dumps(unknown_compile).encode()))
    clipped = json.loads(json.dumps(config))
    clipped["compile_config"]["optimizer"]["config"]["clipnorm"] = 1.0
    clipped["compile_config"]["optimizer"]["config"]["weight_decay"] = 0.004
    write_archive(path("clipped_optimizer.keras"), replace("config.json", json.dumps(clipped).encode()))
    huge_member(path("huge_member.keras"), "config.json", b"{}", 1 << 40)
    write_archive(path("deflated.keras"), seq, zipfile.ZIP_DEFLATED)
    print("hostile archives:", sorted(os.listdir(folder)))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "check":
        sys.exit(0 if check(sys.argv[2:]) <= 1e-6 else 1)
    if len(sys.argv) > 1 and sys.argv[1] == "hostile":
        hostile()
        sys.exit(0)
    if len(sys.argv) > 1 and sys.argv[1] == "mixed":
        make_mixed()
        sys.exit(0)
    if len(sys.argv) > 1 and sys.argv[1] == "trained":
        make_trained()
        make_frozen()
        sys.exit(0)
    make()
    make_trained()
    make_mixed()
    make_frozen()
    hostile()
