// `ember inspect DIR`: what a pack holds and whether it validates. LLM packs (runtime.json)
// are explained here; TRELLIS stage packs (manifest.json) by inspect_stage_pack.
#include <cstdio>
#include <map>

#include "cli/commands.h"
#include "common/error.h"
#include "formats/llm_pack.h"
#include "tokenizer/tokenizer.h"

namespace ember::cli {
namespace fs = std::filesystem;
using formats::OrderedJson;

namespace {

struct KindTotal {
  uint64_t bytes = 0;
  size_t count = 0;
};

OrderedJson describe(const formats::LlmPackCheck& c) {
  const formats::Runtime& rt = c.file.runtime;
  OrderedJson j;
  j["kind"] = "llm";
  j["dir"] = c.dir.string();
  j["valid"] = c.ok();
  OrderedJson problems = OrderedJson::array();
  for (const auto& p : c.problems.list()) problems.push_back(p.to_string());
  j["problems"] = problems;
  if (!c.parsed) return j;
  j["shape"] = formats::to_json(rt.shape);
  j["weightBytes"] = rt.weight_bytes;
  j["weightsFileBytes"] = c.weights_file_bytes;
  j["limits"] = {{"maxPositions", rt.max_positions}, {"maxTotalPositions", rt.max_total_positions},
                 {"maxQueries", rt.max_queries}, {"samplePartials", rt.sample_partials}, {"planPosition", rt.plan_position}};
  j["quantization"] = {{"bits", rt.shape.quant_bits}, {"block", rt.shape.quant_block},
                       {"matrices", "symmetric: w = (q - 8) * scale, f32 scale per 32 columns"},
                       {"head", "asymmetric: w = (q - zp) * scale, 4-bit zero point per block; embed.* aliases head.*"},
                       {"down", "stored twice: down.quant (blocks along ffn) and down.kquant (k-major, blocks along hidden)"}};
  const formats::Candidate& cd = c.file.candidate;
  j["downWeight"] = std::string("mlp.down.") + cd.down_copy();
  j["candidate"] = c.file.has_candidate ? formats::to_json(cd) : OrderedJson();
  std::map<std::string, KindTotal> kinds;
  OrderedJson sections = OrderedJson::array();
  for (const auto& s : rt.sections) {
    const formats::SectionSpec* spec = c.expected.find(s.name);
    std::string kind = spec ? formats::section_kind_name(spec->kind) : "unknown";
    OrderedJson sj = {{"name", s.name}, {"offset", s.offset}, {"bytes", s.bytes}, {"kind", kind}};
    if (spec && !spec->alias_of.empty()) {
      sj["aliasOf"] = spec->alias_of;
    } else {
      kinds[kind].bytes += s.bytes;
      kinds[kind].count++;
    }
    sections.push_back(sj);
  }
  OrderedJson by_kind = OrderedJson::object();
  for (const auto& [k, t] : kinds) by_kind[k] = {{"sections", t.count}, {"bytes", t.bytes}};
  j["bytesByKind"] = by_kind;
  j["sections"] = sections;
  j["unknownKeys"] = c.file.unknown_keys;
  return j;
}

std::string rope_text(const formats::LlmShape& s) {
  if (!s.rope_theta) return "";
  char buf[64];
  snprintf(buf, sizeof buf, ", ropeTheta %g", *s.rope_theta);
  return buf;
}

void print_text(const OrderedJson& j, const formats::LlmPackCheck& c) {
  std::printf("LLM pack %s: %s\n", c.dir.c_str(),
              c.ok() ? "valid" : ("INVALID, " + std::to_string(c.problems.size()) + " problem(s)").c_str());
  if (c.parsed) {
    const formats::Runtime& rt = c.file.runtime;
    const formats::LlmShape& s = rt.shape;
    int conv = 0;
    for (auto t : s.layer_types) conv += t == formats::LayerType::Conv;
    std::printf("shape: %lld layers (%d conv, %lld attention), hidden %lld, ffn %lld, vocab %lld, heads %lld (kv %lld) x headDim %lld, convCache %lld, normEps %g%s\n",
                static_cast<long long>(s.layers()), conv, static_cast<long long>(s.layers() - conv), static_cast<long long>(s.hidden),
                static_cast<long long>(s.ffn), static_cast<long long>(s.vocab), static_cast<long long>(s.heads),
                static_cast<long long>(s.kv_heads), static_cast<long long>(s.head_dim), static_cast<long long>(s.conv_cache), s.eps(),
                s.rope_theta ? rope_text(s).c_str() : "");
    std::printf("layers:");
    for (auto t : s.layer_types) std::printf(" %s", formats::layer_type_name(t));
    std::printf("\nquantization: %lld-bit, blocks of %lld; matrices symmetric, head asymmetric with zero points (embed aliases head)\n",
                static_cast<long long>(s.quant_bits), static_cast<long long>(s.quant_block));
    std::printf("down weight in use: %s (candidate '%s', mlpPair %s)\n", j["downWeight"].get<std::string>().c_str(),
                c.file.candidate.key.c_str(), c.file.candidate.mlp_pair ? "true" : "false");
    std::printf("limits: maxPositions %lld, maxTotalPositions %lld, maxQueries %lld, samplePartials %lld\n",
                static_cast<long long>(rt.max_positions), static_cast<long long>(rt.max_total_positions),
                static_cast<long long>(rt.max_queries), static_cast<long long>(rt.sample_partials));
    std::printf("weights: %llu bytes declared, weights.bin %llu bytes\nbytes by kind:\n", static_cast<unsigned long long>(rt.weight_bytes),
                static_cast<unsigned long long>(c.weights_file_bytes));
    for (auto it = j["bytesByKind"].begin(); it != j["bytesByKind"].end(); ++it)
      std::printf("  %-12s %4d sections %12llu bytes (%.1f%%)\n", it.key().c_str(), it.value()["sections"].get<int>(),
                  it.value()["bytes"].get<unsigned long long>(),
                  rt.weight_bytes ? 100.0 * static_cast<double>(it.value()["bytes"].get<unsigned long long>()) / static_cast<double>(rt.weight_bytes) : 0.0);
    std::printf("sections:\n  %-26s %12s %12s  %s\n", "name", "offset", "bytes", "kind");
    for (const auto& sj : j["sections"])
      std::printf("  %-26s %12llu %12llu  %s%s\n", sj["name"].get<std::string>().c_str(), sj["offset"].get<unsigned long long>(),
                  sj["bytes"].get<unsigned long long>(), sj["kind"].get<std::string>().c_str(),
                  sj.contains("aliasOf") ? (" = " + sj["aliasOf"].get<std::string>()).c_str() : "");
    for (const auto& k : c.file.unknown_keys) std::printf("unknown key (kept): %s\n", k.c_str());
  }
  for (const auto& p : c.problems.list()) std::printf("problem: %s\n", p.to_string().c_str());
}

// The pack's tokenizer must load, fit the model's vocabulary and encode plain text without loss:
// a vocabulary too small for that (one entry, say) loads but cannot run the model.
void check_pack_tokenizer(formats::LlmPackCheck& c) {
  if (!c.ok()) return;
  const std::string file = "tokenizer.json";
  try {
    const auto tok = llm::Tokenizer::from_file((c.dir / file).string());
    const size_t vocab = tok.vocab_size();
    const auto rows = static_cast<size_t>(c.file.runtime.shape.vocab);
    if (vocab > rows)
      c.problems.add({file, "vocabulary", std::nullopt, "ids beyond the model's embedding rows", "at most " + std::to_string(rows), std::to_string(vocab)});
    const std::string probe = "Hello, world! 0123456789 The quick brown fox jumps over the lazy dog.";
    if (tok.decode(tok.encode(probe, false), false) != probe)
      c.problems.add({file, "model.vocab", std::nullopt,
                      "the vocabulary (" + std::to_string(vocab) + " entries) cannot encode plain ASCII text", "text encodes and decodes unchanged",
                      "a lossy round trip"});
  } catch (const Error& e) {
    c.problems.add({file, e.where(), std::nullopt, e.problem(), "", ""});
  } catch (const std::exception& e) {
    c.problems.add({file, "", std::nullopt, e.what(), "", ""});
  }
}

}  // namespace

void add_inspect_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("inspect", "explain a pack (LLM runtime pack or TRELLIS stage pack) and validate it");
  auto dir = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  cmd->add_option("dir", *dir, "pack directory")->required();
  cmd->add_flag("--json", *json, "print JSON");
  cmd->callback([dir, json] {
    fs::path d = *dir;
    if (fs::is_regular_file(d / "manifest.json") && !fs::exists(d / "runtime.json")) {
      if (!inspect_stage_pack(d, *json)) throw Error("the stage pack is invalid (problems listed above)", d.string());
      return;
    }
    if (!fs::is_regular_file(d / "runtime.json"))
      throw Error("not a pack: neither runtime.json nor manifest.json", d.string(), "pass a directory written by `ember pack`");
    formats::LlmPackCheck c = formats::check_llm_pack(d);
    formats::check_llm_pack_values(c);
    check_pack_tokenizer(c);
    OrderedJson j = describe(c);
    if (*json) std::printf("%s\n", j.dump(2).c_str());
    else print_text(j, c);
    std::fflush(stdout);  // the report first, then main's error line on stderr
    if (!c.ok()) throw Error("the pack does not validate (" + std::to_string(c.problems.size()) + " problem(s) listed above)", d.string());
  });
}

}  // namespace ember::cli
