# Prints TensorFlow 2.21's numbers for seed 001's custom training loop, traced (tf.function), under
# MirroredStrategy over 2, 3 and 4 logical CPUs, with SGD and Adam: the losses of steps 0-2 and 99
# and the final kernel and bias; and Keras fit traced over the same data (1 and 2 replicas).
# tests/support/seed_custom_loop.hpp holds the figures it printed (below).
# Run with TensorFlow (CPU): python3 -m venv /tmp/tf && /tmp/tf/bin/pip install tensorflow-cpu==2.21.0
import os
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import sys
import tensorflow as tf
import keras

cpus = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(cpus[0], [tf.config.LogicalDeviceConfiguration()] * 4)


def fit(replicas, optimizer_name):
    """The same model, loss and data through Keras's fit (traced: run_eagerly=False), 2 epochs."""
    strategy = tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(replicas)])
    with strategy.scope():
        model = keras.Sequential([keras.Input((1,)),
                                  keras.layers.Dense(1, kernel_initializer=keras.initializers.Constant(0.5))])
        model.compile(loss=keras.losses.BinaryCrossentropy(from_logits=True),
                      optimizer=keras.optimizers.SGD() if optimizer_name == "sgd" else keras.optimizers.Adam())
    ones = tf.ones((1000, 1))
    history = model.fit(ones, ones, batch_size=10, epochs=2, shuffle=False, verbose=0)
    kernel = float(model.layers[0].kernel.numpy().reshape(-1)[0])
    bias = float(model.layers[0].bias.numpy().reshape(-1)[0])
    return history.history["loss"], kernel, bias


def run(replicas, optimizer_name, traced=True):
    strategy = tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(replicas)])
    global_batch = 10
    with strategy.scope():
        model = keras.Sequential([keras.Input((1,)),
                                  keras.layers.Dense(1, kernel_initializer=keras.initializers.Constant(0.5))])
        optimizer = keras.optimizers.SGD() if optimizer_name == "sgd" else keras.optimizers.Adam()
        optimizer.build(model.trainable_variables)  # slots made here, mirrored (Adam traced needs it)
    loss_object = keras.losses.BinaryCrossentropy(from_logits=True, reduction=None)

    def compute_loss(labels, predictions):
        return tf.nn.compute_average_loss(loss_object(labels, predictions), global_batch_size=global_batch)

    def train_step(inputs):
        x, y = inputs
        with tf.GradientTape() as tape:
            loss = compute_loss(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    def distributed_train_step(inputs):
        per_replica = strategy.run(train_step, args=(inputs,))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    step = tf.function(distributed_train_step) if traced else distributed_train_step
    data = tf.data.Dataset.from_tensors(([1.0], [1.0])).repeat(1000).batch(global_batch)
    losses = [float(step(batch)) for batch in strategy.experimental_distribute_dataset(data)]
    kernel = float(model.layers[0].kernel.numpy().reshape(-1)[0])
    bias = float(model.layers[0].bias.numpy().reshape(-1)[0])
    return losses, kernel, bias


# One configuration per process: TensorFlow's collective groups do not survive a second strategy
# over other devices in one process. Without arguments, runs every configuration in child processes.
if len(sys.argv) == 4 and sys.argv[1] == "fit":
    optimizer_name, replicas = sys.argv[2], int(sys.argv[3])
    losses, kernel, bias = fit(replicas, optimizer_name)
    print(f"fit {optimizer_name} replicas={replicas} epoch_losses={losses[0]:.10f},{losses[1]:.10f} "
          f"kernel={kernel:.10f} bias={bias:.10f}")
elif len(sys.argv) == 3:
    optimizer_name, replicas = sys.argv[1], int(sys.argv[2])
    losses, kernel, bias = run(replicas, optimizer_name)
    print(f"{optimizer_name} replicas={replicas} steps={len(losses)} loss0={losses[0]:.10f} "
          f"loss1={losses[1]:.10f} loss2={losses[2]:.10f} loss99={losses[99]:.10f} "
          f"kernel={kernel:.10f} bias={bias:.10f}")
else:
    import subprocess
    for optimizer_name in ("sgd", "adam"):
        for replicas in (2, 3, 4):
            subprocess.run([sys.executable, __file__, optimizer_name, str(replicas)], check=True)
    for optimizer_name in ("sgd", "adam"):
        for replicas in (1, 2):
            subprocess.run([sys.executable, __file__, "fit", optimizer_name, str(replicas)], check=True)

# Printed on 2026-11-29 (TensorFlow 2.21.0, Keras 3, CPU):
# sgd replicas=2 steps=100 loss0=0.4740769863 loss1=0.4712329507 loss2=0.4684155583 loss99=0.2855520844 kernel=0.8060636520 bias=0.3060639501
# sgd replicas=3 steps=100 loss0=0.4740769863 loss1=0.4712329507 loss2=0.4684155583 loss99=0.2855520844 kernel=0.8060636520 bias=0.3060639501
# sgd replicas=4 steps=100 loss0=0.4740769565 loss1=0.4712329805 loss2=0.4684155285 loss99=0.2855520844 kernel=0.8060636520 bias=0.3060639501
# adam replicas=2 steps=100 loss0=0.4740769863 loss1=0.4733223915 loss2=0.4725687504 loss99=0.4052395821 kernel=0.5978618860 bias=0.0978617519
# adam replicas=3 steps=100 loss0=0.4740769863 loss1=0.4733223915 loss2=0.4725687504 loss99=0.4052395821 kernel=0.5978618860 bias=0.0978617519
# adam replicas=4 steps=100 loss0=0.4740769565 loss1=0.4733223617 loss2=0.4725687802 loss99=0.4052395821 kernel=0.5978618860 bias=0.0978617519
# fit sgd replicas=1 epoch_losses=0.3668525219,0.2356100231 kernel=1.0157186985 bias=0.5157192349
# fit sgd replicas=2 epoch_losses=0.3668525219,0.2356100231 kernel=1.0157186985 bias=0.5157192349
# fit adam replicas=1 epoch_losses=0.4386382997,0.3752134144 kernel=0.6898397803 bias=0.1898393929
# fit adam replicas=2 epoch_losses=0.4386382997,0.3752134144 kernel=0.6898397803 bias=0.1898393929
