// Model files: nn::load_model and model.save of a 100 MB `.keras` archive beside reading the same
// file's bytes (the I/O floor), in the same run; Keras's own load_model of the same archives is
// timed by benchmarks/keras_load_bench.py in the same session (benchmarks/RESULTS.md).
//
// The model: Sequential([Input((2048,)), Dense(4096, relu), Dense(4096, relu), Dense(512)]),
// 27.3 M float32 weights (109 MB). The archive is written once to $DEVTENSOR_BENCH_DIR (default
// /tmp/devtensor_bench): devtensor_100mb.keras; keras_100mb.keras there too when the Python side
// made it first (then its load is timed as well).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "devtensor/devtensor.hpp"
#include "devtensor/saving/keras_archive.hpp"

namespace dt = devtensor;
namespace nn = dt::nn;
namespace fs = std::filesystem;

namespace {
fs::path bench_dir() {
  const char* dir = std::getenv("DEVTENSOR_BENCH_DIR");
  fs::path out = dir ? dir : "/tmp/devtensor_bench";
  fs::create_directories(out);
  return out;
}

nn::Sequential hundred_megabytes() {
  return nn::Sequential({nn::Dense(4096, {.input_dim = 2048, .activation = nn::Activation::relu}),
                         nn::Dense(4096, {.activation = nn::Activation::relu}), nn::Dense(512)},
                        "hundred_megabytes");
}

const fs::path& devtensor_archive() {
  static const fs::path path = [] {
    const fs::path p = bench_dir() / "devtensor_100mb.keras";
    if (!fs::exists(p)) hundred_megabytes().save(p.string());
    return p;
  }();
  return path;
}

void BM_ReadFileBytes(benchmark::State& state) {  // the floor: the archive's bytes into a fresh buffer
  const fs::path& path = devtensor_archive();
  for (auto _ : state) {
    std::vector<char> bytes(fs::file_size(path));
    std::FILE* file = std::fopen(path.c_str(), "rb");
    const std::size_t got = std::fread(bytes.data(), 1, bytes.size(), file);
    std::fclose(file);
    if (got != bytes.size()) state.SkipWithError("short read");
    benchmark::DoNotOptimize(bytes.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(fs::file_size(path)));
}
BENCHMARK(BM_ReadFileBytes)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_LoadModel(benchmark::State& state) {
  const fs::path& path = devtensor_archive();
  for (auto _ : state) benchmark::DoNotOptimize(nn::load_model(path.string())->count_params());
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(fs::file_size(path)));
}
BENCHMARK(BM_LoadModel)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_LoadKerasSavedModel(benchmark::State& state) {
  const fs::path path = bench_dir() / "keras_100mb.keras";
  if (!fs::exists(path)) {
    state.SkipWithError("no keras_100mb.keras: run benchmarks/keras_load_bench.py first");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(nn::load_model(path.string())->count_params());
}
BENCHMARK(BM_LoadKerasSavedModel)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_SaveModel(benchmark::State& state) {
  auto model = hundred_megabytes();
  const fs::path path = bench_dir() / "devtensor_100mb_saved.keras";
  for (auto _ : state) model.save(path.string());
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(fs::file_size(path)));
}
BENCHMARK(BM_SaveModel)->Unit(benchmark::kMillisecond)->UseRealTime();
}  // namespace
