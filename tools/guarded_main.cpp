#include "guarded_main.hpp"

#include <cstdio>
#include <exception>
#include <new>
#include <system_error>

namespace mt::cli {

int guarded_main(const char* tool, int argc, char** argv, int (*body)(int, char**), const char* memory_hint) {
  try {
    return body(argc, argv);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%s: error: out of memory (%s)\n", tool,
                 memory_hint != nullptr ? memory_hint : "a smaller input or model, or a higher memory limit");
  } catch (const std::system_error& e) {
    std::fprintf(stderr, "%s: error: %s (%s)\n", tool, e.what(), e.code().message().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", tool, e.what());
  } catch (...) {
    std::fprintf(stderr, "%s: error: unknown exception\n", tool);
  }
  return 1;
}

}  // namespace mt::cli
