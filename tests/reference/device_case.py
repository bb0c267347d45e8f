# Prints how TensorFlow's tf.device treats the case of a device type, which
# placer/scopes_upper_case_cpu_and_gpu_as_tf_device_does (tests/unit/ops/placer_test.cpp) follows.
# Run with TensorFlow 2.21 (CPU): python3 -m venv /tmp/tf && /tmp/tf/bin/pip install tensorflow-cpu==2.21.0
# Output of 2.21.0 (two logical CPUs, soft placement off):
#   DeviceSpec('/device:gpu:1').device_type = GPU
#   '/device:cpu:1' -> /job:localhost/replica:0/task:0/device:CPU:1
#   '/device:CPU:1' -> /job:localhost/replica:0/task:0/device:CPU:1
#   '/job:localhost/replica:0/task:0/device:cpu:1' -> /job:localhost/replica:0/task:0/device:CPU:1
#   '/device:Cpu:1' -> InvalidArgumentError Could not satisfy device specification
#                      '/job:localhost/replica:0/task:0/device:Cpu:1'. enable_soft_placement=0. ...
#   '/device:gpu:0' -> InvalidArgumentError Could not satisfy device specification
#                      '/job:localhost/replica:0/task:0/device:GPU:0'. enable_soft_placement=0. ...
# i.e. exactly the tokens `cpu` and `gpu` are upper-cased; any other spelling keeps its case.
import tensorflow as tf

cpus = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2)
tf.config.set_soft_device_placement(False)
print("tf", tf.__version__)
print("DeviceSpec('/device:gpu:1').device_type =", tf.DeviceSpec.from_string("/device:gpu:1").device_type)
a = tf.constant([[1.0, 2.0], [3.0, 4.0]])
for spec in ["/device:cpu:1", "/device:CPU:1", "/job:localhost/replica:0/task:0/device:cpu:1", "/device:Cpu:1",
             "/device:gpu:0"]:
    try:
        with tf.device(spec):
            print(repr(spec), "->", tf.matmul(a, a).device)
    except Exception as e:  # the error's first line is TensorFlow's message
        print(repr(spec), "->", type(e).__name__, str(e).splitlines()[0])
