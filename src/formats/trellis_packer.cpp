#include "formats/trellis_packer.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <regex>

#include "common/atomic_file.h"
#include "common/error.h"
#include "formats/safetensors.h"
#include "formats/sha256.h"

namespace ember::formats {
namespace fs = std::filesystem;

namespace {

uint64_t align(uint64_t v) { return (v + kStagePackAlignment - 1) / kStagePackAlignment * kStagePackAlignment; }

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::string shard_name(size_t i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "stage-%03zu.bin", i);
  return buf;
}

}  // namespace

bool stage_tensor_is_quantized(const std::string& name, const std::vector<int64_t>& shape) {
  // Rank 2 (Linear) as in seed 004; a higher rank (Conv3d [out, in, k, k, k]) is the matrix
  // [out][in * k^3] in PyTorch's own flattening, the form a convolution's implicit GEMM reads.
  return (shape.size() == 2 && name == "pos_emb") || (shape.size() >= 2 && ends_with(name, ".weight"));
}

StageManifest plan_stage_pack(const std::map<std::string, std::vector<int64_t>>& shapes, const StagePackOptions& o) {
  StageManifest m;
  m.schema = kStagePackSchema;
  m.version = kStagePackVersion;
  m.stage = o.stage;
  m.upstream_revision = o.upstream_revision;
  if (shapes.empty()) throw Error("no tensors to pack", "plan_stage_pack");
  uint32_t shard = 0;
  uint64_t cursor = 0;  // always 256-aligned
  for (const auto& [name, shape] : shapes) {  // std::map: sorted by name
    StageTensor t;
    t.name = name;
    t.shape = shape;
    uint64_t data_bytes = 0, scale_bytes = 0;
    for (int64_t d : shape)
      if (d < 0) throw Error("negative dimension", "tensor '" + name + "'");
    if (stage_tensor_is_quantized(name, shape)) {
      t.encoding = "symmetric-quantized";
      t.bits = 8;
      t.group_size = o.group_size;
      t.output_tile = o.output_tile;
      t.rows = shape[0];
      t.columns = t.rows ? t.numel() / t.rows : 0;
      Int8TileLayout L = t.layout();
      t.padded_rows = L.padded_rows();
      t.padded_columns = L.padded_columns();
      data_bytes = L.data_bytes();
      scale_bytes = L.scale_bytes();
    } else {
      t.encoding = "raw";
      t.dtype = "f16";
      data_bytes = static_cast<uint64_t>(t.numel()) * 2;
    }
    uint64_t span = t.quantized() ? align(data_bytes) + scale_bytes : data_bytes;
    if (cursor > 0 && cursor + span > o.shard_limit) {
      m.shards.push_back({shard_name(shard), cursor, ""});
      shard++;
      cursor = 0;
    }
    t.data = {shard, cursor, data_bytes};
    cursor = align(cursor + data_bytes);
    if (t.quantized()) {
      t.scales = StageTensorRef{shard, cursor, scale_bytes};
      cursor = align(cursor + scale_bytes);
    }
    m.tensors[name] = std::move(t);
  }
  m.shards.push_back({shard_name(shard), cursor, ""});
  return m;
}

OutputKind stage_pack_output() {
  return {"stage pack", true, [](const fs::path& dir) {
            static const std::regex kShard(R"(stage-\d{3}\.bin)");
            bool manifest = false;
            for (const auto& e : fs::directory_iterator(dir)) {
              const std::string name = e.path().filename().string();
              if (name == kStageManifestFile) manifest = true;
              else if (!std::regex_match(name, kShard)) return false;
            }
            return manifest;
          }};
}

std::vector<TensorPackReport> write_stage_pack(const OutputTarget& out, const std::map<std::string, std::vector<int64_t>>& shapes,
                                               const std::function<std::vector<float>(const std::string&)>& load,
                                               const StagePackOptions& o) {
  OutputTarget dir = out;
  dir.kind = stage_pack_output();
  check_output(dir);
  StageManifest m = plan_stage_pack(shapes, o);
  std::vector<TensorPackReport> reports;
  write_output_directory(dir, [&](const fs::path& tmp) {
    std::vector<uint8_t> shard;  // the shard being filled; written when the next one starts
    uint32_t current = 0;
    auto flush = [&] {
      ShardInfo& info = m.shards[current];
      shard.resize(info.bytes, 0);
      info.sha256 = sha256_hex(shard);
      write_file_atomic(tmp / info.file, shard);
      shard.clear();
    };
    size_t index = 0;
    for (const auto& [name, t] : m.tensors) {
      if (o.progress) o.progress(index, m.tensors.size(), name);
      index++;
      if (t.data.shard != current) {
        flush();
        current = t.data.shard;
      }
      std::vector<float> src = load(name);
      if (static_cast<int64_t>(src.size()) != t.numel())
        throw Error("tensor has " + std::to_string(src.size()) + " values, its shape needs " + std::to_string(t.numel()),
                    "tensor '" + name + "'");
      uint64_t end = t.scales ? t.scales->offset + t.scales->bytes : t.data.offset + t.data.bytes;
      shard.resize(std::max<uint64_t>(shard.size(), end), 0);
      std::vector<float> back;
      if (t.quantized()) {
        Int8Tiles q = quantize_int8_tiles(src, t.layout(), name.c_str());
        std::memcpy(shard.data() + t.data.offset, q.data.data(), q.data.size());
        std::memcpy(shard.data() + t.scales->offset, q.scales.data(), q.scales.size() * 2);
        back = dequantize_int8_tiles({shard.data() + t.data.offset, t.data.bytes},
                                     {shard.data() + t.scales->offset, t.scales->bytes}, t.layout());
      } else {
        back.resize(src.size());
        for (size_t i = 0; i < src.size(); i++) {
          if (!std::isfinite(src[i]))
            throw Error("non-finite value at element " + std::to_string(i), "tensor '" + name + "'",
                        "the checkpoint is damaged; export it again");
          uint16_t h = f32_to_f16(src[i]);
          std::memcpy(shard.data() + t.data.offset + 2 * i, &h, 2);
          back[i] = f16_to_f32(h);
        }
      }
      TensorPackReport r{name, t.encoding};
      double num = 0, den = 0;
      for (size_t i = 0; i < src.size(); i++) {
        double d = static_cast<double>(back[i]) - src[i];
        num += d * d;
        den += static_cast<double>(src[i]) * src[i];
        r.max_abs = std::max(r.max_abs, std::fabs(d));
      }
      r.rel_l2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
      reports.push_back(r);
    }
    flush();
    for (const auto& [file, text] : o.side_files) {
      if (file.empty() || file.find('/') != std::string::npos || file == kStageManifestFile || file.rfind("stage-", 0) == 0)
        throw Error("bad side file name '" + file + "'", "write_stage_pack");
      write_file_atomic(tmp / file, text);
      m.files.push_back({file, text.size(), sha256_hex({reinterpret_cast<const uint8_t*>(text.data()), text.size()})});
    }
    write_file_atomic(tmp / kStageManifestFile, stage_manifest_json(m));
  });
  return reports;
}

}  // namespace ember::formats
