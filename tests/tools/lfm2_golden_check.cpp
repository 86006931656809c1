// ember_golden_check: ember against a golden directory that transformers wrote
// (tools/golden/make_lfm2_goldens.py), for tools/golden/device_check.sh.
//   - the CPU reference (tests/reference) on the pack's weights, module by module, every position;
//   - GPU logits files of `ember logits` (--logits NAME=FILE.npy: every position, or the last);
//   - greedy generation of `ember generate --tokens-file ... --json --dump-logits` (ids and logits,
//     step by step while the ids agree).
// Prints a table; exits 0 when every comparison is within the tolerance, 1 when one is not, 2 on
// bad input.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "formats/npy.h"
#include "lfm2_test_pack.h"
#include "reference/lfm2_golden.h"

using namespace ember;
using reference::GoldenModule;
using reference::ModuleCheck;

namespace {

GoldenModule read_rows(const std::string& path, const std::string& name) {
  const formats::NpyArray a = formats::read_npy(path);
  if (a.shape.size() != 2) throw Error("expected a 2-D array [rows, vocab]", path);
  return {name, a.shape[0], a.shape[1], a.to_f32()};
}

// The golden's best id minus its second best logit at row t: how near a tie the greedy pick was.
double top_margin(const GoldenModule& m, int64_t t) {
  auto row = m.row(t);
  std::vector<float> v(row.begin(), row.end());
  std::partial_sort(v.begin(), v.begin() + 2, v.end(), std::greater<float>());
  return double(v[0]) - v[1];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ember against a golden directory of transformers' outputs (tools/golden)"};
  std::string pack_dir, golden_dir, down, generate_json, generate_logits;
  double tolerance = 1e-3;
  bool no_reference = false;
  std::vector<std::string> logits;
  app.add_option("--pack", pack_dir, "the ember pack of the checkpoint the goldens were made from")->required();
  app.add_option("--golden", golden_dir, "the golden directory (index.json)")->required();
  app.add_option("--down", down, "the down copy the CPU reference reads: quant or kquant (default: the pack's candidate)");
  app.add_option("--tolerance", tolerance, "largest rel L2 per module and position")->capture_default_str();
  app.add_option("--logits", logits, "NAME=FILE.npy: logits of `ember logits` over the golden's ids");
  app.add_option("--generate-json", generate_json, "the --json output of `ember generate --tokens-file IDS.npy --temperature 0`");
  app.add_option("--generate-logits", generate_logits, "that run's --dump-logits FILE.npy");
  app.add_flag("--no-reference", no_reference, "skip the CPU reference's modules (large shapes: it is slow)");
  CLI11_PARSE(app, argc, argv);
  try {
    const reference::GoldenDir golden = reference::read_golden_dir(golden_dir);
    const GoldenModule* want = golden.find("lm_head");
    if (!want) throw Error("the golden has no lm_head (logits) module", golden_dir);
    std::vector<ModuleCheck> checks;
    if (!no_reference) {
      auto pack = formats::LlmPack::open(pack_dir);
      const auto weights = test::reference_weights(pack, down.empty() ? pack.candidate().down_copy() : down);
      const auto ours = reference::reference_golden(weights, golden.ids, 0, "ember CPU reference");
      std::map<std::string, GoldenModule> by_name;
      for (const auto& m : ours.modules) by_name.emplace(m.name, m);
      for (auto c : reference::compare_modules(golden, by_name)) {
        c.name = "cpu " + c.name;
        checks.push_back(c);
      }
    }
    for (const std::string& spec : logits) {
      const size_t eq = spec.find('=');
      if (eq == std::string::npos) throw Error("'" + spec + "' is not NAME=FILE.npy", "--logits");
      const GoldenModule got = read_rows(spec.substr(eq + 1), spec.substr(0, eq));
      // A single row is --positions last: the golden's last position.
      const int64_t first = got.rows == 1 ? want->rows - 1 : 0;
      if (got.rows != 1 && got.rows != want->rows)
        throw Error(std::to_string(got.rows) + " rows for " + std::to_string(want->rows) + " ids", spec.substr(eq + 1));
      checks.push_back(reference::compare_rows("gpu " + got.name, got, *want, first));
    }
    if (!generate_json.empty()) {
      if (!golden.generate_logits) throw Error("the golden has no greedy generation", golden_dir);
      std::ifstream in(generate_json);
      const auto j = nlohmann::json::parse(in);
      const auto ids = j.at("ids").get<std::vector<uint32_t>>();
      size_t agree = 0;
      while (agree < ids.size() && agree < golden.generate_ids.size() && ids[agree] == golden.generate_ids[agree]) agree++;
      const size_t n = std::min(ids.size(), golden.generate_ids.size());
      ModuleCheck c{"gpu generate ids (" + std::to_string(agree) + " of " + std::to_string(n) + " agree)", agree == n ? 0.0 : 1.0, -1,
                    static_cast<int64_t>(n)};
      if (agree < n)
        c.problem = "first differs at step " + std::to_string(agree) + " (golden top-2 margin there " +
                    std::to_string(top_margin(*golden.generate_logits, static_cast<int64_t>(agree))) + ")";
      checks.push_back(c);
      if (!generate_logits.empty()) {
        GoldenModule got = read_rows(generate_logits, "generate logits");
        // Steps after the first disagreement have another context: compare up to it.
        got.rows = std::min<int64_t>(got.rows, static_cast<int64_t>(agree) + 1);
        got.values.resize(size_t(got.rows * got.cols));
        checks.push_back(reference::compare_rows("gpu generate logits", got, *golden.generate_logits));
      }
    }
    std::printf("golden %s (%s), %zu ids; tolerance %.1e\n%s", golden_dir.c_str(), golden.producer.c_str(), golden.ids.size(), tolerance,
                reference::check_table(checks, tolerance).c_str());
    const bool ok = std::all_of(checks.begin(), checks.end(), [&](const ModuleCheck& c) { return c.passed(tolerance); });
    std::printf("%s\n", ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
