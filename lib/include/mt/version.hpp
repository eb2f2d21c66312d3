// libmt's version (CMakeLists.txt project version), e.g. for the tool_version
// field tools write into model metadata.
#pragma once

namespace mt {

inline constexpr const char* kVersion = "0.1.0";

}  // namespace mt
