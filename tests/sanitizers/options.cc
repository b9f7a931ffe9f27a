// tests/sanitizers/options.cc: the sanitizers' default run-time options,
// linked into every program of a sanitizer build (EDGESYNC_SANITIZE, see the
// top-level CMakeLists.txt) and into nothing else.
//
// Contract: the runtimes call these hooks once at start-up, before main;
// options given in ASAN_OPTIONS, UBSAN_OPTIONS, LSAN_OPTIONS or TSAN_OPTIONS
// are parsed after them and win. Compiled in rather than exported by the
// Makefile so that the processes the integration tests start (edgesync, the
// uplink children, the load generator) and a binary run by hand behave the
// same as under ctest.
//
// Thread safety: the strings are constants.

#ifndef EDGESYNC_SANITIZER_DIR
#error "EDGESYNC_SANITIZER_DIR must name tests/sanitizers"
#endif

extern "C" {

// A report is a failure: stop at the first one (the process exits non-zero
// and its test fails) rather than letting the run carry on from a corrupted
// state. Leak checking stays on at exit. The lease clock test runs a real
// process under faketime, whose LD_PRELOAD puts libfaketime ahead of the
// ASan runtime; it only wraps the clock calls, so the link-order check (which
// would refuse to start the process) is off.
const char* __asan_default_options() {
  return "halt_on_error=1:detect_leaks=1:print_suppressions=0:verify_asan_link_order=0";
}

// -fno-sanitize-recover=undefined already aborts; the stack says where.
const char* __ubsan_default_options() { return "halt_on_error=1:print_stacktrace=1"; }

// lsan.supp names what leaks inside Paho C, with the reason for each entry.
const char* __lsan_default_options() {
  return "suppressions=" EDGESYNC_SANITIZER_DIR "/lsan.supp:print_suppressions=0";
}

// tsan.supp covers only the uninstrumented Paho libraries.
const char* __tsan_default_options() {
  return "halt_on_error=1:second_deadlock_stack=1:suppressions=" EDGESYNC_SANITIZER_DIR "/tsan.supp";
}

}  // extern "C"
