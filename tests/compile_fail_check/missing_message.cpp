// One of its messages is not in the log.
// expect: lib: long is not accepted
// expect: lib: long is too long
