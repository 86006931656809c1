// ember's version, written in this one place (`ember --version`, `ember version`, /props).
#pragma once

namespace ember {

inline constexpr const char* kEmberVersion = "0.1.0";

}  // namespace ember
