"""TensorFlow's variable partitioners for parameter-server training, the answers that
tests/mpi/parameter_server_test.cpp's `validation` scenario checks devtensor's against.

Run with TensorFlow 2.21.0 (CPU): python3 partitioners.py. Output (2.21.0):
  MinSizePartitioner(64, 3) (1000, 64) [3, 1]
  MinSizePartitioner(64, 3) (10,) [1]
  MinSizePartitioner(262144, 1) (1000, 64) [1, 1]
  MinSizePartitioner(262144, 2) (1000, 64) [1, 1]
  FixedShardsPartitioner(5) (2, 5) [2, 1]
  FixedShardsPartitioner(3) (10,) [3]
  min_shard_bytes=0: ValueError Argument `min_shard_bytes` must be positive. Received: 0
  max_shards=0: ValueError Argument `max_shards` must be positive. Received: 0
"""
import tensorflow as tf

P = tf.distribute.experimental.partitioners
cases = [
    ("MinSizePartitioner(64, 3)", P.MinSizePartitioner(min_shard_bytes=64, max_shards=3), (1000, 64)),
    ("MinSizePartitioner(64, 3)", P.MinSizePartitioner(min_shard_bytes=64, max_shards=3), (10,)),
    ("MinSizePartitioner(262144, 1)", P.MinSizePartitioner(), (1000, 64)),
    ("MinSizePartitioner(262144, 2)", P.MinSizePartitioner(min_shard_bytes=256 << 10, max_shards=2), (1000, 64)),
    ("FixedShardsPartitioner(5)", P.FixedShardsPartitioner(5), (2, 5)),
    ("FixedShardsPartitioner(3)", P.FixedShardsPartitioner(3), (10,)),
]
for name, partitioner, shape in cases:
    print(name, shape, partitioner(tf.TensorShape(shape), tf.float32))
for label, kwargs in [("min_shard_bytes=0", {"min_shard_bytes": 0}), ("max_shards=0", {"max_shards": 0})]:
    try:
        P.MinSizePartitioner(**kwargs)
    except ValueError as e:
        print(f"{label}: ValueError {e}")
