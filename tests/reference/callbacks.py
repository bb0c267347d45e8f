# Prints Keras 3.15 / TensorFlow 2.21's figures that tests/unit/nn/optimizers_test.cpp (schedules),
# tests/unit/nn/fit_test.cpp (callbacks) and tests/unit/nn/weights_test.cpp (ModelCheckpoint) hold:
# each schedule's values at steps 0..25, its errors, fit with schedules, and every callback's
# history, weights, messages, files and errors on y = 2x + 1 (8 points, batches of 4, no shuffling).
# Run with TensorFlow (CPU): python3 -m venv /tmp/tf && /tmp/tf/bin/pip install tensorflow-cpu==2.21.0
# (in an empty folder: it writes log.csv and ck/ there).
import os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import io, sys, contextlib, shutil, warnings
import numpy as np
import tensorflow as tf
import keras
S = keras.optimizers.schedules
def show(name, sched):
    print(name, " ".join(repr(float(sched(s))) for s in range(26)))
show("exponential", S.ExponentialDecay(0.1, 10, 0.5))
show("exponential_staircase", S.ExponentialDecay(0.1, 10, 0.5, staircase=True))
show("piecewise", S.PiecewiseConstantDecay([5, 15], [0.1, 0.05, 0.01]))
show("cosine", S.CosineDecay(0.1, 20, alpha=0.1))
show("cosine_warmup", S.CosineDecay(0.0, 15, warmup_target=0.2, warmup_steps=5))
show("inverse_time", S.InverseTimeDecay(0.1, 5, 0.5))
show("inverse_time_staircase", S.InverseTimeDecay(0.1, 5, 0.5, staircase=True))
show("polynomial", S.PolynomialDecay(0.1, 10, 0.01, power=2.0))
show("polynomial_cycle", S.PolynomialDecay(0.1, 10, 0.01, power=2.0, cycle=True))
for make in (lambda: S.ExponentialDecay(0.1, 0, 0.5), lambda: S.PiecewiseConstantDecay([5], [0.1]),
             lambda: S.CosineDecay(0.1, 0), lambda: S.PolynomialDecay(0.1, -1), lambda: S.InverseTimeDecay(0.1, 0, 0.5)):
    try: make()
    except Exception as e: print(type(e).__name__, e)
try:
    o = keras.optimizers.SGD(S.ExponentialDecay(0.1, 10, 0.5)); o.learning_rate = 0.2
except Exception as e: print(type(e).__name__, e)

x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(8, 1)
y = (2 * x + 1).astype(np.float32)
xv = np.array([[0.3], [-0.6]], np.float32); yv = (2 * xv + 1).astype(np.float32)
def model(lr=0.05, opt="sgd"):
    keras.utils.set_random_seed(1)
    m = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1, kernel_initializer="zeros")])
    o = keras.optimizers.SGD(lr) if opt == "sgd" else keras.optimizers.Adam(lr)
    m.compile(loss="mse", optimizer=o)
    return m
def weights(m): return [float(v) for w in m.get_weights() for v in w.ravel()]
def run(title, m, **kw):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        h = m.fit(x, y, batch_size=4, shuffle=False, verbose=0, **kw)
    print("==", title)
    print("history", {k: [float(v) for v in vs] for k, vs in h.history.items()})
    print("weights", weights(m))
    print("stdout", repr(buf.getvalue()))
    return h

# Schedules in fit: SGD and Adam over 3 epochs of 2 steps.
run("sgd exponential", model(S.ExponentialDecay(0.1, 2, 0.5)), epochs=3)
run("adam cosine warmup", model(S.CosineDecay(0.0, 4, warmup_target=0.1, warmup_steps=2), "adam"), epochs=3)
es = keras.callbacks.EarlyStopping(monitor="loss", patience=2, min_delta=0.05, verbose=1, restore_best_weights=True)
run("early stopping", model(), epochs=30, callbacks=[es])
print("stopped_epoch", es.stopped_epoch, "best_epoch", es.best_epoch, "best", es.best, "wait", es.wait)
es = keras.callbacks.EarlyStopping(monitor="val_loss", patience=1, baseline=0.5, verbose=1)
run("early stopping baseline", model(), epochs=30, callbacks=[es], validation_data=(xv, yv))
print("stopped_epoch", es.stopped_epoch, "best_epoch", es.best_epoch)
es = keras.callbacks.EarlyStopping(monitor="loss", patience=0, start_from_epoch=3, min_delta=1.0, verbose=1)
run("early stopping start_from_epoch", model(), epochs=30, callbacks=[es])
warnings.simplefilter("always")
es = keras.callbacks.EarlyStopping(monitor="val_loss", verbose=1)
with warnings.catch_warnings(record=True) as w:
    run("early stopping missing", model(), epochs=2, callbacks=[es])
    rl = keras.callbacks.ReduceLROnPlateau(monitor="val_loss")
    run("reduce missing", model(), epochs=1, callbacks=[rl])
    mc = keras.callbacks.ModelCheckpoint("m.weights.h5", monitor="val_loss", save_best_only=True, save_weights_only=True)
    run("checkpoint missing", model(), epochs=1, callbacks=[mc])
    print("warnings", [str(x.message) for x in w if "__array__" not in str(x.message)])
rl = keras.callbacks.ReduceLROnPlateau(monitor="loss", factor=0.5, patience=1, min_delta=0.2, cooldown=1, min_lr=0.01, verbose=1)
run("reduce lr", model(), epochs=8, callbacks=[rl])
ls = keras.callbacks.LearningRateScheduler(lambda epoch, lr: lr if epoch < 2 else lr * 0.5, verbose=1)
run("lr scheduler", model(0.1), epochs=4, callbacks=[ls])
if os.path.exists("log.csv"): os.remove("log.csv")
run("csv", model(), epochs=2, callbacks=[keras.callbacks.CSVLogger("log.csv")], validation_data=(xv, yv))
print("csv", repr(open("log.csv").read()))
run("csv append", model(), epochs=1, callbacks=[keras.callbacks.CSVLogger("log.csv", separator=";", append=True)])
print("csv", repr(open("log.csv").read()))
os.remove("log.csv")
run("csv no validation", model(), epochs=1, callbacks=[keras.callbacks.CSVLogger("log.csv")])
print("csv", repr(open("log.csv").read()))
run("terminate on nan", model(1e18), epochs=3, callbacks=[keras.callbacks.TerminateOnNaN()])
try: run("terminate raise", model(1e18), epochs=3, callbacks=[keras.callbacks.TerminateOnNaN(raise_error=True)])
except Exception as e: print(type(e).__name__, e)
shutil.rmtree("ck", ignore_errors=True); os.makedirs("ck")
mc = keras.callbacks.ModelCheckpoint("ck/e{epoch:02d}-{loss:.3f}.weights.h5", monitor="loss", save_weights_only=True, verbose=1)
run("checkpoint every epoch", model(), epochs=3, callbacks=[mc])
print("files", sorted(os.listdir("ck")))
shutil.rmtree("ck"); os.makedirs("ck")
mc = keras.callbacks.ModelCheckpoint("ck/best.weights.h5", monitor="val_loss", save_best_only=True, save_weights_only=True, verbose=1)
run("checkpoint best", model(0.6), epochs=5, callbacks=[mc], validation_data=(xv, yv))
m2 = model(); m2.load_weights("ck/best.weights.h5"); print("best weights", weights(m2))
shutil.rmtree("ck"); os.makedirs("ck")
mc = keras.callbacks.ModelCheckpoint("ck/b{epoch}-{batch}.weights.h5", save_weights_only=True, save_freq=3, verbose=1)
run("checkpoint save_freq", model(), epochs=2, callbacks=[mc])
print("files", sorted(os.listdir("ck")))
for make in (lambda: keras.callbacks.ModelCheckpoint("x.h5", save_weights_only=True),
             lambda: keras.callbacks.ModelCheckpoint("x.weights.h5"),
             lambda: keras.callbacks.ModelCheckpoint("x.weights.h5", save_weights_only=True, save_freq="batch"),
             lambda: keras.callbacks.ReduceLROnPlateau(factor=1.0)):
    try: make(); print("no error")
    except Exception as e: print(type(e).__name__, e)
with warnings.catch_warnings(record=True) as w:
    keras.callbacks.EarlyStopping(mode="sideways")
    print("warnings", [str(x.message) for x in w if "__array__" not in str(x.message)])
try:
    c = keras.callbacks.EarlyStopping(monitor="auc"); run("auc", model(), epochs=1, callbacks=[c], validation_data=(xv, yv))
except Exception as e: print(type(e).__name__, e)

m = model(); m.compile(loss="mse", optimizer=keras.optimizers.SGD(0.05), metrics=["accuracy"])
es = keras.callbacks.EarlyStopping(monitor="accuracy"); m.fit(x, y, epochs=1, verbose=0, callbacks=[es]); print("accuracy op", es.monitor_op.__name__, es.min_delta)
es = keras.callbacks.EarlyStopping(monitor="val_loss", min_delta=0.5); m.fit(x, y, epochs=1, verbose=0, callbacks=[es], validation_data=(xv, yv)); print("loss op", es.monitor_op.__name__, es.min_delta)
# verbose=2 stdout with callbacks: where the messages go around the progress lines
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    model().fit(x, y, batch_size=4, shuffle=False, verbose=2, epochs=2, callbacks=[keras.callbacks.LearningRateScheduler(lambda e, lr: lr * 0.5, verbose=1), keras.callbacks.EarlyStopping(monitor="loss", min_delta=10, verbose=1)])
print("verbose2", repr(buf.getvalue()))
# Optimizer weights of a schedule-driven optimizer: does the weights file hold a learning rate?
m = model(S.ExponentialDecay(0.1, 2, 0.5)); m.fit(x, y, epochs=1, verbose=0, batch_size=4)
print("schedule optimizer variables", [v.path for v in m.optimizer.variables])
m = model(0.1); m.fit(x, y, epochs=1, verbose=0, batch_size=4)
print("constant optimizer variables", [v.path for v in m.optimizer.variables])
