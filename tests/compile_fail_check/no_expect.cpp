// A snippet must say what it expects.
