// Compile-time probe: the umbrella header alone, nothing called.
#include <mixprec/mixprec.hpp>

int main() { return 0; }
