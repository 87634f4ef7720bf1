// One of its messages is only in a note of the error before its own, which is not its.
// expect: lib: long is not accepted
// expect: lib: long is too long
