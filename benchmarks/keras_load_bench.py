"""Keras's side of benchmarks/RESULTS.md's model-file figures: keras.models.load_model of a 100 MB
`.keras` archive (TensorFlow 2.21, Keras 3.15.1), beside bench_saving in the same session.

Run: python3 benchmarks/keras_load_bench.py [dir]     (dir: default /tmp/devtensor_bench)
Writes dir/keras_100mb.keras (Keras's save of bench_saving's model: Sequential([Input((2048,)),
Dense(4096, relu), Dense(4096, relu), Dense(512)]), 27.3 M weights) if absent, then prints the
median of 7 loads (after one warm-up) of it and of dir/devtensor_100mb.keras (devtensor's save of
the same architecture, when bench_saving made it), and of model.save, in milliseconds.
"""
import os
import statistics
import sys
import time

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import keras

folder = sys.argv[1] if len(sys.argv) > 1 else "/tmp/devtensor_bench"
os.makedirs(folder, exist_ok=True)


def model():
    return keras.Sequential([keras.Input((2048,)), keras.layers.Dense(4096, activation="relu"),
                             keras.layers.Dense(4096, activation="relu"), keras.layers.Dense(512)],
                            name="hundred_megabytes")


def median_ms(f, reps=7):
    f()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3, (max(times) - min(times)) * 1e3


own = os.path.join(folder, "keras_100mb.keras")
m = model()
if not os.path.exists(own):
    m.save(own)
print("keras.models.load_model(keras_100mb.keras): %.1f ms (spread %.1f)" % median_ms(lambda: keras.models.load_model(own)))
theirs = os.path.join(folder, "devtensor_100mb.keras")
if os.path.exists(theirs):
    print("keras.models.load_model(devtensor_100mb.keras): %.1f ms (spread %.1f)" %
          median_ms(lambda: keras.models.load_model(theirs)))
print("model.save: %.1f ms (spread %.1f)" % median_ms(lambda: m.save(os.path.join(folder, "keras_saved.keras"))))
