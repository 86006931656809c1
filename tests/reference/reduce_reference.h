// CPU reference for reductions: plain loops in double precision.
#pragma once

#include <cstdint>
#include <vector>

namespace ember::reference {

inline std::vector<float> row_sum(const std::vector<float>& x, uint32_t rows, uint32_t cols) {
  std::vector<float> out(rows);
  for (uint32_t r = 0; r < rows; r++) {
    double s = 0;
    for (uint32_t c = 0; c < cols; c++) s += x[size_t(r) * cols + c];
    out[r] = static_cast<float>(s);
  }
  return out;
}

}  // namespace ember::reference
