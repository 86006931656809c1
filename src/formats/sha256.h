// SHA-256 (OpenSSL EVP) as lowercase hex: the integrity check of stage-pack shards.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace ember::formats {

std::string sha256_hex(std::span<const uint8_t> bytes);

}  // namespace ember::formats
