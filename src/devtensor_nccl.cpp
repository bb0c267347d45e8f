// devtensor's NCCL engine: compiled once per program, by the host compiler, in the consumer's
// build tree. Linking the devtensor::nccl component adds this object (and NCCL) to the program;
// including nccl.hpp registers the all-reduce kernel that NcclAllReduce finds at run time (the
// program "has the Nccl kernel" exactly when it links NCCL, TensorFlow's same run-time question).
#include "devtensor/backend/cuda/nccl.hpp"
