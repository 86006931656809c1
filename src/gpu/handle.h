// Move-only owner of one Dawn object: releases it exactly once.
#pragma once

#include <utility>

namespace ember::gpu {

template <typename T, void (*Release)(T)>
class Handle {
 public:
  Handle() = default;
  explicit Handle(T raw) : raw_(raw) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&& o) noexcept : raw_(std::exchange(o.raw_, nullptr)) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      raw_ = std::exchange(o.raw_, nullptr);
    }
    return *this;
  }
  ~Handle() { reset(); }

  T get() const { return raw_; }
  explicit operator bool() const { return raw_ != nullptr; }
  void reset() {
    if (raw_) Release(raw_);
    raw_ = nullptr;
  }

 private:
  T raw_ = nullptr;
};

}  // namespace ember::gpu
