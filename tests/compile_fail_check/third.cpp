// No error of the log is its own.
// expect: lib: int is not accepted
