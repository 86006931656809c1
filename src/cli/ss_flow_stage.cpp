#include "cli/ss_flow_stage.h"

#include "common/error.h"

#if __has_include("formats/trellis_pack.h")
#include "formats/trellis_pack.h"
#define EMBER_HAVE_STAGE_PACK 1
#endif

namespace ember::cli {

#if EMBER_HAVE_STAGE_PACK
namespace {

// A StagePack seen as a TensorSource; the pack keeps the shard memory alive.
class PackTensors : public trellis::TensorSource {
 public:
  explicit PackTensors(const std::string& dir) : pack_(formats::StagePack::open(dir, true)) {}
  bool has(const std::string& name) const override { return pack_.has(name); }
  trellis::TensorView get(const std::string& name) const override {
    const auto& t = pack_.tensor(name);
    trellis::TensorView v;
    v.name = name;
    v.shape = t.shape;
    v.quantized = t.encoding == "symmetric-quantized";
    if (v.quantized && (t.bits != 8 || t.group_size != 64 || t.output_tile != 16))
      throw Error("unsupported quantization (bits " + std::to_string(t.bits) + ", group " + std::to_string(t.group_size) +
                      ", tile " + std::to_string(t.output_tile) + "): ember reads int8, group 64, tile 16",
                  "tensor " + name);
    v.rows = t.rows;
    v.columns = t.columns;
    v.padded_rows = t.padded_rows;
    v.padded_columns = t.padded_columns;
    v.data = pack_.data(t);
    if (v.quantized) v.scales = pack_.scales(t);
    return v;
  }
  formats::StagePack pack_;
};

}  // namespace
#endif

std::unique_ptr<trellis::TensorSource> open_ss_flow_stage(const std::string& dir) {
#if EMBER_HAVE_STAGE_PACK
  auto p = std::make_unique<PackTensors>(dir);
  if (p->pack_.manifest().stage != "sparseStructureFlow")
    throw Error("this stage is '" + p->pack_.manifest().stage + "', not sparseStructureFlow", dir + "/manifest.json",
                "point --stage at the ss-flow stage of a TRELLIS pack");
  return p;
#else
  throw Error("this build has no stage pack reader yet", dir, "use --synthetic (random weights of the seed shape)");
#endif
}

}  // namespace ember::cli
