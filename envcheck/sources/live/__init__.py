"""This machine's facts, read without running third-party code: the checked interpreter's own answer (`_collector`,
run inside it), the native libraries, toolchain and NVML read in envcheck's process, and `collect`, which puts them
into one snapshot (or reads a saved one)."""
