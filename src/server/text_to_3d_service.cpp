#include "server/text_to_3d_service.h"

#include <chrono>
#include <cmath>
#include <set>

#include "common/error.h"
#include "formats/glb.h"
#include "formats/png.h"
#include "gpu/kernel.h"
#include "server/api_error.h"
#include "server/http_listener.h"
#include "server/openai_format.h"
#include "server/request_parse.h"
#include "trellis/iso_mesh.h"
#include "trellis/preview.h"
#include "trellis/text_to_3d.h"

namespace ember::server {
namespace {

using json = nlohmann::json;

// Bounds that keep one request from holding the GPU for long: the released pipelines use 25
// steps; a prompt longer than CLIP's context is cut by the tokenizer anyway.
constexpr int kMaxSteps = 100;
constexpr size_t kMaxPromptBytes = 4096;

std::string base64(const std::vector<uint8_t>& bytes) {
  static const char* a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const uint32_t n = uint32_t(bytes[i]) << 16 | (i + 1 < bytes.size() ? uint32_t(bytes[i + 1]) << 8 : 0) |
                       (i + 2 < bytes.size() ? uint32_t(bytes[i + 2]) : 0);
    out += a[n >> 18 & 63];
    out += a[n >> 12 & 63];
    out += i + 1 < bytes.size() ? a[n >> 6 & 63] : '=';
    out += i + 2 < bytes.size() ? a[n & 63] : '=';
  }
  return out;
}

std::string text_field(const json& obj, const char* name, bool required) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) {
    if (required) throw ApiError::bad_request(std::string("'") + name + "' is required", name, "missing_required_parameter");
    return "";
  }
  if (!it->is_string()) throw ApiError::bad_request(std::string("'") + name + "' must be a string", name, "invalid_type");
  std::string s = it->get<std::string>();
  if (s.size() > kMaxPromptBytes)
    throw ApiError::bad_request(std::string("'") + name + "' is longer than " + std::to_string(kMaxPromptBytes) + " bytes", name);
  return s;
}

template <typename T>
T number_field(const json& obj, const char* name, T lo, T hi, T absent) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return absent;
  const bool ok = std::is_integral_v<T> ? it->is_number_integer() : it->is_number();
  if (!ok) throw ApiError::bad_request(std::string("'") + name + "' must be " + (std::is_integral_v<T> ? "an integer" : "a number"), name, "invalid_type");
  const double d = it->get<double>();
  if (!std::isfinite(d) || d < double(lo) || d > double(hi) || (it->is_number_integer() && it->is_number_unsigned() && it->get<uint64_t>() > uint64_t(hi)))
    throw ApiError::bad_request(std::string("'") + name + "' = " + it->dump() + " is out of range [" + json(lo).dump() + ", " + json(hi).dump() + "]", name);
  return it->get<T>();
}

}  // namespace

TextTo3DService::TextTo3DService(const std::filesystem::path& stages, const gpu::DeviceOptions& device, uint32_t max_waiting)
    : config_(trellis::read_pipeline_config(stages)), max_waiting_(max_waiting) {
  device_ = std::make_unique<gpu::Device>(gpu::Device::open(device));
  kernels_ = std::make_unique<gpu::KernelCache>(*device_);
  pipeline_ = std::make_unique<trellis::TextTo3DPipeline>(*kernels_, config_);
}

TextTo3DService::~TextTo3DService() = default;

TextTo3DJob TextTo3DService::parse(const std::string& body) const {
  const json obj = parse_json_object(body, 8);
  static const std::set<std::string> known = {"prompt", "negative_prompt", "seed", "steps", "cfg", "preview_size"};
  for (auto it = obj.begin(); it != obj.end(); ++it)
    if (!known.count(it.key()))
      throw ApiError::bad_request("unrecognized request argument supplied: '" + it.key() + "' (known: prompt, negative_prompt, seed, steps, cfg, preview_size)",
                                  it.key(), "unknown_parameter");
  TextTo3DJob job;
  job.prompt = text_field(obj, "prompt", true);
  if (job.prompt.empty()) throw ApiError::bad_request("'prompt' is empty: say what to make", "prompt");
  job.negative_prompt = text_field(obj, "negative_prompt", false);
  job.seed = number_field<uint64_t>(obj, "seed", 0, uint64_t(1) << 53, 0);
  job.steps = number_field<int>(obj, "steps", 1, kMaxSteps, 0);
  job.cfg = number_field<double>(obj, "cfg", 0, 100, -1);
  job.preview_size = number_field<uint32_t>(obj, "preview_size", 16, 1024, 256);
  return job;
}

TextTo3DResult TextTo3DService::run(const TextTo3DJob& job) {
  {
    std::unique_lock lock(mutex_);
    if (busy_ && waiting_ >= max_waiting_) throw ApiError::busy("the text-to-3D pipeline is busy: retry later");
    waiting_++;
    turn_.wait(lock, [&] { return !busy_; });
    waiting_--;
    busy_ = true;
  }
  struct Release {
    TextTo3DService& s;
    ~Release() {
      std::lock_guard lock(s.mutex_);
      s.busy_ = false;
      s.turn_.notify_one();
    }
  } release{*this};

  const auto t0 = std::chrono::steady_clock::now();
  trellis::TextTo3DRequest req{job.prompt, job.negative_prompt, job.seed, 1, config_.sampler};
  if (job.steps) req.sampler.steps = job.steps;
  if (job.cfg >= 0) req.sampler.cfg_strength = job.cfg;
  auto samples = pipeline_->run(req);
  const auto& smp = samples.at(0);
  TextTo3DResult r;
  const trellis::TriangleMesh mesh = trellis::iso_surface(smp.logits, smp.extent);
  r.glb = formats::glb_bytes({mesh.positions, mesh.normals, mesh.indices, "occupancy", "ember serve"});
  const trellis::PreviewImage preview = trellis::render_preview(*kernels_, smp.logits, smp.extent, job.preview_size);
  r.preview_png = formats::png_bytes(preview.rgba, preview.width, preview.height);
  r.vertices = mesh.vertices();
  r.triangles = mesh.triangles();
  r.occupied = smp.occupied;
  r.steps = req.sampler.steps;
  r.cfg = req.sampler.cfg_strength;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

json TextTo3DService::info() const {
  return {{"object", "text_to_3d.pipeline"}, {"available", true}, {"stages", config_.dir.filename().string()},
          {"steps", config_.sampler.steps}, {"cfg", config_.sampler.cfg_strength}, {"max_steps", kMaxSteps},
          {"random_stages", pipeline_->random_stages()}};
}

json text_to_3d_response(const TextTo3DResult& r) {
  return {{"object", "text_to_3d.asset"}, {"glb", base64(r.glb)}, {"preview_png", base64(r.preview_png)},
          {"vertices", r.vertices}, {"triangles", r.triangles}, {"occupied_voxels", r.occupied},
          {"steps", r.steps}, {"cfg", r.cfg}, {"seconds", r.seconds}};
}

void serve_text_to_3d(TextTo3DService* service, const HttpRequest& req, HttpResponder& res) {
  const std::string kJson = "application/json";
  if (req.method != "GET" && req.method != "POST")
    return (void)res.send(405, kJson,
                          error_body("method " + req.method + " is not allowed on " + req.path + " (use GET or POST)",
                                     "invalid_request_error", std::nullopt, "method_not_allowed"),
                          {{"Allow", "GET, POST"}});
  const std::string unavailable =
      "this server has no text-to-3D pipeline: start it with `ember serve --stages DIR` (a pipeline folder with pipeline.json, "
      "as `ember text-to-3d --stages` takes; `ember synth trellis-pipeline --small --out DIR` makes a small random one)";
  if (req.method == "GET")
    return (void)res.send(200, kJson,
                          dump(service ? service->info()
                                       : json{{"object", "text_to_3d.pipeline"}, {"available", false}, {"message", unavailable}}));
  if (!service) return (void)res.send(404, kJson, error_body(unavailable, "invalid_request_error", std::nullopt, "text_to_3d_unavailable"));
  const TextTo3DJob job = service->parse(req.body);  // ApiError: the server's handler answers it
  res.send(200, kJson, dump(text_to_3d_response(service->run(job))));
}

}  // namespace ember::server
