// POST /v1/text-to-3d of `ember serve --stages DIR`: a prompt -> a GLB mesh and a PNG preview through
// the TRELLIS pipeline (trellis/text_to_3d.h), for the web page's 3D tab and any HTTP client.
//
// The pipeline gets a GPU device of its own, opened and compiled once at start: the LLM's
// scheduler thread owns the session's device and never yields it between steps, so sharing it
// would need a lock on every decode step. Requests run one at a time (a job holds the pipeline's
// buffers); a few more wait their turn, beyond them 503.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpu/device.h"
#include "trellis/pipeline_config.h"

namespace ember::gpu {
class KernelCache;
}
namespace ember::trellis {
class TextTo3DPipeline;
}

namespace ember::server {

struct HttpRequest;
class HttpResponder;

struct TextTo3DJob {
  std::string prompt, negative_prompt;
  uint64_t seed = 0;
  int steps = 0;     // 0: pipeline.json's
  double cfg = -1;   // < 0: pipeline.json's
  uint32_t preview_size = 256;
};

struct TextTo3DResult {
  std::vector<uint8_t> glb, preview_png;
  size_t vertices = 0, triangles = 0, occupied = 0;
  int steps = 0;
  double cfg = 0, seconds = 0;
};

class TextTo3DService {
 public:
  // Opens the pipeline folder and its stages on a device of its own (compiling their shaders).
  // Throws ember::Error naming the folder or stage when they do not fit together.
  TextTo3DService(const std::filesystem::path& stages, const gpu::DeviceOptions& device, uint32_t max_waiting = 4);
  ~TextTo3DService();

  // The request body of POST /v1/text-to-3d; throws ApiError (400) naming the field.
  TextTo3DJob parse(const std::string& body) const;
  // Runs one job (waiting for the one before it); throws ApiError (503) when too many wait.
  TextTo3DResult run(const TextTo3DJob& job);
  // GET /v1/text-to-3d: the defaults and what the stages are.
  nlohmann::json info() const;

 private:
  trellis::PipelineConfig config_;
  std::unique_ptr<gpu::Device> device_;
  std::unique_ptr<gpu::KernelCache> kernels_;
  std::unique_ptr<trellis::TextTo3DPipeline> pipeline_;
  std::mutex mutex_;
  std::condition_variable turn_;
  bool busy_ = false;
  uint32_t waiting_ = 0, max_waiting_;
};

// The body of a result (JSON with the GLB and PNG as base64), as the route answers it.
nlohmann::json text_to_3d_response(const TextTo3DResult& r);
// The route: GET the pipeline's info, POST a job. `service` null: the server has no --stages (GET
// says so, POST is 404 with how to enable it).
void serve_text_to_3d(TextTo3DService* service, const HttpRequest& req, HttpResponder& res);

}  // namespace ember::server
