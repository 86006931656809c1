// `ember encode-text`: prompts (or CLIP token ids) -> the text encoder stage's last_hidden_state,
// the text context of TRELLIS-text's flow models, as .npy.
#include <cstdio>

#include "cli/commands.h"
#include "cli/ss_flow_source.h"
#include "common/error.h"
#include "formats/npy.h"
#include "trellis/tensor_files.h"
#include "trellis/text_encoder.h"

namespace ember::cli {
namespace {

// Ids [N, L] or [L] (int32 / int64 / uint32); `single` tells which. The length is checked
// against the stage's context length once the stage is open.
std::vector<std::vector<int32_t>> read_ids(const std::string& path, bool& single) {
  auto a = formats::read_npy(path);
  const std::string where = "--tokens-file " + path;
  if (!formats::npy_is_integer(a.dtype))
    throw Error(std::string("token ids must be integers, the file holds ") + formats::npy_descr(a.dtype), where,
                "write the ids as int32 or int64 (e.g. numpy's input_ids)");
  if (a.shape.size() != 1 && a.shape.size() != 2)
    throw Error("token ids must have shape [N, L] or [L], the file has " + trellis::shape_text(a.shape), where,
                "one row of ids per prompt, padded as the CLIP tokenizer pads");
  single = a.shape.size() == 1;
  const int64_t rows = single ? 1 : a.shape[0], cols = a.shape.back();
  if (rows == 0 || cols == 0) throw Error("the file holds no ids (shape " + trellis::shape_text(a.shape) + ")", where);
  auto v = a.to_i64();
  std::vector<std::vector<int32_t>> ids(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++) {
      const int64_t id = v[size_t(r * cols + c)];
      if (id < 0 || id > INT32_MAX)
        throw Error("id " + std::to_string(id) + " at row " + std::to_string(r) + ", position " + std::to_string(c) + " is not a token id", where);
      ids[size_t(r)].push_back(int32_t(id));
    }
  return ids;
}

}  // namespace

void add_encode_text_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("encode-text", "TRELLIS text conditioning: prompts -> CLIP text encoder last_hidden_state (.npy)");
  struct Opts {
    GpuOptions gpu;
    std::string stage, tokens_file, out;
    std::vector<std::string> prompts;
    bool print_ids = false;
  };
  auto o = std::make_shared<Opts>();
  o->gpu.add_to(*cmd);
  cmd->add_option("--stage", o->stage, "the textEncoder stage directory (`ember pack trellis --stage text-encoder`)")->required();
  auto* prompt = cmd->add_option("--prompt", o->prompts, "a prompt (repeatable: one output row each); \"\" is TRELLIS's negative context");
  auto* tokens = cmd->add_option("--tokens-file", o->tokens_file, "CLIP token ids instead of prompts, .npy [N, 77] or [77] int32/int64");
  prompt->excludes(tokens);
  cmd->add_flag("--print-ids", o->print_ids, "print each prompt's token ids on stderr");
  cmd->add_option("--out", o->out, "output .npy f32: [N, 77, 768], or [77, 768] for one prompt or a [77] ids file")->required();
  cmd->callback([o] {
    if (o->prompts.empty() == o->tokens_file.empty())
      throw Error("give --prompt TEXT (one or more) or --tokens-file IDS.npy", "ember encode-text");
    check_output_path(o->out, "--out");
    bool single = o->prompts.size() == 1;
    std::vector<std::vector<int32_t>> ids;
    if (!o->tokens_file.empty()) ids = read_ids(o->tokens_file, single);  // checked before the GPU is touched
    gpu::Device device = gpu::Device::open(o->gpu.device);
    trellis::TextEncoder encoder(device, o->stage);
    const int L = encoder.context_length();
    if (!o->tokens_file.empty()) {
      if (ids.front().size() != size_t(L))
        throw Error("rows of " + std::to_string(ids.front().size()) + " ids, the text encoder takes exactly " + std::to_string(L),
                    "--tokens-file " + o->tokens_file, "pad or truncate each prompt's ids to " + std::to_string(L) + " as the CLIP tokenizer does");
    } else {
      std::vector<bool> truncated;
      ids = encoder.tokenize(o->prompts, &truncated);
      for (size_t i = 0; i < ids.size(); i++) {
        if (truncated[i])
          std::fprintf(stderr, "ember: note: prompt %zu is longer than %d tokens and was truncated to fit, as TRELLIS's tokenizer call does\n",
                       i + 1, L);
        if (o->print_ids) {
          std::fprintf(stderr, "prompt %zu ids:", i + 1);
          for (int32_t id : ids[i]) std::fprintf(stderr, " %d", id);
          std::fprintf(stderr, "\n");
        }
      }
    }
    auto out = encoder.encode_ids(ids);
    std::vector<int64_t> shape{L, encoder.width()};
    if (!single) shape.insert(shape.begin(), int64_t(ids.size()));
    formats::write_npy_f32(o->out, shape, out);
    std::fprintf(stderr, "encode-text: wrote %s %s\n", o->out.c_str(), trellis::shape_text(shape).c_str());
  });
}

}  // namespace ember::cli
