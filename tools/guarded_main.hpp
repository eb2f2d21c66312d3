// Every tool's main runs inside guarded_main: an exception (out of memory, a
// thread the system refuses, a file error) ends the tool with exit code 1 and
// one line naming the tool and the cause, never with a signal.
#pragma once

namespace mt::cli {

// Runs body(argc, argv) and returns its exit code, or 1 after printing
// "TOOL: error: ..." to stderr if it throws. `memory_hint`, when given, says
// which options to lower after an allocation failure.
int guarded_main(const char* tool, int argc, char** argv, int (*body)(int, char**), const char* memory_hint = nullptr);

}  // namespace mt::cli
