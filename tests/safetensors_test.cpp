#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "formats/safetensors.h"

using namespace ember;
using namespace ember::formats;
namespace fs = std::filesystem;

namespace {
fs::path temp_path(const std::string& name) { return fs::temp_directory_path() / ("ember_st_" + name); }

std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}
}  // namespace

TEST(Safetensors, RoundTripF32F16BF16) {
  fs::path p = temp_path("roundtrip.safetensors");
  std::vector<float> a = {1.0f, -2.5f, 3.25f, 0.0f, 1e-3f, 65504.0f};
  std::vector<uint8_t> h(a.size() * 2), bf(a.size() * 2);
  for (size_t i = 0; i < a.size(); i++) {
    uint16_t x = f32_to_f16(a[i]), y = f32_to_bf16(a[i]);
    std::memcpy(&h[2 * i], &x, 2);
    std::memcpy(&bf[2 * i], &y, 2);
  }
  write_safetensors(p, {{"b.half", DType::F16, {2, 3}, h}, {"a.float", DType::F32, {6}, f32_bytes(a)}, {"c.bf", DType::BF16, {3, 2}, bf}},
                    {{"format", "pt"}});
  auto f = SafetensorsFile::open(p);
  EXPECT_EQ(f.tensors().size(), 3u);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  EXPECT_EQ(f.to_f32("a.float"), a);
  auto half = f.to_f32("b.half");
  for (size_t i = 0; i < a.size(); i++) EXPECT_NEAR(half[i], a[i], std::abs(a[i]) * 1e-3 + 1e-7);
  auto b16 = f.to_f32("c.bf");
  for (size_t i = 0; i < a.size(); i++) EXPECT_NEAR(b16[i], a[i], std::abs(a[i]) * 1e-2 + 1e-7);
  EXPECT_EQ(f.info("b.half").shape, (std::vector<int64_t>{2, 3}));
  EXPECT_THROW(f.info("missing"), Error);
  fs::remove(p);
}

TEST(Safetensors, F16ConversionIsExactOnRepresentableValues) {
  for (uint32_t h = 0; h < 0x10000; h++) {
    if (((h >> 10) & 0x1f) == 0x1f) continue;  // inf/nan
    float f = f16_to_f32(static_cast<uint16_t>(h));
    EXPECT_EQ(f32_to_f16(f), h) << h;
  }
}

TEST(Safetensors, HeaderThatLiesAboutSizesIsRejected) {
  fs::path p = temp_path("lies.safetensors");
  std::string header = R"({"w":{"dtype":"F32","shape":[4,4],"data_offsets":[0,64]}})";
  uint64_t n = header.size();
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(&n), 8);
  out << header;
  out << std::string(32, '\0');  // only half the promised data
  out.close();
  try {
    SafetensorsFile::open(p);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'w'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("outside the data section"), std::string::npos) << e.what();
  }
  fs::remove(p);
}

TEST(Safetensors, WrongByteCountAndMalformedJsonAreRejected) {
  auto write = [](const fs::path& p, const std::string& header, size_t data) {
    uint64_t n = header.size();
    std::ofstream out(p, std::ios::binary);
    out.write(reinterpret_cast<const char*>(&n), 8);
    out << header << std::string(data, '\0');
  };
  fs::path p = temp_path("bad.safetensors");
  write(p, R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,8]}})", 8);
  EXPECT_THROW(SafetensorsFile::open(p), Error);
  write(p, "{\"w\":\n{\"dtype\": }", 0);
  try {
    SafetensorsFile::open(p);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
  std::ofstream(p, std::ios::binary) << "abc";
  EXPECT_THROW(SafetensorsFile::open(p), Error);
  fs::remove(p);
}
