// Its expected message is in its second error, not in its first.
// expect: is not a member of
