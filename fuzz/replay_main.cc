// Replays inputs through a fuzz target without libFuzzer (any compiler, any sanitizer): every
// file named, and every file in every directory named. The test command replays the seed corpora
// and the regression inputs (crashes found by fuzzing) this way.

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz/fuzz_target.h"

int main(int argc, char** argv) {
  std::vector<std::filesystem::path> files;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path p = argv[i];
    if (std::filesystem::is_directory(p)) {
      for (const auto& entry : std::filesystem::recursive_directory_iterator(p))
        if (entry.is_regular_file()) files.push_back(entry.path());
    } else if (std::filesystem::exists(p)) {
      files.push_back(p);
    }
  }
  for (const auto& file : files) {
    std::ifstream in(file, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("replayed %zu inputs without a finding\n", files.size());
  return files.empty() ? 1 : 0;  // an empty corpus would make the test a no-op
}
