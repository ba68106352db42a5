// Replays every file of the given corpus folders (or single files) through
// the fuzzer's harness, LLVMFuzzerTestOneInput of fuzz/lstm_fuzz.cpp: the same
// decoder and the same oracle (errors, shapes, the reference within the
// suite's tolerances, _out forms, 1 vs 2 threads, untouched inputs), built
// with the default compiler and without libFuzzer, so that the oracle runs in
// every ctest run and not only in the clang fuzz build. A violation aborts
// (the harness prints the case; the handler below names the file).
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size);

namespace {

char g_current[4096] = "";

void name_the_input(int) {
  const char prefix[] = "corpus_replay: the failing input is ";
  (void)!write(2, prefix, sizeof prefix - 1);
  (void)!write(2, g_current, std::strlen(g_current));
  (void)!write(2, "\n", 1);
}

std::vector<std::filesystem::path> inputs_of(const std::filesystem::path& arg) {
  std::vector<std::filesystem::path> files;
  if (std::filesystem::is_directory(arg)) {
    for (const auto& entry : std::filesystem::directory_iterator(arg)) {
      if (entry.is_regular_file()) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
  } else {
    files.push_back(arg);
  }
  return files;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
    return 2;
  }
  std::signal(SIGABRT, name_the_input);
  std::size_t replayed = 0;
  for (int a = 1; a < argc; ++a) {
    for (const std::filesystem::path& file : inputs_of(argv[a])) {
      std::ifstream in(file, std::ios::binary);
      if (!in) {
        std::fprintf(stderr, "corpus_replay: cannot read %s\n", file.c_str());
        return 1;
      }
      const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                       std::istreambuf_iterator<char>());
      std::snprintf(g_current, sizeof g_current, "%s", file.c_str());
      LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
      ++replayed;
    }
  }
  std::printf("corpus_replay: %zu inputs through the harness, no finding\n", replayed);
  return replayed > 0 ? 0 : 1;
}
