// The source of lockstep_test_pch (tests/CMakeLists.txt): an object library
// whose only product is the precompiled header every test binary reuses.
