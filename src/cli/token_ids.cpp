#include "cli/token_ids.h"

#include "common/error.h"
#include "formats/npy.h"

namespace ember::cli {

std::vector<uint32_t> parse_token_list(const std::string& text) {
  std::vector<uint32_t> ids;
  if (text.find_first_not_of(' ') == std::string::npos) return ids;
  size_t item = 0, begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find(',', begin);
    if (end == std::string::npos) end = text.size();
    std::string s = text.substr(begin, end - begin);
    s.erase(0, s.find_first_not_of(' '));
    s.erase(s.find_last_not_of(' ') + 1);
    item++;
    size_t used = 0;
    unsigned long long v = 0;
    bool ok = !s.empty() && s[0] >= '0' && s[0] <= '9';
    try {
      if (ok) v = std::stoull(s, &used);
    } catch (const std::exception&) {
      ok = false;
    }
    if (!ok || used != s.size() || v > UINT32_MAX)
      throw Error("'" + s + "' (item " + std::to_string(item) + ") is not a token id", "--tokens",
                  "give non-negative integers separated by commas, e.g. --tokens 1,2,3");
    ids.push_back(static_cast<uint32_t>(v));
    begin = end + 1;
  }
  return ids;
}

std::vector<uint32_t> read_token_file(const std::string& path) {
  formats::NpyArray a = formats::read_npy(path);
  if (a.shape.size() != 1)
    throw Error("token ids must be a 1-D array, the file holds " + std::to_string(a.shape.size()) + " dimensions", path,
                "save a 1-D array, e.g. np.save(path, np.array(ids, dtype=np.int32))");
  std::vector<int64_t> values = a.to_i64();
  std::vector<uint32_t> ids(values.size());
  for (size_t i = 0; i < values.size(); i++) {
    if (values[i] < 0 || values[i] > UINT32_MAX)
      throw Error("token id " + std::to_string(values[i]) + " at index " + std::to_string(i) + " is outside the vocabulary", path,
                  "use ids of this model's tokenizer");
    ids[i] = static_cast<uint32_t>(values[i]);
  }
  return ids;
}

}  // namespace ember::cli
