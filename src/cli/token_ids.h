// Token ids given on the command line exactly as they are (`ember logits`, `ember generate
// --tokens-file`): no template, no BOS, for comparison with another implementation on the same ids.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ember::cli {

// "1,2,3" (--tokens); throws ember::Error naming the item that is not a token id.
std::vector<uint32_t> parse_token_list(const std::string& text);
// A 1-D .npy of int32, int64 or uint32 (--tokens-file); throws ember::Error on another shape or a
// negative id. Whether the ids fit a model is llm::check_token_ids's question.
std::vector<uint32_t> read_token_file(const std::string& path);

}  // namespace ember::cli
