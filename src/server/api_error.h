// Errors the server reports to a client, in OpenAI's shape:
//   {"error": {"message": "...", "type": "invalid_request_error", "param": "messages", "code": null}}
// Thrown by request parsing and admission; the HTTP layer turns them into a response.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace ember::server {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string message, std::string type = "invalid_request_error", std::optional<std::string> param = std::nullopt,
           std::optional<std::string> code = std::nullopt)
      : std::runtime_error(message), status_(status), type_(std::move(type)), param_(std::move(param)), code_(std::move(code)) {}

  int status() const { return status_; }
  nlohmann::json body() const;

  // Common cases.
  static ApiError bad_request(const std::string& message, const std::string& param, const std::string& code = "invalid_value");
  static ApiError busy(const std::string& message);  // 503 (queue full, shutting down)

 private:
  int status_;
  std::string type_;
  std::optional<std::string> param_, code_;
};

// The body of an error response for `status` with `message` (404, 405, 413, ...).
std::string error_body(const std::string& message, const std::string& type, const std::optional<std::string>& param = std::nullopt,
                       const std::optional<std::string>& code = std::nullopt);

}  // namespace ember::server
