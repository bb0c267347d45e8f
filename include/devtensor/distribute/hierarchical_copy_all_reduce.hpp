#pragma once
/// @file hierarchical_copy_all_reduce.hpp
/// @brief HierarchicalCopyAllReduce: the all-reduce family member that sums by copies between
/// devices, in two groups (TensorFlow's tf.distribute.HierarchicalCopyAllReduce).

#include <cstddef>
#include <string_view>
#include <vector>

#include "devtensor/distribute/all_reduce_family.hpp"

namespace devtensor {
namespace distribute {

namespace cdo_detail {

/// TensorFlow's HierarchicalCopyAllReduce (built for the DGX-1's two groups of four GPUs: sum within a
/// group, exchange between the groups' main devices, broadcast back) generalised to every device
/// count: the sum of `parts[k]` (on device k) on every device, with main devices rotating with
/// `index`.
template <Numeric T>
std::vector<Tensor<T>> hierarchical_copy(const std::vector<Tensor<T>>& parts, std::size_t index) {
  const std::size_t n = parts.size();
  if (n == 1) return parts;
  const std::size_t h = n / 2;
  std::vector<std::size_t> group_a, group_b;
  for (std::size_t k = 0; k < n; ++k) (k < h ? group_a : group_b).push_back(k);
  const std::size_t main0 = index % n;
  const bool in_a = main0 < h;
  const auto& g0 = in_a ? group_a : group_b;
  const auto& g1 = in_a ? group_b : group_a;
  const std::size_t position = in_a ? main0 : main0 - h;
  const std::size_t main1 = g1[position % g1.size()];
  auto device = [&](std::size_t k) -> const Device& { return parts[k].device_info(); };
  auto group_sum = [&](const std::vector<std::size_t>& group, std::size_t main) {
    std::vector<Tensor<T>> members;
    for (auto k : group) members.push_back(parts[k]);
    return sum_on(members, device(main));
  };
  const Tensor<T> total0 = sum_on(std::vector{group_sum(g0, main0), group_sum(g1, main1)}, device(main0));
  const Tensor<T> total1 = copy_to(total0, device(main1));
  std::vector<Tensor<T>> out(n);
  for (auto k : g0) out[k] = copy_to(total0, device(k));
  for (auto k : g1) out[k] = copy_to(total1, device(k));
  return out;
}

/// All-reduce by copies, every device included for any device count.
struct HierarchicalCopyEngine {
  static constexpr std::string_view name = "HierarchicalCopyAllReduce";
  static constexpr std::string_view validation_name = "HierarchicalCopy";
  static constexpr const char* pack_prefix = "hierarchical_copy";
  [[nodiscard]] static constexpr bool available() noexcept { return true; }
  template <Numeric T>
  static std::vector<Tensor<T>> all_reduce(const std::vector<Tensor<T>>& parts, std::size_t index) {
    return hierarchical_copy(parts, index);
  }
};

}  // namespace cdo_detail

using HierarchicalCopyAllReduce = AllReduceOps<cdo_detail::HierarchicalCopyEngine>;

}  // namespace distribute
}  // namespace devtensor
