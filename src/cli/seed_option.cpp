// `--seed` wherever a command has one: -1 asks for a random seed (as llama.cpp users expect),
// and the seed drawn is printed so that the run can be repeated.
#include <cstdio>
#include <limits>
#include <random>

#include "cli/commands.h"

namespace ember::cli {

CLI::Option* add_seed_option(CLI::App& cmd, int64_t& seed, const std::string& description) {
  return cmd.add_option("--seed", seed, description + " (-1 = random, printed)")
      ->check(CLI::Range(int64_t{-1}, std::numeric_limits<int64_t>::max()));
}

uint64_t resolve_seed(int64_t seed, const std::string& command) {
  if (seed >= 0) return static_cast<uint64_t>(seed);
  std::random_device rd;
  const uint64_t drawn = ((uint64_t(rd()) << 32) | rd()) & uint64_t(std::numeric_limits<int64_t>::max());
  std::fprintf(stderr, "%s: seed %llu\n", command.c_str(), static_cast<unsigned long long>(drawn));
  return drawn;
}

}  // namespace ember::cli
