#pragma once
/// @file placer.hpp
/// @brief The graph placer (TensorFlow's Placer::Run): one device per node of
/// a whole graph, with TensorFlow 2.21's error texts and placement log.
///
/// A colocation group (a variable's handle node and the nodes that read or write it) is placed as
/// one: on the first device every member may use. Pass 1 places every node but generators (no inputs, one output:
/// constants, placeholders) in graph order: Identity goes with its input when the input's device may run it, any other
/// node gets the first of its candidates (the devices its request matches that run its kernel, in priority order: GPUs
/// before CPUs). Pass 2 places the generators: with their consumers when all consumers share a device the generator may
/// use, else on their first candidate. Soft placement drops an unsatisfiable request's type and id and tries again. The
/// log lists the nodes in the order they were placed, as TensorFlow's does.

#include <algorithm>
#include <cstddef>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/core/log.hpp"
#include "devtensor/device/device_set.hpp"
#include "devtensor/ops/graph.hpp"
#include "devtensor/ops/placer.hpp"
#include "devtensor/ops/registry.hpp"

namespace devtensor::graph {

struct PlacementOptions {
  bool soft_placement = false;  // v1 sessions: false unless the ConfigProto says so
  bool log_placement = false;   // `<name>: (<Op>): <device>` per node, stdout and the log sink
};

/// Each node's device, by node position.
using Placement = std::vector<const Device*>;

/// Places `nodes` (a graph's snapshot) on `devices`.
/// @throws InvalidArgumentError "Cannot assign a device for operation <name>: ..." (TensorFlow 2.21's text).
Placement place(const std::vector<std::shared_ptr<const Node>>& nodes, const DeviceSet& devices,
                const PlacementOptions& options);

#if DEVTENSOR_HEADER_DEFINITIONS

namespace placer_detail {

/// Whether this program was built with devtensor's GPU kernels (TensorFlow: "CUDA is enabled").
DEVTENSOR_DEFINITION bool has_gpu_kernels() {
  const auto kernels = KernelRegistry::global().list();
  return std::any_of(kernels.begin(), kernels.end(),
                     [](const KernelRegistration& r) { return r.key.device_type == gpu_device_type; });
}

DEVTENSOR_DEFINITION bool runs_on(const Node& node, const Device& device) {
  return node.kernel == nullptr || node.kernel->supports(device);  // Const, Placeholder: anywhere
}

DEVTENSOR_DEFINITION std::string device_list(const DeviceSet& devices, const char* separator) {
  std::string out;
  for (const auto& d : devices) out += (out.empty() ? "" : separator) + d.full_name;
  return out;
}

/// The node's candidate devices, in priority order (GPUs before CPUs, then by id, as TensorFlow's placer ranks them).
DEVTENSOR_DEFINITION std::vector<const Device*> candidates(const Node& node, const DeviceSet& devices, bool soft) {
  std::vector<const Device*> out;
  const auto collect = [&](const DeviceSpec& request) {
    for (const Device* d : devices.by_priority())
      if (request.matches(d->spec) && runs_on(node, *d)) out.push_back(d);
  };
  collect(node.requested);
  if (!out.empty()) return out;
  const bool exists =
      std::any_of(devices.begin(), devices.end(), [&](const Device& d) { return node.requested.matches(d.spec); });
  if (soft) {
    collect(node.requested.with_type(std::nullopt).with_id(std::nullopt));
    if (!out.empty()) return out;
  }
  const std::string outer = "Cannot assign a device for operation " + node.name + ": ";
  const std::string request = node.requested.to_string();
  if (!exists && !soft) {
    std::string message = outer + "{{node " + node.name + "}} was explicitly assigned to " + request +
                          " but available devices are [ " + device_list(devices, ", ") +
                          " ]. Make sure the device specification refers to a valid device.";
    if (node.requested.type() == gpu_device_type && !has_gpu_kernels())
      message += " The requested device appears to be a GPU, but CUDA is not enabled.";
    throw InvalidArgumentError(message);
  }
  const std::string kernels = node.kernel ? node.kernel->supported_types(devices.has_real_gpus()) : "CPU, GPU";
  if (exists && !soft) {
    std::string type;
    for (const auto& d : devices)
      if (node.requested.matches(d.spec)) {
        type = d.device_type;
        break;
      }
    throw InvalidArgumentError(
        outer + "Could not satisfy explicit device specification '" + request + "' because no supported kernel for " +
        type + " devices is available.\nOp: " + std::string(node.type()) + "\nRegistered kernels:\n  device types [" +
        kernels + "]" + (node.kernel ? "; T in [" + std::string(node.kernel->dtype) + "]" : std::string()) +
        "\nTurn soft placement on (ConfigProto allow_soft_placement) to fall back to a "
        "supported device.");
  }
  throw InvalidArgumentError(
      outer + "No OpKernel was registered to support Op '" + std::string(node.type()) + "' used by {{node " +
      node.name + "}} with these attrs: [" + (node.kernel ? "T=" + std::string(node.kernel->dtype) : std::string()) +
      "]\nRegistered devices: [" + device_list(devices, ", ") + "]\nRegistered kernels:\n  " +
      (kernels.empty() ? std::string("<no registered kernels>") : "device types [" + kernels + "]"));
}

}  // namespace placer_detail

DEVTENSOR_DEFINITION Placement place(const std::vector<std::shared_ptr<const Node>>& nodes, const DeviceSet& devices,
                                     const PlacementOptions& options) {
  using namespace placer_detail;
  Placement placed(nodes.size(), nullptr);
  std::vector<std::size_t> order;  // as placed: the log's order
  order.reserve(nodes.size());
  std::vector<std::vector<std::size_t>> consumers(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i)
    for (const auto& e : nodes[i]->inputs) consumers[e.node].push_back(i);
  const auto in = [](const Device* d, const std::vector<const Device*>& list) {
    return d && std::find(list.begin(), list.end(), d) != list.end();
  };
  // Colocation groups first: each member's candidates, intersected in the root's order.
  std::vector<std::vector<std::size_t>> members(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i]->colocated_with) members.at(*nodes[i]->colocated_with).push_back(i);
  Placement group_device(nodes.size(), nullptr);
  for (std::size_t root = 0; root < nodes.size(); ++root) {
    if (members[root].empty()) continue;
    auto shared = candidates(*nodes[root], devices, options.soft_placement);
    for (auto m : members[root]) {
      // With soft placement a member's own request yields to the group (TensorFlow drops it).
      Node any = *nodes[m];
      if (options.soft_placement) any.requested = DeviceSpec();
      const auto own = candidates(any, devices, options.soft_placement);
      std::erase_if(shared, [&](const Device* d) { return !in(d, own); });
      if (shared.empty())
        throw InvalidArgumentError(
            "Cannot assign a device for operation " + nodes[m]->name +
            ": Could not satisfy explicit device specification '" + nodes[m]->requested.to_string() +
            "' because the node {{colocation_node " + nodes[m]->name +
            "}} was colocated with a group of nodes that required incompatible device '" +
            nodes[root]->requested.to_string() + "'. All available devices [" + device_list(devices, ", ") + "].");
    }
    group_device[root] = shared.front();
    for (auto m : members[root]) group_device[m] = shared.front();
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {  // pass 1
    const Node& node = *nodes[i];
    if (node.generator()) continue;
    if (group_device[i]) {
      placed[i] = group_device[i];
      order.push_back(i);
      continue;
    }
    const auto options_for_node = candidates(node, devices, options.soft_placement);
    const Device* input = node.inputs.empty() ? nullptr : placed[node.inputs.front().node];
    placed[i] = node.traits().pass_through && in(input, options_for_node) ? input : options_for_node.front();
    order.push_back(i);
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {  // pass 2: generators
    const Node& node = *nodes[i];
    if (!node.generator()) continue;
    if (group_device[i]) {
      placed[i] = group_device[i];
      order.push_back(i);
      continue;
    }
    const auto options_for_node = candidates(node, devices, options.soft_placement);
    const Device* with = nullptr;
    if (!consumers[i].empty()) {
      with = placed[consumers[i].front()];
      for (auto c : consumers[i])
        if (placed[c] != with) with = nullptr;
    }
    placed[i] = in(with, options_for_node) ? with : options_for_node.front();
    order.push_back(i);
  }
  if (options.log_placement) {
    std::string out;
    for (auto i : order) {
      std::string line = nodes[i]->name + ": (" + std::string(nodes[i]->type()) + "): " + placed[i]->full_name;
      out += line + "\n";
      log(LogSeverity::info, line);
    }
    std::cout << out << std::flush;
  }
  return placed;
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace devtensor::graph
