// Its error is in a library header, after the context that names this line.
// expect: lib: int is not accepted
// expect: 'false' evaluates to false
