// The installed package's devtensor::mpi, built and run by package.cpu_consumer where the mpi
// component is found: this file sees only the declarations of the mpi component's runtime
// (DEVTENSOR_MPI_COMPILED), and the object compiled in that tree from
// <prefix>/share/devtensor/src/devtensor_mpi.cpp defines them: TF_CONFIG's JSON parsing and the
// parameter-server roles below link and run without mpiexec. package.no_cmake builds it by hand.
#include <devtensor/coordinator.hpp>

#include <cstdio>

#ifndef DEVTENSOR_MPI_COMPILED
#error "devtensor::mpi should define DEVTENSOR_MPI_COMPILED for its users"
#endif
#ifdef INCLUDE_NLOHMANN_JSON_HPP_
#error "a program linking devtensor::mpi should not parse nlohmann_json (its object does)"
#endif

namespace ds = devtensor::distribute;

int main() {
  const ds::cluster_resolver::TFConfigClusterResolver resolver(
      {.tf_config = R"({"cluster": {"chief": ["a:1"], "worker": ["b:1", "c:1"], "ps": ["d:1"]},
                        "task": {"type": "worker", "index": 1}})"});
  const auto launch = ds::ps_detail::Roles::from_launch(ds::cluster_resolver::MpiLaunch{2, 4, 0}, 1);
  std::printf("cluster %s, task %s:%d; launch rank 2 of 4 is %s:%d\n", resolver.cluster_spec().to_string().c_str(),
              resolver.task_type().value_or("?").c_str(), resolver.task_id().value_or(-1),
              launch.task_type.value_or("?").c_str(), launch.task_id.value_or(-1));
  const bool ok = resolver.cluster_spec().num_tasks("worker") == 2 && resolver.task_id() == 1 &&
                  launch.task_type == "worker" && launch.task_id == 1;
  return ok ? 0 : 1;
}
