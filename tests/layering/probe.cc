// A one-line program of a layer that includes PROBE_HEADER, built only by
// the layering.* tests (CMakeLists.txt): a header of a layer above must not
// be found, one of its own layer or below must.
#include PROBE_HEADER

int main() { return 0; }
