// Runs a libFuzzer target without libFuzzer (used where clang's -fsanitize=fuzzer is missing, and
// under the g++ sanitizer builds): every corpus file, then random mutations of them for a bounded
// time. Usage: driver <seconds> <corpus dir>...
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s <seconds> <corpus dir>...\n", argv[0]);
    return 2;
  }
  const double seconds = std::atof(argv[1]);
  std::vector<std::string> corpus;
  for (int i = 2; i < argc; ++i)
    for (const auto& entry : std::filesystem::directory_iterator(argv[i])) {
      std::ifstream in(entry.path(), std::ios::binary);
      corpus.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
  if (corpus.empty()) corpus.emplace_back("/gpu:0");
  auto run = [](const std::string& s) {
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(s.data()), s.size());
  };
  for (const auto& s : corpus) run(s);

  // Mutations: byte flips, inserts of grammar fragments, splices, truncations.
  static const char* fragments[] = {"/job:", "/replica:", "/task:", "/device:",   "/gpu:", "/CPU:", "*",  ":",
                                    "/",     "0",         "9",      "2147483648", "GPU",   "a_1",   "\n", "-"};
  std::mt19937_64 rng(12345);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::uint64_t runs = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    for (int batch = 0; batch < 256; ++batch, ++runs) {
      std::string s = corpus[rng() % corpus.size()];
      const int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits; ++e) {
        const std::size_t pos = s.empty() ? 0 : rng() % (s.size() + 1);
        switch (rng() % 5) {
          case 0:
            if (!s.empty()) s[pos % s.size()] = static_cast<char>(rng() % 256);
            break;
          case 1: s.insert(pos, fragments[rng() % std::size(fragments)]); break;
          case 2:
            if (!s.empty()) s.erase(pos % s.size(), 1 + rng() % 4);
            break;
          case 3: s += corpus[rng() % corpus.size()]; break;
          default: s.resize(pos); break;
        }
      }
      run(s);
    }
  }
  std::printf("standalone fuzz driver: %zu corpus inputs, %llu mutated runs, no property violated\n", corpus.size(),
              static_cast<unsigned long long>(runs));
  return 0;
}
