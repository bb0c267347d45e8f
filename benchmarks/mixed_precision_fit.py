"""The models of benchmarks/mixed_precision_fit.cpp in Keras 3 (TensorFlow 2.21, CPU, one thread):
milliseconds per fit step under float32 and mixed_bfloat16 (add "mixed_float16" to the list: about
4 s a step on a CPU). Run: python3 benchmarks/mixed_precision_fit.py"""
import os, time
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, tensorflow as tf, keras
tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)
x = (np.arange(2048 * 256).reshape(2048, 256) * 37 % 23 / 23.0 - 0.5).astype(np.float32)
y = (np.arange(2048 * 10).reshape(2048, 10) * 11 % 7 / 7.0).astype(np.float32)
for run in ("float32", "mixed_bfloat16"):
    policy = run.split("/")[0]
    keras.backend.clear_session()
    keras.mixed_precision.set_global_policy(policy)
    m = keras.Sequential([keras.Input((256,)), keras.layers.Dense(512, activation="relu"),
                          keras.layers.Dense(512, activation="relu"), keras.layers.Dense(10, dtype="float32")])
    m.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse", auto_scale_loss="/" not in run)
    m.fit(x, y, epochs=2, batch_size=256, shuffle=False, verbose=0)
    t = time.perf_counter(); m.fit(x, y, epochs=3, batch_size=256, shuffle=False, verbose=0)
    print(f"{run:24s} {(time.perf_counter() - t) / 24 * 1000:8.2f} ms/step ({type(m.optimizer).__name__})")
images = (np.arange(512 * 28 * 28).reshape(512, 28, 28, 1) * 37 % 23 / 23.0).astype(np.float32)
labels = np.eye(10, dtype=np.float32)[np.arange(512) * 7 % 10]
for policy in ("float32", "mixed_bfloat16"):
    keras.backend.clear_session()
    keras.mixed_precision.set_global_policy(policy)
    m = keras.Sequential([keras.Input((28, 28, 1)), keras.layers.Conv2D(32, 3, activation="relu"),
                          keras.layers.MaxPooling2D(), keras.layers.Flatten(), keras.layers.Dense(64, activation="relu"),
                          keras.layers.Dense(10, dtype="float32")])
    m.compile(optimizer=keras.optimizers.SGD(0.01), loss=keras.losses.CategoricalCrossentropy(from_logits=True))
    m.fit(images, labels, epochs=2, batch_size=64, shuffle=False, verbose=0)
    t = time.perf_counter(); m.fit(images, labels, epochs=3, batch_size=64, shuffle=False, verbose=0)
    print(f"{'conv/' + policy:24s} {(time.perf_counter() - t) / 24 * 1000:8.2f} ms/step ({type(m.optimizer).__name__})")
