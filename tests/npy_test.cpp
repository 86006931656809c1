// .npy reader/writer: header bytes against the format specification (version 1.0), round trips,
// numpy itself where it is installed, and the errors for what ember does not read.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "cli_util.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "formats/npy.h"
#include "formats/safetensors.h"
#include "numpy_util.h"

namespace fs = std::filesystem;
using namespace ember::formats;

namespace {

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("ember_npy_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ember::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Npy, HeaderBytesFollowVersion1Spec) {
  std::vector<int64_t> shape{2, 3};
  auto h = npy_header(NpyDType::F32, shape);
  // Magic string, then major 1, minor 0, then the little-endian u16 header length.
  ASSERT_GE(h.size(), 10u);
  EXPECT_EQ(h[0], 0x93);
  EXPECT_EQ(std::string(h.begin() + 1, h.begin() + 6), "NUMPY");
  EXPECT_EQ(h[6], 1);
  EXPECT_EQ(h[7], 0);
  size_t len = h[8] | (size_t{h[9]} << 8);
  EXPECT_EQ(h.size(), 10 + len);
  EXPECT_EQ(h.size() % 64, 0u) << "the data must start on a 64-byte boundary";
  EXPECT_EQ(h.back(), '\n');
  std::string dict(h.begin() + 10, h.end());
  EXPECT_EQ(dict.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 0), 0u) << dict;
  // Padding is spaces only.
  size_t close = dict.find('}');
  for (size_t i = close + 1; i + 1 < dict.size(); i++) EXPECT_EQ(dict[i], ' ');
  // A one-dimensional shape is a 1-tuple; a scalar the empty tuple.
  std::vector<int64_t> one{5};
  auto h1 = npy_header(NpyDType::F16, one);
  std::string d1(h1.begin() + 10, h1.end());
  EXPECT_NE(d1.find("'descr': '<f2'"), std::string::npos);
  EXPECT_NE(d1.find("'shape': (5,)"), std::string::npos);
  std::vector<int64_t> none;
  auto h0 = npy_header(NpyDType::F32, none);
  EXPECT_NE(std::string(h0.begin(), h0.end()).find("'shape': ()"), std::string::npos);
}

TEST(Npy, RoundTripF32AndF16AnyRank) {
  fs::path dir = temp_dir("roundtrip");
  std::vector<std::vector<int64_t>> shapes{{}, {7}, {3, 5}, {2, 3, 4}, {8, 2, 2, 3, 1}, {0, 4}};
  for (const auto& shape : shapes) {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    for (size_t i = 0; i < v.size(); i++) v[i] = 0.25f * static_cast<float>(i) - 3.0f;
    write_npy_f32(dir / "a.npy", shape, v);
    NpyArray a = read_npy(dir / "a.npy");
    EXPECT_EQ(a.dtype, NpyDType::F32);
    EXPECT_EQ(a.shape, shape);
    EXPECT_EQ(a.to_f32(), v);
    write_npy_f16(dir / "b.npy", shape, v);  // these values are exact in f16
    NpyArray b = read_npy(dir / "b.npy");
    EXPECT_EQ(b.dtype, NpyDType::F16);
    EXPECT_EQ(b.shape, shape);
    EXPECT_EQ(b.to_f32(), v);
  }
  fs::remove_all(dir);
}

TEST(Npy, ReadsVersion2Header) {
  std::string dict = "{'shape': (2,), 'fortran_order': False, 'descr': '<f4'}";
  while ((12 + dict.size() + 1) % 64) dict += ' ';
  dict += '\n';
  std::vector<uint8_t> file{0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0};
  uint32_t len = static_cast<uint32_t>(dict.size());
  for (int i = 0; i < 4; i++) file.push_back(static_cast<uint8_t>(len >> (8 * i)));
  file.insert(file.end(), dict.begin(), dict.end());
  float v[2] = {1.5f, -2.0f};
  file.insert(file.end(), reinterpret_cast<uint8_t*>(v), reinterpret_cast<uint8_t*>(v) + 8);
  NpyArray a = parse_npy(file, "v2.npy");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(a.to_f32(), (std::vector<float>{1.5f, -2.0f}));
}

TEST(Npy, ClearErrors) {
  auto make = [](const std::string& descr, const std::string& fortran, size_t data_bytes) {
    std::string dict = "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': (2, 2), }";
    while ((10 + dict.size() + 1) % 64) dict += ' ';
    dict += '\n';
    std::string f = std::string("\x93NUMPY\x01", 7) + '\0' + static_cast<char>(dict.size()) + '\0' + dict;
    f.append(data_bytes, '\0');
    return std::vector<uint8_t>(f.begin(), f.end());
  };
  EXPECT_NE(error_of([&] { parse_npy(make("<f8", "False", 32), "x.npy"); }).find("unsupported .npy dtype '<f8'"),
            std::string::npos);
  EXPECT_NE(error_of([&] { parse_npy(make(">f4", "False", 16), "x.npy"); }).find("'>f4'"), std::string::npos);
  EXPECT_NE(error_of([&] { parse_npy(make("<i2", "False", 8), "x.npy"); }).find("'<i2'"), std::string::npos);
  EXPECT_NE(error_of([&] { parse_npy(make(">i8", "False", 32), "x.npy"); }).find("'>i8'"), std::string::npos);
  EXPECT_NE(error_of([&] { parse_npy(make("<f4", "True", 16), "x.npy"); }).find("Fortran"), std::string::npos);
  std::string trunc = error_of([&] { parse_npy(make("<f4", "False", 12), "x.npy"); });
  EXPECT_NE(trunc.find("truncated"), std::string::npos) << trunc;
  EXPECT_NE(trunc.find("needs 16 bytes"), std::string::npos) << trunc;
  EXPECT_NE(error_of([&] { parse_npy(make("<f4", "Maybe", 16), "x.npy"); }).find("malformed .npy header"),
            std::string::npos);
  std::vector<uint8_t> junk{'P', 'K', 3, 4, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_NE(error_of([&] { parse_npy(junk, "x.npy"); }).find("not a .npy file"), std::string::npos);
  auto v3 = make("<f4", "False", 16);
  v3[6] = 3;
  EXPECT_NE(error_of([&] { parse_npy(v3, "x.npy"); }).find("version 3.0"), std::string::npos);
  // The writer refuses data that disagrees with the shape and leaves no file.
  fs::path dir = temp_dir("errors");
  std::vector<int64_t> shape{3};
  std::vector<float> two{1, 2};
  EXPECT_NE(error_of([&] { write_npy_f32(dir / "bad.npy", shape, two); }).find("needs 12"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "bad.npy"));
  fs::remove_all(dir);
}

TEST(Npy, NumpyLoadsWhatWeWriteAndWeReadWhatNumpyWrites) {
  std::string python = ember::test::numpy_python();
  if (python.empty()) GTEST_SKIP() << "python3 with numpy not installed";
  fs::path dir = temp_dir("numpy");
  std::vector<int64_t> shape{8, 16, 3};
  std::vector<float> v(8 * 16 * 3);
  for (size_t i = 0; i < v.size(); i++) v[i] = static_cast<float>(i % 97) * 0.5f - 7.0f;
  write_npy_f32(dir / "ours32.npy", shape, v);
  write_npy_f16(dir / "ours16.npy", shape, v);
  std::string script =
      "import numpy as np, sys\n"
      "d = sys.argv[1]\n"
      "a = np.load(d + '/ours32.npy'); b = np.load(d + '/ours16.npy')\n"
      "ref = (np.arange(8*16*3) % 97).astype(np.float32).reshape(8, 16, 3) * 0.5 - 7.0\n"
      "assert a.dtype == np.float32 and a.shape == (8, 16, 3) and (a == ref).all()\n"
      "assert b.dtype == np.float16 and b.shape == (8, 16, 3) and (b.astype(np.float32) == ref).all()\n"
      "np.save(d + '/theirs32.npy', ref[:, :5, :])\n"
      "np.save(d + '/theirs16.npy', ref.astype(np.float16))\n"
      "np.save(d + '/fortran.npy', np.asfortranarray(ref[:, :, 0]))\n"
      "np.save(d + '/f64.npy', ref.astype(np.float64))\n";
  ember::write_file_atomic(dir / "check.py", script);
  ASSERT_EQ(std::system((python + " " + (dir / "check.py").string() + " " + dir.string()).c_str()), 0);
  NpyArray t32 = read_npy(dir / "theirs32.npy");
  EXPECT_EQ(t32.shape, (std::vector<int64_t>{8, 5, 3}));
  auto f32 = t32.to_f32();
  for (int64_t a = 0; a < 8; a++)
    for (int64_t h = 0; h < 5; h++)
      for (int64_t c = 0; c < 3; c++) EXPECT_EQ(f32[(a * 5 + h) * 3 + c], v[(a * 16 + h) * 3 + c]);
  NpyArray t16 = read_npy(dir / "theirs16.npy");
  EXPECT_EQ(t16.dtype, NpyDType::F16);
  EXPECT_EQ(t16.to_f32(), v);
  EXPECT_NE(error_of([&] { read_npy(dir / "fortran.npy"); }).find("Fortran"), std::string::npos);
  EXPECT_NE(error_of([&] { read_npy(dir / "f64.npy"); }).find("'<f8'"), std::string::npos);
  fs::remove_all(dir);
}

TEST(Npy, IntegerArraysForTokenIds) {
  fs::path dir = temp_dir("ints");
  std::vector<int64_t> shape{4};
  std::vector<int32_t> i32{0, 7, -3, 2147483647};
  std::vector<int64_t> i64{1, int64_t{1} << 40, -5, 9};
  std::vector<uint32_t> u32{0, 1, 4000000000u, 65535};
  auto bytes = [](const auto& v) {
    return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(v[0]));
  };
  write_npy(dir / "i32.npy", NpyDType::I32, shape, bytes(i32));
  write_npy(dir / "i64.npy", NpyDType::I64, shape, bytes(i64));
  write_npy(dir / "u32.npy", NpyDType::U32, shape, bytes(u32));
  EXPECT_EQ(read_npy(dir / "i32.npy").to_i64(), (std::vector<int64_t>{0, 7, -3, 2147483647}));
  EXPECT_EQ(read_npy(dir / "i64.npy").to_i64(), i64);
  EXPECT_EQ(read_npy(dir / "u32.npy").to_i64(), (std::vector<int64_t>{0, 1, 4000000000ll, 65535}));
  EXPECT_EQ(read_npy(dir / "i64.npy").dtype, NpyDType::I64);
  // Integers where floats are expected and the other way round name the file and the dtype.
  std::string e = error_of([&] { read_npy(dir / "i32.npy").to_f32(); });
  EXPECT_NE(e.find("<i4"), std::string::npos) << e;
  EXPECT_NE(e.find("i32.npy"), std::string::npos) << e;
  write_npy_f32(dir / "f.npy", shape, std::vector<float>{1, 2, 3, 4});
  e = error_of([&] { read_npy(dir / "f.npy").to_i64(); });
  EXPECT_NE(e.find("<f4"), std::string::npos) << e;
  fs::remove_all(dir);
}

TEST(Npy, RowWriterStreamsRowsAndWritesTheHeaderAtTheEnd) {
  fs::path dir = temp_dir("rows");
  std::vector<float> v(3 * 5);
  for (size_t i = 0; i < v.size(); i++) v[i] = static_cast<float>(i) - 4.5f;
  {
    NpyRowWriter w(dir / "rows.npy", NpyDType::F32, {5});
    w.append_f32(std::span<const float>(v).first(10));  // two rows
    w.append_f32(std::span<const float>(v).subspan(10));
    EXPECT_EQ(w.rows(), 3);
    EXPECT_FALSE(fs::exists(dir / "rows.npy")) << "the file appears only at finish()";
    EXPECT_NE(error_of([&] { w.append_f32(std::span<const float>(v).first(3)); }).find("whole rows"), std::string::npos);
    w.finish();
  }
  std::string file = ember::read_file(dir / "rows.npy");
  size_t len = static_cast<uint8_t>(file[8]) | (size_t{static_cast<uint8_t>(file[9])} << 8);
  EXPECT_EQ((10 + len) % 64, 0u);
  EXPECT_EQ(file.size(), 10 + len + v.size() * 4);
  EXPECT_EQ(file.compare(10, 59, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 5), }"), 0) << file.substr(10, len);
  NpyArray a = read_npy(dir / "rows.npy");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(a.to_f32(), v);
  {
    NpyRowWriter abandoned(dir / "abandoned.npy", NpyDType::F32, {5});
    abandoned.append_f32(v);
  }
  size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) files++;
  EXPECT_EQ(files, 1u) << "an unfinished writer leaves no file and no temporary behind";
  fs::remove_all(dir);
}

TEST(Npy, NumpyLoadsStreamedRowsAndWritesIdsWeRead) {
  std::string python = ember::test::numpy_python();
  if (python.empty()) GTEST_SKIP() << "python3 with numpy not installed (scripts/setup.sh installs python3-numpy)";
  fs::path dir = temp_dir("numpy_rows");
  std::vector<float> v(7 * 3, 0.25f);
  NpyRowWriter w(dir / "rows.npy", NpyDType::F32, {3});
  w.append_f32(v);
  w.finish();
  EXPECT_EQ(ember::test::python_output(python, "import numpy as np; a = np.load('" + (dir / "rows.npy").string() +
                                                   "'); print(a.shape, a.dtype, float(a.sum()))"),
            "(7, 3) float32 5.25");
  std::string save = "import numpy as np; d = '" + dir.string() + "'; ids = [3, 0, 511, 42]; " +
                     "[np.save(d + '/' + t + '.npy', np.array(ids, dtype=t)) for t in ('int32', 'int64', 'uint32')]";
  ASSERT_EQ(ember::test::python_output(python, save), "");
  for (const char* t : {"int32", "int64", "uint32"})
    EXPECT_EQ(read_npy(dir / (std::string(t) + ".npy")).to_i64(), (std::vector<int64_t>{3, 0, 511, 42})) << t;
  fs::remove_all(dir);
}
