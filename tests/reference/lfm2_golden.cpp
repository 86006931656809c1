#include "reference/lfm2_golden.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/error.h"
#include "formats/npy.h"

namespace ember::reference {
namespace fs = std::filesystem;

namespace {

constexpr const char* kFormat = "ember-lfm2-golden";

// A file named in index.json: a plain name inside the directory (no path of its own).
fs::path member(const fs::path& dir, const nlohmann::json& name, const std::string& what) {
  if (!name.is_string()) throw Error(what + " is not a file name", (dir / "index.json").string());
  const std::string n = name.get<std::string>();
  if (n.empty() || n.find('/') != std::string::npos || n == "." || n == "..")
    throw Error(what + " '" + n + "' is not a file of the directory", (dir / "index.json").string(), "name files inside the golden directory");
  return dir / n;
}

std::vector<uint32_t> read_ids(const fs::path& path) {
  const formats::NpyArray a = formats::read_npy(path);
  if (a.shape.size() != 1) throw Error("token ids must be a 1-D array", path.string());
  std::vector<uint32_t> ids;
  for (int64_t v : a.to_i64()) {
    if (v < 0 || v > UINT32_MAX) throw Error("token id " + std::to_string(v) + " is not a valid id", path.string());
    ids.push_back(static_cast<uint32_t>(v));
  }
  return ids;
}

GoldenModule read_module(const fs::path& path, const std::string& name) {
  const formats::NpyArray a = formats::read_npy(path);
  if (a.shape.size() != 2) throw Error("module '" + name + "' must be a 2-D array [positions, width]", path.string());
  return {name, a.shape[0], a.shape[1], a.to_f32()};
}

void write_module(const fs::path& path, const GoldenModule& m) {
  const int64_t shape[2] = {m.rows, m.cols};
  formats::write_npy_f32(path, shape, m.values);
}

void write_ids(const fs::path& path, const std::vector<uint32_t>& ids) {
  const int64_t n = static_cast<int64_t>(ids.size());
  formats::write_npy(path, formats::NpyDType::U32, std::span<const int64_t>(&n, 1),
                     std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(ids.data()), ids.size() * 4));
}

}  // namespace

const GoldenModule* GoldenDir::find(const std::string& name) const {
  for (const auto& m : modules)
    if (m.name == name) return &m;
  return nullptr;
}

GoldenDir read_golden_dir(const fs::path& dir) {
  const fs::path index_path = dir / "index.json";
  const std::string where = index_path.string();
  nlohmann::json index;
  try {
    index = nlohmann::json::parse(read_file(index_path));
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("not JSON: ") + e.what(), where);
  }
  if (!index.is_object() || index.value("format", std::string()) != kFormat)
    throw Error("not a golden index (format is not '" + std::string(kFormat) + "')", where, "make it with tools/golden/make_lfm2_goldens.py");
  if (index.value("version", 0) != 1) throw Error("unsupported version " + index.value("version", nlohmann::json()).dump(), where);
  GoldenDir g;
  g.producer = index.value("producer", std::string());
  g.ids = read_ids(member(dir, index["ids"], "ids"));
  if (g.ids.empty()) throw Error("no token ids", where);
  if (!index.contains("modules") || !index["modules"].is_array()) throw Error("no \"modules\" list", where);
  for (const auto& m : index["modules"]) {
    if (!m.is_object() || !m.contains("name") || !m["name"].is_string()) throw Error("a module entry without a name", where);
    const std::string name = m["name"].get<std::string>();
    GoldenModule mod = read_module(member(dir, m.value("file", nlohmann::json()), "module '" + name + "' file"), name);
    if (mod.rows != static_cast<int64_t>(g.ids.size()))
      throw Error("module '" + name + "' has " + std::to_string(mod.rows) + " rows for " + std::to_string(g.ids.size()) + " ids", where);
    if (g.find(name)) throw Error("module '" + name + "' is listed twice", where);
    g.modules.push_back(std::move(mod));
  }
  if (index.contains("generate")) {
    const auto& gen = index["generate"];
    g.generate_ids = read_ids(member(dir, gen.value("ids", nlohmann::json()), "generate ids"));
    g.generate_logits = read_module(member(dir, gen.value("logits", nlohmann::json()), "generate logits"), "generate logits");
    if (g.generate_logits->rows != static_cast<int64_t>(g.generate_ids.size()))
      throw Error("generate logits have " + std::to_string(g.generate_logits->rows) + " rows for " + std::to_string(g.generate_ids.size()) +
                      " generated ids",
                  where);
  }
  return g;
}

void write_golden_dir(const fs::path& dir, const GoldenDir& g) {
  if (fs::exists(dir)) throw Error("already exists", dir.string(), "give a new directory");
  build_directory_atomic(dir, [&](const fs::path& tmp) {
    nlohmann::ordered_json index = {{"format", kFormat}, {"version", 1}, {"producer", g.producer}, {"ids", "ids.npy"}};
    write_ids(tmp / "ids.npy", g.ids);
    nlohmann::ordered_json modules = nlohmann::ordered_json::array();
    for (const auto& m : g.modules) {
      const std::string file = m.name + ".npy";
      write_module(tmp / file, m);
      modules.push_back({{"name", m.name}, {"file", file}});
    }
    index["modules"] = modules;
    if (g.generate_logits) {
      write_ids(tmp / "generate_ids.npy", g.generate_ids);
      write_module(tmp / "generate_logits.npy", *g.generate_logits);
      index["generate"] = {{"ids", "generate_ids.npy"}, {"logits", "generate_logits.npy"}};
    }
    write_file_atomic(tmp / "index.json", index.dump(2) + "\n");
  });
}

GoldenDir reference_golden(const Lfm2Weights& weights, const std::vector<uint32_t>& ids, uint32_t generate, const std::string& producer) {
  GoldenDir g;
  g.producer = producer;
  g.ids = ids;
  Lfm2Reference ref(weights);
  std::map<std::string, size_t> at;  // module -> index in g.modules
  auto tap = [&](const std::string& name, std::span<const double> v) {
    auto [it, fresh] = at.try_emplace(name, g.modules.size());
    if (fresh) g.modules.push_back({name, 0, static_cast<int64_t>(v.size()), {}});
    GoldenModule& m = g.modules[it->second];
    for (double x : v) m.values.push_back(static_cast<float>(x));
    m.rows++;
  };
  std::vector<float> logits;
  for (uint32_t id : ids) logits = ref.step(id, tap);
  if (generate > 0) g.generate_logits = GoldenModule{"generate logits", 0, static_cast<int64_t>(logits.size()), {}};
  for (uint32_t i = 0; i < generate; i++) {
    const uint32_t next = static_cast<uint32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    g.generate_ids.push_back(next);
    g.generate_logits->values.insert(g.generate_logits->values.end(), logits.begin(), logits.end());
    g.generate_logits->rows++;
    if (i + 1 < generate) logits = ref.step(next);
  }
  return g;
}

double rel_l2(std::span<const float> got, std::span<const float> want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size() && i < got.size(); i++) {
    const double d = double(got[i]) - want[i];
    num += d * d;
    den += double(want[i]) * want[i];
  }
  if (got.size() != want.size() || std::isnan(num)) return INFINITY;
  return den == 0 ? std::sqrt(num) : std::sqrt(num / den);
}

ModuleCheck compare_rows(const std::string& name, const GoldenModule& got, const GoldenModule& want, int64_t first) {
  ModuleCheck c{name};
  if (got.cols != want.cols) {
    c.problem = "width " + std::to_string(got.cols) + ", golden " + std::to_string(want.cols);
    return c;
  }
  for (int64_t t = 0; t < got.rows && first + t < want.rows; t++) {
    const double d = rel_l2(got.row(t), want.row(first + t));
    if (!(d <= c.worst) || c.worst_at < 0) {
      c.worst = d;
      c.worst_at = first + t;
    }
    c.compared++;
  }
  if (c.compared == 0) c.problem = "no rows to compare";
  return c;
}

std::vector<ModuleCheck> compare_modules(const GoldenDir& golden, const std::map<std::string, GoldenModule>& ours) {
  std::vector<ModuleCheck> out;
  for (const auto& want : golden.modules) {
    auto it = ours.find(want.name);
    if (it == ours.end()) continue;
    out.push_back(compare_rows(want.name, it->second, want));
  }
  for (const auto& [name, m] : ours)
    if (!golden.find(name)) out.push_back({name, 0, -1, 0, "not in the golden"});
  return out;
}

std::string check_table(const std::vector<ModuleCheck>& checks, double tolerance) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-48s %10s %9s %9s  %s\n", "module", "rel L2", "at", "positions", "verdict");
  out += line;
  for (const auto& c : checks) {
    if (!c.problem.empty()) std::snprintf(line, sizeof line, "%-48s %10s %9s %9s  FAIL: %s\n", c.name.c_str(), "-", "-", "-", c.problem.c_str());
    else
      std::snprintf(line, sizeof line, "%-48s %10.3e %9lld %9lld  %s\n", c.name.c_str(), c.worst, static_cast<long long>(c.worst_at),
                    static_cast<long long>(c.compared), c.passed(tolerance) ? "ok" : "FAIL");
    out += line;
  }
  return out;
}

}  // namespace ember::reference
