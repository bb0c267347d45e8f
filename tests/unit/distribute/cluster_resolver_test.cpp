// TF_CONFIG, ClusterSpec and multi_worker_util: no MPI, no other process.
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <optional>
#include <string>

#include "devtensor/distribute/multi_worker/cluster_resolver.hpp"
#include "devtensor_test.hpp"

using namespace devtensor;
using namespace devtensor::distribute;
using cluster_resolver::TFConfigClusterResolver;
namespace mwu = multi_worker_util;

namespace {

TFConfigClusterResolver resolve(const std::string& json) { return TFConfigClusterResolver({.tf_config = json}); }

const ClusterSpec two_workers({{"worker", {"hostA:2222", "hostB:2222"}}});
const ClusterSpec chief_and_workers({{"chief", {"c:1"}}, {"worker", {"w0:1", "w1:1"}}, {"evaluator", {"e:1"}}});

using EnvVar = devtensor::test::ScopedEnv;

}  // namespace

BOOST_AUTO_TEST_SUITE(tf_config)

BOOST_AUTO_TEST_CASE(reads_the_seeds_example) {
  auto r = resolve(R"({"cluster": {"worker": ["hostA:2222", "hostB:2222"]}, "task": {"type": "worker", "index": 1}})");
  BOOST_TEST(*r.task_type() == "worker");
  BOOST_TEST(*r.task_id() == 1);
  BOOST_TEST(!r.rpc_layer());
  BOOST_TEST((r.cluster_spec() == two_workers));
  BOOST_TEST(r.cluster_spec().to_string() == "{'worker': ['hostA:2222', 'hostB:2222']}");
  BOOST_TEST(r.master() == "hostB:2222");
  BOOST_TEST(r.master("worker", 0, "grpc") == "grpc://hostA:2222");
}

BOOST_AUTO_TEST_CASE(reads_the_environment_variable_and_missing_is_empty) {
  {
    EnvVar unset("TF_CONFIG", std::nullopt);
    TFConfigClusterResolver r;
    BOOST_TEST(r.cluster_spec().empty());
    BOOST_TEST(!r.task_type());
    BOOST_TEST(!r.task_id());
    BOOST_TEST(r.master() == "");
  }
  EnvVar set(
      "TF_CONFIG",
      R"({"cluster": {"chief": ["c:1"], "worker": ["w0:1"]}, "task": {"type": "chief", "index": 0}, "rpc_layer": "grpc"})");
  TFConfigClusterResolver r;
  BOOST_TEST(*r.task_type() == "chief");
  BOOST_TEST(*r.rpc_layer() == "grpc");
  BOOST_TEST(r.master() == "grpc://c:1");
  BOOST_TEST(r.master("worker", 0) == "grpc://w0:1");
}

BOOST_AUTO_TEST_CASE(conversions_overrides_and_sparse_jobs) {
  // A numeric type becomes its decimal form, a numeric string index an integer.
  auto r = resolve(R"({"cluster": {"worker": {"1": "b:1", "3": "d:1"}}, "task": {"type": 7, "index": "3"}})");
  BOOST_TEST(*r.task_type() == "7");
  BOOST_TEST(*r.task_id() == 3);
  BOOST_TEST(r.cluster_spec().num_tasks("worker") == 2);
  BOOST_TEST(r.cluster_spec().task_address("worker", 3) == "d:1");
  BOOST_TEST(r.cluster_spec().to_string() == "{'worker': {1: 'b:1', 3: 'd:1'}}");
  auto o = TFConfigClusterResolver(
      {.task_type = "worker",
       .task_id = 1,
       .rpc_layer = "grpc",
       .tf_config = R"({"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 0}})"});
  BOOST_TEST(*o.task_type() == "worker");
  BOOST_TEST(*o.task_id() == 1);
  BOOST_TEST(o.master() == "grpc://b:1");
  o.set_task_id(0);
  o.set_rpc_layer(std::nullopt);
  BOOST_TEST(o.master() == "a:1");
}

BOOST_AUTO_TEST_CASE(master_rules) {
  BOOST_TEST(resolve(R"({"cluster": {"worker": ["only:1"]}, "task": {"type": "worker", "index": 0}})").master() == "");
  BOOST_TEST(resolve(R"({"cluster": {"worker": ["a:1", "b:1"]}, "session_master": "grpc://m:9"})").master() ==
             "grpc://m:9");
  auto no_task = resolve(R"({"cluster": {"worker": ["a:1", "b:1"]}})");
  DEVTENSOR_CHECK_THROW_WITH(no_task.master(), InvalidArgumentError, "the task is unknown");
  DEVTENSOR_CHECK_THROW_WITH(no_task.master("worker", 5), InvalidArgumentError, "No task with index 5 in job 'worker'");
  BOOST_TEST(resolve(R"({"environment": "cloud"})").environment().value() == "cloud");
}

BOOST_AUTO_TEST_CASE(bad_tf_config_is_a_typed_error) {
  DEVTENSOR_CHECK_THROW_WITH(resolve("{not json"), InvalidArgumentError, "TF_CONFIG is not valid JSON");
  DEVTENSOR_CHECK_THROW_WITH(resolve("[1, 2]"), InvalidArgumentError, "TF_CONFIG must hold a JSON object");
  DEVTENSOR_CHECK_THROW_WITH(resolve(R"({"cluster": ["a:1"]})"), InvalidArgumentError,
                             "`cluster_spec' should be dict or a");
  DEVTENSOR_CHECK_THROW_WITH(resolve(R"({"cluster": {"worker": "a:1"}})"), InvalidArgumentError,
                             "`cluster_spec' should be dict or a");
  DEVTENSOR_CHECK_THROW_WITH(resolve(R"({"cluster": {"worker": [1]}})"), InvalidArgumentError,
                             "must be \"host:port\" strings");
  DEVTENSOR_CHECK_THROW_WITH(resolve(R"({"task": {"type": "worker", "index": "one"}})"), InvalidArgumentError,
                             "the task index must be an integer, got 'one'");
  DEVTENSOR_CHECK_THROW_WITH(resolve(R"({"task": {"type": "worker", "index": 1.5}})"), InvalidArgumentError,
                             "must be a string or an integer");
  DEVTENSOR_CHECK_THROW_WITH(resolve(R"({"task": [0]})"), InvalidArgumentError, "\"task\" must be an object");
  EnvVar bad("TF_CONFIG", "{");
  DEVTENSOR_CHECK_THROW_WITH(TFConfigClusterResolver(), InvalidArgumentError, "TF_CONFIG");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(multi_worker_roles)

BOOST_AUTO_TEST_CASE(is_chief) {
  BOOST_TEST(mwu::is_chief(chief_and_workers, "chief", 0));
  BOOST_TEST(!mwu::is_chief(chief_and_workers, "worker", 0));
  BOOST_TEST(mwu::is_chief(chief_and_workers, "evaluator", 0));
  BOOST_TEST(mwu::is_chief(two_workers, "worker", 0));
  BOOST_TEST(!mwu::is_chief(two_workers, "worker", 1));
}

BOOST_AUTO_TEST_CASE(worker_count_and_id_in_cluster) {
  BOOST_TEST(mwu::worker_count(chief_and_workers, "chief") == 3);
  BOOST_TEST(mwu::worker_count(chief_and_workers, "worker") == 3);
  BOOST_TEST(mwu::worker_count(chief_and_workers, "evaluator") == 1);
  BOOST_TEST(mwu::worker_count(two_workers, "worker") == 2);
  BOOST_TEST(mwu::id_in_cluster(chief_and_workers, "chief", 0) == 0);
  BOOST_TEST(mwu::id_in_cluster(chief_and_workers, "worker", 0) == 1);
  BOOST_TEST(mwu::id_in_cluster(chief_and_workers, "worker", 1) == 2);
  BOOST_TEST(mwu::id_in_cluster(chief_and_workers, "evaluator", 0) == 0);
  BOOST_TEST(mwu::id_in_cluster(two_workers, "worker", 1) == 1);
  const ClusterSpec with_ps({{"worker", {"w:1"}}, {"ps", {"p:1"}}});
  DEVTENSOR_CHECK_THROW_WITH((void)mwu::worker_count(with_ps, "ps"), InvalidArgumentError,
                             "Unexpected `task_type` 'ps'");
  DEVTENSOR_CHECK_THROW_WITH((void)mwu::id_in_cluster(with_ps, "ps", 0), InvalidArgumentError,
                             "There is no id for task_type 'ps'");
}

BOOST_AUTO_TEST_CASE(collective_leader) {
  BOOST_TEST(mwu::collective_leader(chief_and_workers, "worker", 1) == "/job:chief/replica:0/task:0");
  BOOST_TEST(mwu::collective_leader(two_workers, "worker", 1) == "/job:worker/replica:0/task:0");
  BOOST_TEST(mwu::collective_leader(chief_and_workers, "evaluator", 0) == "");
  BOOST_TEST(mwu::collective_leader(ClusterSpec(), std::nullopt, std::nullopt) == "");
  BOOST_TEST(mwu::coordination_leader(two_workers, "worker", 0) == "/job:worker/replica:0/task:0");
}

BOOST_AUTO_TEST_CASE(every_validation_error) {
  const ClusterSpec odd({{"master", {"m:1"}}, {"worker", {"w:1"}}});
  DEVTENSOR_CHECK_THROW_WITH(
      mwu::validate_cluster_spec(odd, "worker", 0), InvalidArgumentError,
      "Disallowed task type found in cluster spec. Allowed types are ('chief', 'worker', "
      "'evaluator', 'ps', None) and the cluster spec is {'master': ['m:1'], 'worker': ['w:1']}.");
  DEVTENSOR_CHECK_THROW_WITH(
      mwu::validate_cluster_spec(two_workers, "trainer", 0), InvalidArgumentError,
      "Unrecognized task_type: trainer, valid task types are: ('chief', 'worker', 'evaluator', 'ps', None)");
  DEVTENSOR_CHECK_THROW_WITH(mwu::validate_cluster_spec(two_workers, "chief", 0), InvalidArgumentError,
                             "`task_type` 'chief' not found in cluster_spec.");
  BOOST_CHECK_NO_THROW(mwu::validate_cluster_spec(two_workers, "evaluator", 0));  // may be absent
  const ClusterSpec two_chiefs({{"chief", {"a:1", "b:1"}}, {"worker", {"w:1"}}});
  DEVTENSOR_CHECK_THROW_WITH(mwu::validate_cluster_spec(two_chiefs, "worker", 0), InvalidArgumentError,
                             "There must be at most one 'chief' job.");
  const ClusterSpec two_evaluators({{"evaluator", {"a:1", "b:1"}}, {"worker", {"w:1"}}});
  DEVTENSOR_CHECK_THROW_WITH(mwu::validate_cluster_spec(two_evaluators, "worker", 0), InvalidArgumentError,
                             "There must be at most one 'evaluator' job.");
  DEVTENSOR_CHECK_THROW_WITH(mwu::validate_cluster_spec(two_workers, "worker", 2), InvalidArgumentError,
                             "The `task_id` 2 exceeds the maximum id of worker.");
  DEVTENSOR_CHECK_THROW_WITH(mwu::validate_cluster_spec(two_workers, "worker", -1), InvalidArgumentError,
                             "must be non-negative");
  DEVTENSOR_CHECK_THROW_WITH((void)mwu::is_chief(two_workers, "worker", 9), InvalidArgumentError,
                             "exceeds the maximum id");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(mpi_launch)

BOOST_AUTO_TEST_CASE(reads_open_mpi_and_mpich_variables) {
  {
    EnvVar r("OMPI_COMM_WORLD_RANK", std::nullopt), s("OMPI_COMM_WORLD_SIZE", std::nullopt),
        pr("PMI_RANK", std::nullopt), ps("PMI_SIZE", std::nullopt), px("PMIX_RANK", std::nullopt);
    BOOST_TEST(!cluster_resolver::MpiLaunch::from_environment());
  }
  EnvVar r("OMPI_COMM_WORLD_RANK", "2"), s("OMPI_COMM_WORLD_SIZE", "4"), l("OMPI_COMM_WORLD_LOCAL_RANK", "0");
  const auto launch = cluster_resolver::MpiLaunch::from_environment();
  BOOST_REQUIRE(launch);
  BOOST_TEST(launch->rank == 2);
  BOOST_TEST(launch->size == 4);
  cluster_resolver::MpiClusterResolver resolver(*launch);
  BOOST_TEST(resolver.cluster_spec().to_string() == "{'worker': ['mpi:0', 'mpi:1', 'mpi:2', 'mpi:3']}");
  BOOST_TEST(mwu::id_in_cluster(resolver.cluster_spec(), resolver.task_type(), *resolver.task_id()) == 2);
  DEVTENSOR_CHECK_THROW_WITH(cluster_resolver::MpiClusterResolver({.rank = 4, .size = 4}), InvalidArgumentError,
                             "rank 4 of 4 processes is not a valid MPI launch");
  EnvVar bad("OMPI_COMM_WORLD_RANK", "x");
  DEVTENSOR_CHECK_THROW_WITH((void)cluster_resolver::MpiLaunch::from_environment(), InvalidArgumentError,
                             "OMPI_COMM_WORLD_RANK must be an integer");
}

BOOST_AUTO_TEST_CASE(tf_config_must_match_the_mpi_launch) {
  const auto chief_first =
      resolve(R"({"cluster": {"chief": ["c:1"], "worker": ["w:1"]}, "task": {"type": "worker", "index": 0}})");
  BOOST_CHECK_NO_THROW(cluster_resolver::require_consistent_with_mpi(chief_first.describe(), {.rank = 1, .size = 2}));
  DEVTENSOR_CHECK_THROW_WITH(
      cluster_resolver::require_consistent_with_mpi(chief_first.describe(), {.rank = 0, .size = 2}),
      FailedPreconditionError, "MPI launched this process as rank 0 of 2. Launch one process per worker");
  DEVTENSOR_CHECK_THROW_WITH(
      cluster_resolver::require_consistent_with_mpi(chief_first.describe(), {.rank = 1, .size = 3}),
      FailedPreconditionError, "`mpiexec -n 2 ./app`");
}

BOOST_AUTO_TEST_SUITE_END()
