#include "formats/llm_layout.h"

#include <algorithm>

namespace ember::formats {
namespace {

uint64_t align_up(uint64_t v) { return (v + kSectionAlign - 1) / kSectionAlign * kSectionAlign; }

class LayoutBuilder {
 public:
  void add(const std::string& name, uint64_t bytes, SectionKind kind, int64_t rows, int64_t cols) {
    cursor_ = align_up(cursor_);
    out_.sections.push_back({name, cursor_, bytes, kind, "", rows, cols});
    cursor_ += bytes;
  }
  void alias(const std::string& name, const std::string& of) {
    SectionSpec s = *out_.find(of);
    s.name = name;
    s.alias_of = of;
    out_.sections.push_back(s);
  }
  void matrix(const MatrixSpec& m) {
    add(m.name + ".quant", q4_quant_bytes(m.rows, m.cols), SectionKind::Quant, m.rows, m.cols);
    add(m.name + ".scales", q4_scale_bytes(m.rows, m.cols), SectionKind::Scales, m.rows, m.cols);
    if (m.asymmetric)
      add(m.name + ".zero_points", q4_zero_point_bytes(m.rows, m.cols), SectionKind::ZeroPoints, m.rows, m.cols);
  }
  void f32(const std::string& name, int64_t rows, int64_t cols) {
    add(name, static_cast<uint64_t>(rows * cols) * 4, SectionKind::F32, rows, cols);
  }
  LlmLayout finish() {
    out_.weight_bytes = align_up(cursor_);
    return std::move(out_);
  }

 private:
  LlmLayout out_;
  uint64_t cursor_ = 0;
};

}  // namespace

const char* section_kind_name(SectionKind k) {
  switch (k) {
    case SectionKind::Quant: return "quant";
    case SectionKind::Scales: return "scales";
    case SectionKind::ZeroPoints: return "zero_points";
    case SectionKind::KQuant: return "kquant";
    case SectionKind::KScales: return "kscales";
    case SectionKind::F32: return "f32";
  }
  return "?";
}

const SectionSpec* LlmLayout::find(const std::string& name) const {
  for (const auto& s : sections)
    if (s.name == name) return &s;
  return nullptr;
}

uint64_t q4_quant_bytes(int64_t rows, int64_t cols) { return static_cast<uint64_t>(rows * cols) / 2; }
uint64_t q4_scale_bytes(int64_t rows, int64_t cols) { return static_cast<uint64_t>(rows * (cols / 32)) * 4; }
uint64_t q4_zero_point_bytes(int64_t rows, int64_t cols) {
  uint64_t nibbles = static_cast<uint64_t>(rows * (cols / 32));
  return (nibbles + 7) / 8 * 4;
}

std::string layer_prefix(int layer) {
  std::string s = std::to_string(layer);
  s.insert(s.begin(), 'L');  // not "L" + ...: GCC 12 warns falsely (-Wrestrict) on that form
  s.push_back('.');
  return s;
}

std::vector<MatrixSpec> llm_matrices(const LlmShape& s) {
  std::vector<MatrixSpec> out;
  for (int i = 0; i < static_cast<int>(s.layer_types.size()); i++) {
    const std::string p = layer_prefix(i);
    if (s.layer_types[i] == LayerType::Conv) {
      out.push_back({p + "conv.in_proj", "conv_in_proj", 3 * s.hidden, s.hidden, i, false});
      out.push_back({p + "conv.out_proj", "conv_out_proj", s.hidden, s.hidden, i, false});
    } else {
      out.push_back({p + "attn.qkv", "attn_qkv", s.qkv_rows(), s.hidden, i, false});
      out.push_back({p + "attn.o_proj", "attn_o_proj", s.hidden, s.q_rows(), i, false});
    }
    out.push_back({p + "mlp.gate_up", "mlp_gate_up", 2 * s.ffn, s.hidden, i, false});
    out.push_back({p + "mlp.down", "mlp_down", s.hidden, s.ffn, i, false});
  }
  out.push_back({"head", "head", s.vocab, s.hidden, -1, true});
  return out;
}

LlmLayout llm_layout(const LlmShape& s, int64_t max_positions) {
  LayoutBuilder b;
  const int layers = static_cast<int>(s.layer_types.size());
  std::vector<MatrixSpec> mats = llm_matrices(s);
  for (const auto& m : mats) b.matrix(m);  // per layer its two matrices, gate_up, down; then head
  // The tied embedding reads the head's bytes: same offsets, listed after them as the seed does.
  b.alias("embed.quant", "head.quant");
  b.alias("embed.scales", "head.scales");
  b.alias("embed.zero_points", "head.zero_points");
  for (int i = 0; i < layers; i++) {
    const std::string p = layer_prefix(i);
    if (s.layer_types[i] == LayerType::Conv) {
      b.f32(p + "conv.in_proj.norm", 1, s.hidden);
      b.f32(p + "conv.core.taps", s.hidden, s.conv_cache);
    } else {
      b.f32(p + "attn.qkv.norm", 1, s.hidden);
      b.f32(p + "attn.qkv.q_norm", 1, s.head_dim);
      b.f32(p + "attn.qkv.k_norm", 1, s.head_dim);
    }
    b.f32(p + "mlp.gate_up.norm", 1, s.hidden);
  }
  b.f32("head.norm", 1, s.hidden);
  const int64_t half = s.head_dim / 2;
  const int64_t short_positions = std::min(kRopeShortPositions, max_positions);
  b.f32("rope.cos", short_positions, half);
  b.f32("rope.sin", short_positions, half);
  for (int i = 0; i < layers; i++) {
    const std::string p = layer_prefix(i) + "mlp.down.";
    // k-major: row = ffn index, 32-blocks along the hidden outputs.
    b.add(p + "kquant", q4_quant_bytes(s.ffn, s.hidden), SectionKind::KQuant, s.ffn, s.hidden);
    b.add(p + "kscales", q4_scale_bytes(s.ffn, s.hidden), SectionKind::KScales, s.ffn, s.hidden);
  }
  b.f32("rope.cos_ext", max_positions, half);
  b.f32("rope.sin_ext", max_positions, half);
  return b.finish();
}

}  // namespace ember::formats
