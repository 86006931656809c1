#include "trellis/pipeline_config.h"

#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/error.h"

namespace ember::trellis {
using nlohmann::json;

namespace {

std::string stage_name(const json& models, const char* key, const std::string& where) {
  if (!models.contains(key)) throw Error("models." + std::string(key) + " is missing", where, "name the stage directory");
  if (!models[key].is_string() || models[key].get<std::string>().empty())
    throw Error("models." + std::string(key) + " must be a directory name", where);
  const std::string s = models[key];
  if (std::filesystem::path(s).is_absolute() || s.find("..") != std::string::npos)
    throw Error("models." + std::string(key) + " '" + s + "' must be a directory inside the pipeline folder", where);
  return s;
}

double number(const json& p, const char* key, double def, const std::string& where) {
  if (!p.contains(key)) return def;
  if (!p[key].is_number()) throw Error(std::string("sparse_structure_sampler.params.") + key + " must be a number", where);
  return p[key].get<double>();
}

}  // namespace

PipelineConfig read_pipeline_config(const std::filesystem::path& dir) {
  const auto path = dir / kPipelineFile;
  const std::string where = path.string();
  if (!std::filesystem::exists(path))
    throw Error("no pipeline.json", dir.string(), "point --stages at a pipeline folder (`ember synth trellis-pipeline` writes one)");
  json j;
  try {
    j = json::parse(read_file(path));
  } catch (const json::parse_error& e) {
    throw Error(std::string("malformed JSON: ") + e.what(), where);
  }
  if (!j.is_object() || !j.contains("args") || !j["args"].is_object()) throw Error("'args' object is missing", where);
  const json& a = j["args"];
  if (!a.contains("models") || !a["models"].is_object()) throw Error("args.models is missing", where);
  PipelineConfig c;
  c.dir = dir;
  c.text_encoder = stage_name(a["models"], "text_encoder", where);
  c.ss_flow = stage_name(a["models"], "sparse_structure_flow_model", where);
  c.ss_decoder = stage_name(a["models"], "sparse_structure_decoder", where);
  if (a.contains("sparse_structure_sampler")) {
    const json& s = a["sparse_structure_sampler"];
    if (s.contains("name") && s["name"] != "FlowEulerGuidanceIntervalSampler" && s["name"] != "FlowEulerCfgSampler")
      throw Error("sampler " + s["name"].dump() + " is not implemented", where, "ember runs FlowEulerGuidanceIntervalSampler");
    const json p = s.value("params", json::object());
    if (p.contains("steps") && !p["steps"].is_number_integer()) throw Error("sparse_structure_sampler.params.steps must be an integer", where);
    c.sampler.steps = p.value("steps", c.sampler.steps);
    c.sampler.cfg_strength = number(p, "cfg_strength", c.sampler.cfg_strength, where);
    c.sampler.rescale_t = number(p, "rescale_t", c.sampler.rescale_t, where);
    if (p.contains("cfg_interval")) {
      const json& iv = p["cfg_interval"];
      if (!iv.is_array() || iv.size() != 2 || !iv[0].is_number() || !iv[1].is_number())
        throw Error("sparse_structure_sampler.params.cfg_interval must be [lo, hi]", where);
      c.sampler.cfg_lo = iv[0];
      c.sampler.cfg_hi = iv[1];
    }
  }
  try {
    c.sampler.validate();
  } catch (const Error& e) {
    throw Error(e.problem(), where + ": sparse_structure_sampler.params");
  }
  return c;
}

std::string pipeline_json(const PipelineConfig& c) {
  json j = {{"name", "TrellisTextTo3DPipeline"},
            {"args",
             {{"models", {{"text_encoder", c.text_encoder}, {"sparse_structure_flow_model", c.ss_flow}, {"sparse_structure_decoder", c.ss_decoder}}},
              {"sparse_structure_sampler",
               {{"name", "FlowEulerGuidanceIntervalSampler"},
                {"args", {{"sigma_min", 1e-5}}},
                {"params",
                 {{"steps", c.sampler.steps}, {"cfg_strength", c.sampler.cfg_strength},
                  {"cfg_interval", {c.sampler.cfg_lo, c.sampler.cfg_hi}}, {"rescale_t", c.sampler.rescale_t}}}}}}}};
  return j.dump(2) + "\n";
}

}  // namespace ember::trellis
