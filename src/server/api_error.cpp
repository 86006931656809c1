#include "server/api_error.h"

namespace ember::server {
namespace {

nlohmann::json opt(const std::optional<std::string>& s) { return s ? nlohmann::json(*s) : nlohmann::json(nullptr); }

}  // namespace

nlohmann::json ApiError::body() const {
  return {{"error", {{"message", what()}, {"type", type_}, {"param", opt(param_)}, {"code", opt(code_)}}}};
}

ApiError ApiError::bad_request(const std::string& message, const std::string& param, const std::string& code) {
  return ApiError(400, message, "invalid_request_error", param, code);
}

ApiError ApiError::busy(const std::string& message) { return ApiError(503, message, "server_error", std::nullopt, "server_busy"); }

std::string error_body(const std::string& message, const std::string& type, const std::optional<std::string>& param,
                       const std::optional<std::string>& code) {
  nlohmann::json j = {{"error", {{"message", message}, {"type", type}, {"param", opt(param)}, {"code", opt(code)}}}};
  // Replace invalid UTF-8 a client put into a field name or value instead of throwing.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace ember::server
