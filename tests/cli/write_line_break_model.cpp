// Writes tests/line_break_model.hpp's model (every piece a line break) to
// argv[1], for test_line_breaks.sh.
#include <cstdio>

#include "line_break_model.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: write_line_break_model OUT.mtm\n");
    return 2;
  }
  const mt::Status written = mt::test::write_line_break_model(argv[1], 7);
  if (!written.ok()) {
    std::fprintf(stderr, "write_line_break_model: %s\n", written.message());
    return 1;
  }
  return 0;
}
